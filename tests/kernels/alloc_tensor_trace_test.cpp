// The training-step trace generator on fresh random seeds: every tensor allocated once and freed
// once afterwards, on one stream, within the size bounds, and the recorded peak of live bytes.
#include "kernels/alloc/tensor_trace.h"

#include <gtest/gtest.h>

#include <random>

namespace pairbench::kernels::alloc {
namespace {

TEST(TensorTrace, EveryTensorIsAllocatedOnceAndFreedOnceAfterwards) {
  std::mt19937_64 seeds(std::random_device{}());
  for (int trial = 0; trial < 50; ++trial) {
    const std::uint64_t seed = seeds();
    const int layers = 1 + static_cast<int>(seed % 64);
    SCOPED_TRACE("seed " + std::to_string(seed) + ", layers " + std::to_string(layers));
    const std::size_t max_bytes = std::size_t{64} << 20;
    const TensorTrace trace = make_training_step_trace(layers, seed);
    std::vector<int> state(trace.tensors, 0);  // 0 never seen, 1 live, 2 freed
    std::vector<std::size_t> bytes(trace.tensors, 0);
    std::vector<int> stream(trace.tensors, -1);
    std::size_t live = 0, peak = 0;
    bool side_stream = false;
    for (const TraceEvent& e : trace.events) {
      ASSERT_LT(e.tensor, trace.tensors);
      if (e.kind == TraceEvent::Kind::kAlloc) {
        ASSERT_EQ(state[e.tensor], 0) << "tensor " << e.tensor << " allocated twice";
        ASSERT_GE(e.bytes, 4u);
        ASSERT_LE(e.bytes, max_bytes);
        state[e.tensor] = 1;
        bytes[e.tensor] = e.bytes;
        stream[e.tensor] = e.stream;
        side_stream |= e.stream == 1;
        live += e.bytes;
        peak = std::max(peak, live);
      } else {
        ASSERT_EQ(state[e.tensor], 1) << "tensor " << e.tensor << " freed while not live";
        ASSERT_EQ(e.bytes, bytes[e.tensor]);
        ASSERT_EQ(e.stream, stream[e.tensor]) << "freed on another stream";
        state[e.tensor] = 2;
        live -= e.bytes;
      }
    }
    for (std::uint32_t t = 0; t < trace.tensors; ++t) ASSERT_EQ(state[t], 2) << "tensor " << t << " never freed";
    EXPECT_EQ(live, 0u);
    EXPECT_EQ(peak, trace.peak_live_bytes);
    EXPECT_TRUE(side_stream);
    EXPECT_EQ(trace.allocations(), 4 * layers);  // workspace, activation, statistics, gradient
  }
}

TEST(TensorTrace, SameSeedSameTrace) {
  const TensorTrace a = make_training_step_trace(16, 42), b = make_training_step_trace(16, 42);
  ASSERT_EQ(a.events.size(), b.events.size());
  for (std::size_t i = 0; i < a.events.size(); ++i) {
    EXPECT_EQ(a.events[i].bytes, b.events[i].bytes);
    EXPECT_EQ(a.events[i].tensor, b.events[i].tensor);
  }
}

TEST(TensorTrace, RejectsBadArguments) {
  EXPECT_THROW(make_training_step_trace(0, 1), std::invalid_argument);
  EXPECT_THROW(make_training_step_trace(4, 1, 1024, 512), std::invalid_argument);
}

}  // namespace
}  // namespace pairbench::kernels::alloc
