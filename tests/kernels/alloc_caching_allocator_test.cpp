// The caching allocator's policy against a fake backing allocator, no GPU: size classes, no block
// handed out twice while live, reuse, per-stream bins, empty-cache-and-retry on out of memory, and
// a training-step trace reaching a steady state with no backing calls.
#include "kernels/alloc/caching_allocator.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <set>

#include "kernels/alloc/tensor_trace.h"

namespace pairbench::kernels::alloc {
namespace {

// Hands out distinct fake addresses (never dereferenced) from a bump pointer, up to a capacity.
class FakeBacking : public BackingAllocator {
 public:
  explicit FakeBacking(std::size_t capacity_bytes = ~std::size_t{0}) : capacity_(capacity_bytes) {}
  void* allocate(std::size_t bytes) override {
    if (bytes > capacity_ - live_bytes_) throw std::bad_alloc();
    const std::uintptr_t p = next_;
    next_ += bytes + 4096;  // a gap, so an off-by-one size shows up as an overlap
    live_.emplace(p, bytes);
    live_bytes_ += bytes;
    ++allocs_;
    return reinterpret_cast<void*>(p);
  }
  void deallocate(void* p, std::size_t bytes) override {
    const auto it = live_.find(reinterpret_cast<std::uintptr_t>(p));
    ASSERT_NE(it, live_.end()) << "backing freed a pointer it does not hold";
    ASSERT_EQ(it->second, bytes) << "backing freed with a different size";
    live_bytes_ -= bytes;
    live_.erase(it);
    ++frees_;
    freed_.push_back(p);
  }
  std::size_t live_bytes() const { return live_bytes_; }
  std::size_t live_blocks() const { return live_.size(); }
  std::size_t block_bytes(void* p) const { return live_.at(reinterpret_cast<std::uintptr_t>(p)); }
  int allocs() const { return allocs_; }
  int frees() const { return frees_; }
  std::vector<void*> take_freed() { return std::exchange(freed_, {}); }

