// dispatch.readback_in_loop (C7): read a scalar back to the host every step (`.item()` in the
// loop: a hidden barrier) vs accumulate it on the backend/device and read once at the end.
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

enum class Readback { kEveryStep, kOnce };
constexpr std::size_t kCudaElements = 1024;

// x starts at 0 and gains 1 per step, so the scalars read are 1..steps.
double expected_sum(std::int64_t steps) { return static_cast<double>(steps) * (steps + 1) / 2; }

void run_cpu(benchmark::State& state, const Point& p, Readback mode) {
  const std::int64_t steps = p.get_int("steps");
  AsyncEngine engine({.workers = 1});
  TinyTensor x;
  kernels::Accumulation acc{.source = &x};
  const kernels::BufferId bx = engine.new_buffer();
  const kernels::BufferId bacc = engine.new_buffer();
  auto run_once = [&] {
    x.fill(0);
    acc.sum = 0;
    double host_sum = 0;
    for (std::int64_t i = 0; i < steps; ++i) {
      engine.push(kernels::add_one_op, &x, {bx}, {bx});
      if (mode == Readback::kEveryStep) {
        engine.wait_for(bx);  // what .item() does
        host_sum += x.values[0];
      } else {
        engine.push(kernels::accumulate_op, &acc, {bx}, {bacc});
      }
    }
    if (mode == Readback::kOnce) {
      engine.wait_for(bacc);
      host_sum = acc.sum;
    }
    return host_sum;
  };
  if (run_once() != expected_sum(steps)) return fail_verification(state, "sum of read-backs wrong");
  mark_verified(state);
  double sum = 0;
  exec(state, Work{.ops = static_cast<double>(steps)}, [&] { sum = run_once(); });
  if (sum != expected_sum(steps)) return fail_verification(state, "sum of read-backs wrong after timing");
}

void run_cuda(benchmark::State& state, const Point& p, Readback mode) {
  const std::int64_t steps = p.get_int("steps");
  kernels::cuda::StreamOps stream(kCudaElements);
  auto run_once = [&] {
    stream.fill(0);
    stream.reset_accumulator();
    double host_sum = 0;
    for (std::int64_t i = 0; i < steps; ++i) {
      stream.add_one();
      if (mode == Readback::kEveryStep) {
        host_sum += stream.read_scalar();  // a D2H copy: waits for the stream every step
      } else {
        stream.accumulate();
      }
    }
    if (mode == Readback::kOnce) host_sum = stream.read_accumulator();
    return host_sum;
  };
  if (run_once() != expected_sum(steps)) return fail_verification(state, "sum of read-backs wrong");
  mark_verified(state);
  double sum = 0;
  exec(state, Work{.ops = static_cast<double>(steps)}, [&] { sum = run_once(); });
  if (sum != expected_sum(steps)) return fail_verification(state, "sum of read-backs wrong after timing");
}

ArmFn arm(Readback mode) {
  return [mode](benchmark::State& s, const Point& p) {
    on_device(p, "cuda") ? run_cuda(s, p, mode) : run_cpu(s, p, mode);
  };
}

}  // namespace

// Expect: reading back every step turns each step into a synchronous round trip; accumulating
// keeps the queue full. Same shape as sync_vs_async (ratio >> 1) even though the accumulate arm
// enqueues twice as many ops. On CUDA each read-back is a D2H copy plus a sync (~10 us), so
// expect ~3-5x there.
PAIRBENCH_EXPERIMENT(readback_in_loop) {
  return Experiment{
      .name = "dispatch.readback_in_loop",
      .claim = "C7",
      .question = "Does reading a scalar back every step cost more than accumulating it and reading once?",
      .arms = {{.name = "readback_every_step", .run = arm(Readback::kEveryStep), .unavailable = unavailable_for_device},
               {.name = "accumulate_read_once", .run = arm(Readback::kOnce), .unavailable = unavailable_for_device}},
      .grid = {{.name = "device", .quick = {"cpu", "cuda"}},
               {.name = "steps", .quick = {"1000"}, .nightly = {"1000", "10000"}}},
      .timing = Timing::kWallClock,
      .metric = {.name = "ns_per_op", .unit = "ns", .better = Better::kLower},
      // A synchronous hand-off cannot beat one cross-core round trip: the physical floor.
      .limits = {{.experiment = "limits.core_pingpong",
                  .arm = "spin",
                  .arms = {"readback_every_step"},
                  .when = {{"device", "cpu"}}}},
      .threads = threads_at_cpu_points(2),  // device:cpu: the frontend and the engine's worker
      .verdict = {{.test = VerdictCheck::Test::kBetter, .treatments = {"accumulate_read_once"}, .threshold = 1.0}},
  };
}

}  // namespace pairbench::bench
