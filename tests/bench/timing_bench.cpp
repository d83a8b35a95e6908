// A bench binary with known, deterministic work per iteration, for the tests of the timed-region
// seam (in-process batches, instruction counts, planted work) and of fixed-iteration runs.
#include <cstdint>
#include <cstdlib>
#include <thread>

#include "bench/common/exec.h"
#include "bench/common/experiment.h"

namespace pairbench::bench {
namespace {

// `work:N`: N dependent xorshift steps per iteration; the same instructions every run.
std::uint64_t xorshift_steps(std::uint64_t x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  return x;
}

void steps_arm(benchmark::State& state, const Point& p) {
  const std::int64_t n = p.get_int("work");
  // Verified: the chain of a known seed after 3 steps (worked out by hand).
  std::uint64_t x = 1;
  x ^= x << 13, x ^= x >> 7, x ^= x << 17;
  x ^= x << 13, x ^= x >> 7, x ^= x << 17;
  x ^= x << 13, x ^= x >> 7, x ^= x << 17;
  if (xorshift_steps(1, 3) != x) return fail_verification(state, "xorshift chain differs");
  mark_verified(state);
  std::uint64_t sink = 1;
  exec(state, Work{.ops = static_cast<double>(n)}, [&] {
    sink = xorshift_steps(sink | 1, n);
    benchmark::DoNotOptimize(sink);
  });
}

// The same chain on two threads at once, the arm's and a helper started per iteration.
void two_threads_arm(benchmark::State& state, const Point& p) {
  const std::int64_t n = p.get_int("work");
  if (xorshift_steps(1, 3) == xorshift_steps(1, 2)) return fail_verification(state, "xorshift chain stands still");
  mark_verified(state);
  std::uint64_t sink = 1, helper_sink = 1;
  exec(state, Work{.ops = static_cast<double>(2 * n)}, [&] {
    std::thread helper([&] { helper_sink = xorshift_steps(helper_sink | 1, n); });
    sink = xorshift_steps(sink | 1, n);
    helper.join();
    benchmark::DoNotOptimize(sink);
    benchmark::DoNotOptimize(helper_sink);
  });
}

}  // namespace

// Expect: ns per step constant in N (a dependent chain: ~1 ns per step); instructions per
// iteration exactly linear in N.
PAIRBENCH_EXPERIMENT(timing_work) {
  return Experiment{
      .name = "timing.work",
      .claim = "",
      .question = "Does the harness sample, count and plant work exactly?",
      .arms = {{.name = "steps", .run = steps_arm}},
      .grid = {{.name = "work", .quick = {"1000", "100000"}}},
      .timing = Timing::kWallClock,
      .metric = {.name = "ns_per_op", .unit = "ns", .better = Better::kLower},
      .instructions = cpu_point,
  };
}

// Two busy threads per process: duet gives each side two cores, or runs the sides one at a time
// where the machine has fewer than four (the runner's scheduling tests, issue 23).
PAIRBENCH_EXPERIMENT(timing_threads) {
  return Experiment{
      .name = "timing.threads",
      .claim = "",
      .question = "Does the harness give a benchmark the cores its threads need?",
      .arms = {{.name = "steps", .run = two_threads_arm}},
      .grid = {{.name = "work", .quick = {"1000"}}},
      .timing = Timing::kWallClock,
      .metric = {.name = "ns_per_op", .unit = "ns", .better = Better::kLower},
      .threads = [](const Arm&, const Point&) { return 2; },
  };
}

}  // namespace pairbench::bench
