// A bench binary with known, deterministic work per iteration, for the tests of the timed-region
// seam (in-process batches, instruction counts, planted work) and of fixed-iteration runs.
#include <cstdint>
#include <cstdlib>

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

}  // namespace pairbench::bench
