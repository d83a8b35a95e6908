// The C4 training loop: every step runs once on the tensor made for it, every tensor is freed,
// and the peak of live input bytes is what the queue bound allows (exact, not timed).
#include <gtest/gtest.h>

#include <stdexcept>

#include "kernels/dispatch/async_engine.h"
#include "kernels/dispatch/minibatch_loop.h"

namespace pairbench::kernels {
namespace {

TEST(MinibatchLoop, EveryStepRunsOnceAndEveryTensorIsFreed) {
  for (std::size_t bound : {std::size_t{0}, std::size_t{1}, std::size_t{3}}) {
    for (std::int64_t batches : {0, 1, 7, 100}) {
      SCOPED_TRACE(::testing::Message() << "bound=" << bound << " batches=" << batches);
      AsyncEngine engine({.workers = 1, .max_queued_ops = bound});
      const auto s = run_minibatch_loop(engine, {.batches = batches, .tensor_bytes = 4096, .step_ns = 0}, 42 + batches);
      EXPECT_EQ(s.steps_run, batches);
      EXPECT_EQ(s.bad_tensors, 0);
      EXPECT_EQ(s.live_bytes_after, 0);
    }
  }
}

TEST(MinibatchLoop, BoundedQueueCapsLiveBytesAtBoundPlusTheTensorBeingMade) {
  for (std::size_t bound : {std::size_t{1}, std::size_t{2}, std::size_t{4}}) {
    AsyncEngine engine({.workers = 1, .max_queued_ops = bound});
    // Slow steps: the frontend always catches up with the bound, so the cap is reached.
    const auto s = run_minibatch_loop(engine, {.batches = 40, .tensor_bytes = 8192, .step_ns = 200'000}, 7);
    EXPECT_EQ(s.peak_live_bytes, static_cast<std::int64_t>((bound + 1) * 8192)) << "bound=" << bound;
    EXPECT_LE(s.peak_outstanding_ops, bound);
  }
}

TEST(MinibatchLoop, WaitingEachBatchHoldsOneTensor) {
  AsyncEngine engine({.workers = 1});
  const auto s =
      run_minibatch_loop(engine, {.batches = 20, .tensor_bytes = 1024, .step_ns = 50'000, .wait_each_batch = true}, 3);
  EXPECT_EQ(s.peak_live_bytes, 1024);
  EXPECT_EQ(s.steps_run, 20);
}

TEST(MinibatchLoop, UnboundedQueueGrowsWhenStepsAreSlowerThanTheFrontend) {
  AsyncEngine engine({.workers = 1});
  // 2 ms steps against a frontend that writes 1 KiB: the frontend finishes all 30 pushes while
  // the first steps run, so nearly every tensor is alive at once.
  const auto s = run_minibatch_loop(engine, {.batches = 30, .tensor_bytes = 1024, .step_ns = 2'000'000}, 9);
  EXPECT_GE(s.peak_live_bytes, 25 * 1024);
  EXPECT_EQ(s.live_bytes_after, 0);
}

TEST(MinibatchLoop, RejectsBadOptions) {
  AsyncEngine engine({.workers = 1});
  EXPECT_THROW(run_minibatch_loop(engine, {.batches = -1}, 1), std::invalid_argument);
  EXPECT_THROW(run_minibatch_loop(engine, {.batches = 1, .tensor_bytes = 12}, 1), std::invalid_argument);
  EXPECT_THROW(run_minibatch_loop(engine, {.batches = 1, .tensor_bytes = 0}, 1), std::invalid_argument);
  EXPECT_THROW(run_minibatch_loop(engine, {.batches = 1, .tensor_bytes = 8, .step_ns = -1}, 1), std::invalid_argument);
}

}  // namespace
}  // namespace pairbench::kernels
