// Size classes, per-stream bins and the empty-cache-and-retry path of the caching allocator.
#include "kernels/alloc/caching_allocator.h"

#include <algorithm>
#include <bit>
#include <new>
#include <stdexcept>

namespace pairbench::kernels::alloc {

std::size_t CachingAllocator::size_class(std::size_t bytes) {
  if (bytes <= kMinBlockBytes) return kMinBlockBytes;
  const std::size_t octave = std::bit_floor(bytes);  // 2^k <= bytes
  const std::size_t step = octave / 4;               // classes 2^k + i * 2^k/4, i = 0..4
  return (bytes + step - 1) / step * step;
}

CachingAllocator::~CachingAllocator() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_cached_locked();
}

void* CachingAllocator::allocate(std::size_t bytes, StreamId stream) {
  if (bytes == 0) return nullptr;
  const std::size_t cls = size_class(bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.requests;
  void* p = nullptr;
  if (auto bin = bins_.find({stream, cls}); bin != bins_.end() && !bin->second.empty()) {
    p = bin->second.back();
    bin->second.pop_back();
    stats_.bytes_cached -= cls;
    ++stats_.cache_hits;
  } else {
    try {
      p = backing_.allocate(cls);
    } catch (const std::bad_alloc&) {
      if (stats_.bytes_cached == 0) throw;
      ++stats_.oom_retries;
      release_cached_locked();
      p = backing_.allocate(cls);  // a second std::bad_alloc goes to the caller
    }
    ++stats_.backing_allocs;
  }
  live_.emplace(p, Block{cls, stream});
  stats_.bytes_in_use += cls;
  stats_.peak_bytes_reserved = std::max(stats_.peak_bytes_reserved, stats_.bytes_in_use + stats_.bytes_cached);
  return p;
}

void CachingAllocator::deallocate(void* p) {
  if (p == nullptr) return;
  std::lock_guard<std::mutex> lock(mutex_);
  const auto it = live_.find(p);
  if (it == live_.end()) throw std::invalid_argument("CachingAllocator::deallocate: pointer is not live");
  const Block block = it->second;
  live_.erase(it);
  bins_[{block.stream, block.bytes}].push_back(p);
  stats_.bytes_in_use -= block.bytes;
  stats_.bytes_cached += block.bytes;
}

void CachingAllocator::release_cached() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_cached_locked();
}

void CachingAllocator::release_cached_locked() {
  for (auto& [key, blocks] : bins_) {
    for (void* p : blocks) {
      backing_.deallocate(p, key.second);
      ++stats_.backing_frees;
    }
  }
  bins_.clear();
  stats_.bytes_cached = 0;
}

CachingStats CachingAllocator::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

std::size_t CachingAllocator::cached_blocks(StreamId stream, std::size_t bytes) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const auto bin = bins_.find({stream, size_class(bytes)});
  return bin == bins_.end() ? 0 : bin->second.size();
}

}  // namespace pairbench::kernels::alloc
