// The GPU allocator arms on a real device: every kind replays fresh random training-step traces
// with no overlapping live tensors and every tensor's bytes intact until its free. Always
// compiled; skipped with the reason where there is no CUDA device.
#include "kernels/alloc/gpu_allocators.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <ostream>
#include <random>

#include "kernels/common/device.h"
#include "kernels/dispatch/cuda_stream_ops.h"

namespace pairbench::kernels::cuda {

void PrintTo(GpuAllocatorKind kind, std::ostream* os) { *os << gpu_allocator_name(kind); }

namespace {

class GpuAllocatorsTest : public ::testing::TestWithParam<GpuAllocatorKind> {
 protected:
  void SetUp() override {
    const DeviceInfo info = query_device();
    if (!info.available) GTEST_SKIP() << "skipped: " << info.reason;
  }
};

TEST_P(GpuAllocatorsTest, ReplaysRandomTracesIntact) {
  GpuTraceReplay replay(GetParam());
  std::mt19937_64 seeds(std::random_device{}());
  for (int trial = 0; trial < 4; ++trial) {
    const std::uint64_t seed = seeds();
    const int layers = 1 + static_cast<int>(seed % 24);
    SCOPED_TRACE("seed " + std::to_string(seed) + ", layers " + std::to_string(layers));
    const alloc::TensorTrace trace = alloc::make_training_step_trace(layers, seed);
    for (int step = 0; step < 2; ++step) EXPECT_EQ(replay.verify_step(trace), "");
    replay.run_step(trace);
    EXPECT_EQ(replay.verify_step(trace), "");
  }
  const std::uint64_t threshold = replay.release_threshold_bytes();
  switch (GetParam()) {
    case GpuAllocatorKind::kAsyncPool:
      EXPECT_EQ(threshold, 0u);
      break;
    case GpuAllocatorKind::kAsyncPoolRetain:
      EXPECT_EQ(threshold, std::numeric_limits<std::uint64_t>::max());
      break;
    default:
      EXPECT_EQ(threshold, 0u);
      break;
  }
  EXPECT_FALSE(replay.describe().empty());
}

INSTANTIATE_TEST_SUITE_P(AllKinds, GpuAllocatorsTest,
                         ::testing::Values(GpuAllocatorKind::kCudaMalloc, GpuAllocatorKind::kAsyncPool,
                                           GpuAllocatorKind::kAsyncPoolRetain, GpuAllocatorKind::kCaching),
                         [](const auto& info) { return std::string(gpu_allocator_name(info.param)); });

}  // namespace
}  // namespace pairbench::kernels::cuda
