// dispatch.enqueue_vs_complete (C1): how long the frontend takes to return after enqueuing N tiny
// ops vs how long until they are done, on the CPU engine and a CUDA stream.
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

enum class Until { kComplete, kEnqueued };
constexpr std::size_t kCudaElements = 1024;
constexpr long long kBusyOpNs = 10'000;  // the "busy_10us" op

bool busy(const Point& p) { return p.get("op") == "busy_10us"; }

void run_cpu(benchmark::State& state, const Point& p, Until until) {
  const std::int64_t ops = p.get_int("ops");
  AsyncEngine engine({.workers = 1});
  TinyTensor x;
  const kernels::BufferId bx = engine.new_buffer();
  kernels::BusyAddOne heavy{.x = &x, .busy_ns = kBusyOpNs};
  const bool is_busy = busy(p);
  auto enqueue = [&] {
    for (std::int64_t i = 0; i < ops; ++i) {
      if (is_busy) {
        engine.push(kernels::busy_add_one_op, &heavy, {bx}, {bx});
      } else {
        engine.push(kernels::add_one_op, &x, {bx}, {bx});
      }
    }
  };
  x.fill(0);
  enqueue();
  engine.wait_for(bx);
  if (!x.all_equal(static_cast<float>(ops))) return fail_verification(state, "x != ops after one pass");
  mark_verified(state);
  exec(
      state, Work{.ops = static_cast<double>(ops)}, [&] { x.fill(0); },
      [&] {
        enqueue();
        if (until == Until::kComplete) engine.wait_for(bx);
      },
      [&] { engine.wait_for(bx); });  // untimed in the enqueue arm: the next iteration starts idle
  if (!x.all_equal(static_cast<float>(ops))) return fail_verification(state, "x != ops after timing");
}

void run_cuda(benchmark::State& state, const Point& p, Until until) {
  const std::int64_t ops = p.get_int("ops");
  kernels::cuda::StreamOps stream(kCudaElements);
  const bool is_busy = busy(p);
  auto enqueue = [&] {
    for (std::int64_t i = 0; i < ops; ++i) is_busy ? stream.add_one_busy(kBusyOpNs) : stream.add_one();
  };
  std::vector<float> host(kCudaElements, -1.0f);
  stream.fill(0);
  enqueue();
  stream.sync_stream();
  stream.read_all(host);
  for (float v : host) {
    if (v != static_cast<float>(ops)) return fail_verification(state, "x != ops after one pass");
  }
  mark_verified(state);
  exec(
      state, Work{.ops = static_cast<double>(ops)}, [&] { stream.fill(0); },
      [&] {
        enqueue();
        if (until == Until::kComplete) stream.sync_stream();
      },
      [&] { stream.sync_stream(); });
  if (stream.read_scalar() != static_cast<float>(ops)) return fail_verification(state, "x != ops after timing");
}

ArmFn arm(Until until) {
  return [until](benchmark::State& s, const Point& p) {
    on_device(p, "cuda") ? run_cuda(s, p, until) : run_cpu(s, p, until);
  };
}

}  // namespace

// Expect: the frontend returns well before the work is done only where an op costs more to run
// than to enqueue. For `add_one` (x += 1) enqueue and run cost about the same, so expect a ratio
// near 1-2x on the CPU; on CUDA a launch (~2-5 us of CPU) vs its kernel (~2 us of GPU) is close
// too. For `busy_10us` expect ~10 us / enqueue cost: 50x or more. d2l's 30x (0.07 s vs 2.13 s)
// came from matrix products, ops far heavier than their enqueue.
PAIRBENCH_EXPERIMENT(enqueue_vs_complete) {
  return Experiment{
      .name = "dispatch.enqueue_vs_complete",
      .claim = "C1",
      .question = "How much sooner does the frontend return than the queued work completes?",
      .arms = {{.name = "complete", .run = arm(Until::kComplete), .unavailable = unavailable_for_device},
               {.name = "enqueue", .run = arm(Until::kEnqueued), .unavailable = unavailable_for_device}},
      .grid = {{.name = "device", .quick = {"cpu", "cuda"}},
               {.name = "op", .quick = {"add_one", "busy_10us"}},
               {.name = "ops", .quick = {"1000"}, .nightly = {"1000", "10000"}}},
      .timing = Timing::kWallClock,
      .metric = {.name = "ns_per_op", .unit = "ns", .better = Better::kLower},
      .threads = threads_at_cpu_points(2),  // device:cpu: the frontend and the engine's worker
      .verdict = {{.test = VerdictCheck::Test::kBetter, .treatments = {"enqueue"}, .threshold = 1.0}},
  };
}

}  // namespace pairbench::bench