 private:
  std::size_t capacity_;
  std::uintptr_t next_ = 0x10000000;
  std::map<std::uintptr_t, std::size_t> live_;
  std::size_t live_bytes_ = 0;
  int allocs_ = 0, frees_ = 0;
  std::vector<void*> freed_;
};

std::uint64_t fresh_seed() { return std::random_device{}(); }

TEST(CachingAllocator, SizeClassesCoverTheRequestWithAtMostAQuarterWaste) {
  std::mt19937_64 rng(fresh_seed());
  std::vector<std::size_t> sizes = {
      1, 511, 512, 513, 640, 641, 1023, 1024, 1025, std::size_t{64} << 20, (std::size_t{64} << 20) + 1};
  for (int i = 0; i < 10000; ++i) sizes.push_back(1 + rng() % (std::size_t{1} << 30));
  for (std::size_t b : sizes) {
    const std::size_t c = CachingAllocator::size_class(b);
    ASSERT_GE(c, b);
    ASSERT_GE(c, CachingAllocator::kMinBlockBytes);
    if (b > CachingAllocator::kMinBlockBytes) {
      ASSERT_LE(c, b + b / 4) << b;
    }
    ASSERT_EQ(CachingAllocator::size_class(c), c) << b;                      // classes are fixed points
    ASSERT_LE(CachingAllocator::size_class(b - 1 > 0 ? b - 1 : 1), c) << b;  // monotonic
  }
}

TEST(CachingAllocator, ZeroBytesAndNullptr) {
  FakeBacking backing;
  CachingAllocator cache(backing);
  EXPECT_EQ(cache.allocate(0, 0), nullptr);
  cache.deallocate(nullptr);
  EXPECT_EQ(backing.allocs(), 0);
}

TEST(CachingAllocator, ReusesAFreedBlockOnTheSameStream) {
  FakeBacking backing;
  CachingAllocator cache(backing);
  void* first = cache.allocate(1000, 7);
  cache.deallocate(first);
  for (int i = 0; i < 100; ++i) {
    void* p = cache.allocate(900 + i, 7);  // same size class as 1000 (896 < b <= 1024)
    ASSERT_EQ(p, first);
    cache.deallocate(p);
  }
  const CachingStats s = cache.stats();
  EXPECT_EQ(s.backing_allocs, 1);
  EXPECT_EQ(s.cache_hits, 100);
  EXPECT_EQ(s.requests, 101);
  EXPECT_EQ(backing.allocs(), 1);
}

TEST(CachingAllocator, KeepsStreamsApart) {
  FakeBacking backing;
  CachingAllocator cache(backing);
  void* a = cache.allocate(1 << 20, /*stream=*/1);
  cache.deallocate(a);
  EXPECT_EQ(cache.cached_blocks(1, 1 << 20), 1u);
  void* b = cache.allocate(1 << 20, /*stream=*/2);
  EXPECT_NE(b, a) << "a block freed on stream 1 was handed to stream 2 without synchronisation";
  EXPECT_EQ(cache.allocate(1 << 20, 1), a);
  EXPECT_EQ(backing.allocs(), 2);
}

TEST(CachingAllocator, RejectsDoubleFreeAndForeignPointers) {
  FakeBacking backing;
  CachingAllocator cache(backing);
  void* p = cache.allocate(4096, 0);
  cache.deallocate(p);
  EXPECT_THROW(cache.deallocate(p), std::invalid_argument);
  int local = 0;
  EXPECT_THROW(cache.deallocate(&local), std::invalid_argument);
}

TEST(CachingAllocator, EmptiesItsCacheAndRetriesWhenTheBackingIsFull) {
  FakeBacking backing(/*capacity_bytes=*/8 << 20);
  CachingAllocator cache(backing);
  std::vector<void*> blocks;
  for (int i = 0; i < 4; ++i) blocks.push_back(cache.allocate(2 << 20, 1));
  for (void* p : blocks) cache.deallocate(p);  // 8 MiB cached on stream 1, backing full
  void* big = cache.allocate(6 << 20, 2);
  EXPECT_NE(big, nullptr);
  const CachingStats s = cache.stats();
  EXPECT_EQ(s.oom_retries, 1);
  EXPECT_EQ(s.bytes_cached, 0u);
  EXPECT_EQ(backing.frees(), 4);
  // Nothing cached any more: a request that cannot fit reaches the caller.
  EXPECT_THROW(cache.allocate(4 << 20, 2), std::bad_alloc);
}

TEST(CachingAllocator, ReleaseAndDestructionReturnEveryCachedBlock) {
  FakeBacking backing;
  {
    CachingAllocator cache(backing);
    void* kept = cache.allocate(3000, 0);
    for (int i = 0; i < 10; ++i) cache.deallocate(cache.allocate(std::size_t{1} << (10 + i), i % 3));
    cache.release_cached();
    EXPECT_EQ(backing.live_blocks(), 1u);
    EXPECT_EQ(backing.live_bytes(), cache.stats().bytes_in_use);
    for (int i = 0; i < 5; ++i) cache.deallocate(cache.allocate(std::size_t{1} << (12 + i), 0));
    cache.deallocate(kept);
  }
  EXPECT_EQ(backing.live_blocks(), 0u);
}

// Fresh random traces: every block handed out is at least as large as asked, overlaps no live
// block, and was cached (if it was reused) on the stream it is handed to.
TEST(CachingAllocator, RandomTracesNeverHandOutALiveBlockOrCrossStreams) {
  for (int trial = 0; trial < 20; ++trial) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::mt19937_64 rng(seed);
    FakeBacking backing(/*capacity_bytes=*/std::size_t{64} << 20);
    CachingAllocator cache(backing);
    std::map<std::uintptr_t, std::size_t> live;  // start -> requested bytes
    std::map<void*, StreamId> owner;             // block -> the stream whose bin holds or used it
    std::vector<std::pair<void*, StreamId>> handles;
    const std::size_t sizes[] = {100, 512, 700, 4096, 5000, 1 << 16, 3 << 18, 1 << 20};
    for (int op = 0; op < 5000; ++op) {
      for (void* p : backing.take_freed()) owner.erase(p);
      const bool do_free = !handles.empty() && (rng() % 100 < 45 || handles.size() > 64);
      if (do_free) {
        const std::size_t i = rng() % handles.size();
        live.erase(reinterpret_cast<std::uintptr_t>(handles[i].first));
        cache.deallocate(handles[i].first);
        handles[i] = handles.back();
        handles.pop_back();
        continue;
      }
      const std::size_t bytes = sizes[rng() % std::size(sizes)] + rng() % 64;
      const StreamId stream = rng() % 3;
      void* p = nullptr;
      try {
        p = cache.allocate(bytes, stream);
      } catch (const std::bad_alloc&) {
        continue;  // the fake device is full of live blocks: allowed
      }
      ASSERT_NE(p, nullptr);
      ASSERT_GE(backing.block_bytes(p), bytes);
      const auto start = reinterpret_cast<std::uintptr_t>(p);
      const auto next = live.lower_bound(start);
      ASSERT_TRUE(next == live.end() || next->first >= start + bytes) << "overlaps a live block";
      ASSERT_TRUE(next == live.begin() || std::prev(next)->first + std::prev(next)->second <= start)
          << "overlaps a live block";
      live.emplace(start, bytes);
      const auto [it, fresh] = owner.emplace(p, stream);
      ASSERT_TRUE(fresh || it->second == stream)
          << "a block cached on stream " << it->second << " was handed to stream " << stream;
      handles.emplace_back(p, stream);
    }
    const CachingStats s = cache.stats();
    EXPECT_GT(s.cache_hits, 0) << "no reuse at all";
    EXPECT_EQ(s.requests, s.cache_hits + s.backing_allocs);
    for (const auto& [p, stream] : handles) cache.deallocate(p);
    EXPECT_EQ(cache.stats().bytes_in_use, 0u);
  }
}

// A training step replayed twice: the second step is served entirely from the cache.
TEST(CachingAllocator, ATrainingStepReachesASteadyStateAfterOneStep) {
  for (int trial = 0; trial < 10; ++trial) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    const TensorTrace trace = make_training_step_trace(1 + static_cast<int>(seed % 48), seed);
    FakeBacking backing;
    CachingAllocator cache(backing);
    std::vector<void*> tensors(trace.tensors);
    auto step = [&] {
      for (const TraceEvent& e : trace.events) {
        if (e.kind == TraceEvent::Kind::kAlloc) {
          tensors[e.tensor] = cache.allocate(e.bytes, static_cast<StreamId>(e.stream));
        } else {
          cache.deallocate(tensors[e.tensor]);
        }
      }
    };
    step();
    const CachingStats first = cache.stats();
    EXPECT_EQ(first.bytes_in_use, 0u);
    step();
    const CachingStats second = cache.stats();
    EXPECT_EQ(second.backing_allocs, first.backing_allocs);
    EXPECT_EQ(second.cache_hits - first.cache_hits, trace.allocations());
    EXPECT_GE(first.peak_bytes_reserved, trace.peak_live_bytes);
  }
}

}  // namespace
}  // namespace pairbench::kernels::alloc
