// dispatch.barriers (C2): with unrelated work queued, wait for everything (waitall /
// cudaDeviceSynchronize) vs wait for the one result needed (wait_to_read / an event on its stream).
#include <vector>

#include "bench/common/devices.h"
#include "bench/common/exec.h"
#include "bench/common/experiment.h"
#include "kernels/dispatch/async_engine.h"
#include "kernels/dispatch/cuda_stream_ops.h"
#include "kernels/dispatch/tiny_ops.h"

namespace pairbench::bench {
namespace {

using kernels::AsyncEngine;
using kernels::TinyTensor;

enum class Barrier { kAll, kOne };
constexpr std::size_t kCudaElements = 1024;
constexpr long long kCpuUnrelatedOpNs = 1'000;    // unrelated work comes in 1 us CPU ops
constexpr long long kCudaUnrelatedOpNs = 10'000;  // and in 10 us kernels (launches cost ~us)

void run_cpu(benchmark::State& state, const Point& p, Barrier barrier) {
  const std::int64_t unrelated_us = p.get_int("unrelated_us");
  const std::int64_t unrelated_ops = unrelated_us * 1000 / kCpuUnrelatedOpNs;
  // Two workers: one can run the needed op while the other works through the unrelated chain.
  AsyncEngine engine({.workers = 2});
  TinyTensor x;
  kernels::BusyWork unrelated{.busy_ns = kCpuUnrelatedOpNs};
  const kernels::BufferId bx = engine.new_buffer();
  const kernels::BufferId bu = engine.new_buffer();
  float expected = 0;
  bool ok = true;
  // A round: the unrelated chain queued (untimed), the needed op and the barrier (timed), then the
  // check and a full wait (untimed: the next round starts with an empty queue).
  auto queue_unrelated = [&] {
    for (std::int64_t i = 0; i < unrelated_ops; ++i) engine.push(kernels::busy_op, &unrelated, {bu}, {bu});
  };
  auto needed_and_barrier = [&] {
    engine.push(kernels::add_one_op, &x, {bx}, {bx});
    barrier == Barrier::kAll ? engine.wait_all() : engine.wait_for(bx);
  };
  auto check_and_drain = [&] {
    ++expected;
    ok = x.all_equal(expected) && ok;  // the needed result must be complete whichever barrier was used
    engine.wait_all();
  };
  x.fill(0);
  queue_unrelated();
  needed_and_barrier();
  check_and_drain();
  if (!ok || unrelated.runs != unrelated_ops)
    return fail_verification(state, "needed result not complete after the barrier");
  mark_verified(state);
  exec(state, Work{.ops = /*waits per iteration=*/1}, queue_unrelated, needed_and_barrier, check_and_drain);
  if (!ok) return fail_verification(state, "needed result not complete after the barrier");
}

void run_cuda(benchmark::State& state, const Point& p, Barrier barrier) {
  const std::int64_t unrelated_us = p.get_int("unrelated_us");
  const int unrelated_kernels = static_cast<int>(unrelated_us * 1000 / kCudaUnrelatedOpNs);
  kernels::cuda::StreamOps stream(kCudaElements);
  float expected = 0;
  bool ok = true;
  auto queue_unrelated = [&] { stream.enqueue_unrelated(unrelated_kernels, kCudaUnrelatedOpNs); };
  auto needed_and_barrier = [&] {
    stream.add_one();
    barrier == Barrier::kAll ? stream.sync_device() : stream.sync_event();
  };
  auto check_and_drain = [&] {
    ++expected;
    ok = stream.read_scalar() == expected && ok;
    stream.sync_unrelated();
  };
  stream.fill(0);
  queue_unrelated();
  needed_and_barrier();
  check_and_drain();
  if (!ok) return fail_verification(state, "needed result not complete after the barrier");
  mark_verified(state);
  exec(state, Work{.ops = /*waits per iteration=*/1}, queue_unrelated, needed_and_barrier, check_and_drain);
  if (!ok) return fail_verification(state, "needed result not complete after the barrier");
}

ArmFn arm(Barrier barrier) {
  return [barrier](benchmark::State& s, const Point& p) {
    on_device(p, "cuda") ? run_cuda(s, p, barrier) : run_cpu(s, p, barrier);
  };
}

}  // namespace

// Expect: with nothing else queued both barriers cost the same (ratio ~1, d2l's "about the
// same for one op"). With unrelated work queued, waiting for everything pays for all of it:
// ~1000 us of unrelated work vs a few us for the needed op, so a ratio of 100x or more.
PAIRBENCH_EXPERIMENT(barriers) {
  return Experiment{
      .name = "dispatch.barriers",
      .claim = "C2",
      .question =
          "With unrelated work queued, how much does waiting for everything cost over waiting for the one result "
          "needed?",
      .arms = {{.name = "wait_all", .run = arm(Barrier::kAll), .unavailable = unavailable_for_device},
               {.name = "wait_for", .run = arm(Barrier::kOne), .unavailable = unavailable_for_device}},
      .grid = {{.name = "device", .quick = {"cpu", "cuda"}},
               {.name = "unrelated_us", .quick = {"0", "1000"}, .nightly = {"0", "100", "1000"}}},
      .timing = Timing::kWallClock,
      .metric = {.name = "ns_per_op", .unit = "ns", .better = Better::kLower},
      // device:cpu: the frontend and the engine's two workers (an idle one spins before it parks).
      .threads = threads_at_cpu_points(3),
      .verdict = {{.test = VerdictCheck::Test::kSame,
                   .treatments = {"wait_for"},
                   .where = {{"unrelated_us", {"0"}}},
                   .tolerance = 1.25,
                   .why = "nothing else queued: the two waits should cost the same (within 25 %)"},
                  {.test = VerdictCheck::Test::kBetter,
                   .treatments = {"wait_for"},
                   .exclude = {{"unrelated_us", {"0"}}},
                   .threshold = 1.0,
                   .why = "unrelated work queued: waiting for one result should beat waiting for everything"}},
  };
}

}  // namespace pairbench::bench
