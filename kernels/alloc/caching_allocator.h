// A caching device-memory allocator in the style of PyTorch's CUDA caching allocator: requests are
// rounded to size classes, freed blocks stay cached in per-stream bins and are handed out again
// to the same stream (stream order makes that safe without synchronising), and the backing
// allocator (cudaMalloc in the GPU arm, a fake in the tests) is called only on a miss. The policy
// is plain C++ and needs no GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace pairbench::kernels::alloc {

// Where blocks come from and go back to. allocate throws std::bad_alloc when out of memory.
class BackingAllocator {
 public:
  virtual ~BackingAllocator() = default;
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void deallocate(void* p, std::size_t bytes) = 0;
};

using StreamId = std::uintptr_t;  // e.g. a cudaStream_t cast to an integer

struct CachingStats {
  std::int64_t requests = 0;            // allocate calls
  std::int64_t cache_hits = 0;          // served from a bin
  std::int64_t backing_allocs = 0;      // BackingAllocator::allocate calls that succeeded
  std::int64_t backing_frees = 0;       // BackingAllocator::deallocate calls
  std::int64_t oom_retries = 0;         // backing allocations retried after emptying the cache
  std::size_t bytes_in_use = 0;         // size-class bytes handed out and not yet freed
  std::size_t bytes_cached = 0;         // size-class bytes sitting in bins
  std::size_t peak_bytes_reserved = 0;  // max of in_use + cached: what the backing holds
};

class CachingAllocator {
 public:
  // Requests of at most kMinBlockBytes get a kMinBlockBytes block; above it, four classes per
  // power of two (x, 1.25x, 1.5x, 1.75x): at most 25 % rounding waste.
  static constexpr std::size_t kMinBlockBytes = 512;
  static std::size_t size_class(std::size_t bytes);

  explicit CachingAllocator(BackingAllocator& backing) : backing_(backing) {}
  ~CachingAllocator();  // returns cached blocks to the backing; blocks still in use are leaked to it
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `bytes` for use on `stream`: a cached block of the same size class freed on
  // the same stream if there is one, else a fresh one from the backing; on std::bad_alloc from the
  // backing, every cached block is released and the request retried once. bytes == 0 -> nullptr.
  void* allocate(std::size_t bytes, StreamId stream);
  // Caches the block in the bin of the stream it was allocated for. Throws std::invalid_argument
  // for a pointer that is not live (never allocated here, or already freed). nullptr is ignored.
  void deallocate(void* p);
  // Returns every cached block to the backing (like torch.cuda.empty_cache()).
  void release_cached();

  CachingStats stats() const;
  // How many cached blocks the bin of (stream, size_class(bytes)) holds.
  std::size_t cached_blocks(StreamId stream, std::size_t bytes) const;

 private:
  struct Block {
    std::size_t bytes;  // size class
    StreamId stream;
  };
  using BinKey = std::pair<StreamId, std::size_t>;
  void release_cached_locked();

  BackingAllocator& backing_;
  mutable std::mutex mutex_;
  std::unordered_map<void*, Block> live_;
  std::map<BinKey, std::vector<void*>> bins_;
  CachingStats stats_;
};

}  // namespace pairbench::kernels::alloc
