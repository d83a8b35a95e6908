// Set-up memory: populated in one call, kept for the next benchmark of a shared process.
#include "kernels/common/pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <new>
#include <string>
#include <utility>
#include <vector>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; an older kernel answers EINVAL and the loop runs instead
#endif

namespace pairbench::kernels {
namespace {

std::uintptr_t page_size() { return static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE)); }

std::atomic<bool> g_reused{false};

// Kept mappings, at most kKeptBytes in all; the rest are unmapped as usual.
constexpr std::size_t kKeptBytes = std::size_t{2} << 30;
struct Kept {
  std::mutex mutex;
  std::vector<std::pair<void*, std::size_t>> mappings;
  std::size_t bytes = 0;
};
Kept& kept() {
  static Kept k;
  return k;
}

}  // namespace

void populate_pages(void* p, std::size_t bytes) {
  if (p == nullptr || bytes == 0) return;
  const std::uintptr_t page = page_size();
  const auto begin = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t end = begin + bytes;
  const std::uintptr_t inner_begin = (begin + page - 1) / page * page;
  const std::uintptr_t inner_end = end / page * page;
  bool populated = false;
  if (inner_end > inner_begin) {
    populated = madvise(reinterpret_cast<void*>(inner_begin), inner_end - inner_begin, MADV_POPULATE_WRITE) == 0;
  }
  auto touch = [](std::uintptr_t a) {
    volatile unsigned char* b = reinterpret_cast<unsigned char*>(a);
    *b = *b;
  };
  if (!populated) {
    for (std::uintptr_t a = begin; a < end; a = (a / page + 1) * page) touch(a);
    return;
  }
  if (begin < inner_begin) touch(begin);
  if (inner_end < end) touch(inner_end);
}

bool single_numa_node() {
  std::ifstream in("/sys/devices/system/node/online");
  if (!in) return !std::filesystem::exists("/sys/devices/system/node");
  std::string online;
  in >> online;
  return online == "0";
}

void reuse_page_buffers() { g_reused = true; }
bool page_buffers_reused() { return g_reused; }

void* take_kept_mapping(std::size_t mapped) {
  if (!g_reused) return nullptr;
  Kept& k = kept();
  std::lock_guard lock(k.mutex);
  for (auto it = k.mappings.begin(); it != k.mappings.end(); ++it) {
    if (it->second != mapped) continue;
    void* m = it->first;
    k.bytes -= mapped;
    k.mappings.erase(it);
    return m;
  }
  return nullptr;
}

bool keep_mapping(void* mapping, std::size_t mapped) {
  if (!g_reused) return false;
  Kept& k = kept();
  std::lock_guard lock(k.mutex);
  if (k.bytes + mapped > kKeptBytes) return false;
  k.mappings.emplace_back(mapping, mapped);
  k.bytes += mapped;
  return true;
}

PageBuffer::PageBuffer(std::size_t bytes, std::size_t offset) : offset_(offset), bytes_(bytes) {
  if (bytes == 0) return;
  const std::uintptr_t page = page_size();
  mapped_ = (offset + bytes + page - 1) / page * page;
  if (void* m = take_kept_mapping(mapped_)) {
    mapping_ = static_cast<std::byte*>(m);
    return;
  }
  void* m = mmap(nullptr, mapped_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  mapping_ = static_cast<std::byte*>(m);
  populate_pages(mapping_, mapped_);
}

PageBuffer::~PageBuffer() { release(); }

PageBuffer::PageBuffer(PageBuffer&& other) noexcept
    : mapping_(std::exchange(other.mapping_, nullptr)),
      mapped_(std::exchange(other.mapped_, 0)),
      offset_(std::exchange(other.offset_, 0)),
      bytes_(std::exchange(other.bytes_, 0)) {}

PageBuffer& PageBuffer::operator=(PageBuffer&& other) noexcept {
  if (this != &other) {
    release();
    mapping_ = std::exchange(other.mapping_, nullptr);
    mapped_ = std::exchange(other.mapped_, 0);
    offset_ = std::exchange(other.offset_, 0);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void PageBuffer::release() noexcept {
  if (mapping_ && !keep_mapping(mapping_, mapped_)) munmap(mapping_, mapped_);
  mapping_ = nullptr;
  mapped_ = offset_ = bytes_ = 0;
}

}  // namespace pairbench::kernels
