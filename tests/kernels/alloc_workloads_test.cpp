// The CPU allocator workloads on fresh random seeds and edge sizes: buffers read back what was
// written, every allocation is matched by a free, batches arrive intact, and the fragmentation
// trace's lifetimes and peak are what it says.
#include "kernels/alloc/host_workloads.h"

#include <gtest/gtest.h>

#include <random>

namespace pairbench::kernels::alloc {
namespace {

std::uint64_t fresh_seed() {
  static std::mt19937_64 rng(std::random_device{}());
  return rng();
}

TEST(TensorBuffer, ReadsBackEveryPageAtEdgeSizes) {
  for (std::size_t bytes :
       {std::size_t{8}, std::size_t{9}, std::size_t{4095}, std::size_t{4096}, std::size_t{4097}, std::size_t{4110},
        (std::size_t{1} << 20) + 3, std::size_t{1} << 20, std::size_t{64} << 20}) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE("bytes " + std::to_string(bytes) + ", seed " + std::to_string(seed));
    EXPECT_EQ(tensor_buffer_step(bytes, seed), tensor_buffer_expected(bytes, seed));
  }
  EXPECT_THROW(tensor_buffer_step(7, 1), std::invalid_argument);
}

TEST(TensorBuffer, ChecksumDependsOnTheSeed) {
  const std::uint64_t seed = fresh_seed();
  EXPECT_NE(tensor_buffer_expected(1 << 20, seed), tensor_buffer_expected(1 << 20, seed + 1));
  EXPECT_NE(pattern_word(seed, 1, 0), pattern_word(seed, 2, 0));
}

TEST(DataLoader, EveryBatchArrivesIntactAndEveryAllocationIsFreed) {
  for (int workers : {1, 2, 3}) {
    for (std::size_t sample_bytes : {std::size_t{8}, std::size_t{4096}, std::size_t{150528}, std::size_t{5001}}) {
      SCOPED_TRACE("workers " + std::to_string(workers) + ", sample_bytes " + std::to_string(sample_bytes));
      DataLoader loader({.workers = workers, .samples_per_batch = 7, .sample_bytes = sample_bytes, .queue_batches = 2});
      for (std::int64_t batches : {1, 5, 23}) {
        const LoaderStats s = loader.run(batches, fresh_seed());
        EXPECT_EQ(s.batches, batches);
        EXPECT_EQ(s.bad_batches, 0);
        EXPECT_EQ(s.allocations, batches * 8);
        EXPECT_EQ(s.frees, s.allocations);
      }
    }
  }
}

TEST(DataLoader, RejectsBadOptions) {
  EXPECT_THROW(DataLoader({.workers = 0}), std::invalid_argument);
  EXPECT_THROW(DataLoader({.workers = 1, .sample_bytes = 4}), std::invalid_argument);
}

TEST(SmallObjectChurn, CountsMatchAndNoLiveObjectIsOverwritten) {
  for (int threads : {1, 2, 3}) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE("threads " + std::to_string(threads) + ", seed " + std::to_string(seed));
    SmallObjectChurn churn(
        {.threads = threads, .live_objects_per_thread = 257, .min_bytes = 16, .max_bytes = 512, .seed = seed});
    ChurnStats s = churn.run(1000);
    EXPECT_EQ(s.allocations, 1000 * threads);
    EXPECT_EQ(s.bad_objects, 0);
    EXPECT_LE(s.allocations - s.frees, 257 * threads);  // at most one live object per slot
    s = churn.run(70000);                               // wraps the per-thread op sequence
    EXPECT_EQ(s.allocations, 71000 * threads);
    s = churn.drain();
    EXPECT_EQ(s.allocations, s.frees);
    EXPECT_EQ(s.bad_objects, 0);
    EXPECT_EQ(churn.drain().frees, s.frees);  // nothing left to free
  }
}

TEST(SmallObjectChurn, RejectsBadOptions) {
  EXPECT_THROW(SmallObjectChurn({.threads = 0}), std::invalid_argument);
  EXPECT_THROW(SmallObjectChurn({.threads = 1, .min_bytes = 8}), std::invalid_argument);
  EXPECT_THROW(SmallObjectChurn({.threads = 1, .min_bytes = 64, .max_bytes = 32}), std::invalid_argument);
}

TEST(FragmentationTrace, ReplaysWithMatchedFreesAndTheRecordedPeak) {
  for (int trial = 0; trial < 5; ++trial) {
    const std::uint64_t seed = fresh_seed();
    SCOPED_TRACE("seed " + std::to_string(seed));
    const std::size_t phase_bytes = std::size_t{1} << (18 + trial % 3);
    FragmentationTrace trace({.phase_bytes = phase_bytes,
                              .phases = 1 + trial % 4,
                              .survivor_fraction = 0.25,
                              .short_lifetime_max = 1 + static_cast<int>(seed % 2000),
                              .seed = seed});
    ASSERT_GT(trace.allocations(), 0u);
    EXPECT_GE(trace.total_bytes(), phase_bytes);
    EXPECT_LE(trace.peak_live_bytes(), trace.total_bytes());
    for (int replay = 0; replay < 2; ++replay) {
      const FragmentationStats s = trace.replay();
      EXPECT_EQ(s.allocations, static_cast<std::int64_t>(trace.allocations()));
      EXPECT_EQ(s.frees, s.allocations);
      EXPECT_EQ(s.bad_objects, 0);
      EXPECT_EQ(s.peak_live_bytes, trace.peak_live_bytes());
    }
  }
}

TEST(FragmentationTrace, SurvivorsRaiseThePeak) {
  const std::uint64_t seed = fresh_seed();
  const std::size_t phase_bytes = std::size_t{16} << 20;
  FragmentationTrace none(
      {.phase_bytes = phase_bytes, .survivor_fraction = 0, .short_lifetime_max = 100, .seed = seed});
  FragmentationTrace many(
      {.phase_bytes = phase_bytes, .survivor_fraction = 0.5, .short_lifetime_max = 100, .seed = seed});
  EXPECT_GT(many.peak_live_bytes(), 4 * none.peak_live_bytes());
  // Half of one phase's objects outlive the next phase: at least ~half a phase's bytes live at once.
  EXPECT_GE(many.peak_live_bytes(), phase_bytes * 4 / 10);
}

TEST(FragmentationTrace, RejectsBadOptions) {
  EXPECT_THROW(FragmentationTrace({.phases = 0}), std::invalid_argument);
  EXPECT_THROW(FragmentationTrace({.survivor_fraction = 1.5}), std::invalid_argument);
  EXPECT_THROW(FragmentationTrace({.phase_bytes = 0}), std::invalid_argument);
}

}  // namespace
}  // namespace pairbench::kernels::alloc
