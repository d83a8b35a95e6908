// A bench binary whose work per iteration a build script plants: for `pairbench bisect`'s tests,
// which copy it into a throw-away history's builds. The factor on the work is read from the file
// beside the executable, <executable>.work (absent: 1), so each commit's copy carries its own.
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <fstream>
#include <string>

#include "bench/common/exec.h"
#include "bench/common/experiment.h"

namespace pairbench::bench {
namespace {

// `work:N`: N dependent xorshift steps per iteration, as bench_timing's. Not inlined: bisect's
// re-check names it as the function that added the instructions (callgrind, self).
[[gnu::noinline]] std::uint64_t xorshift_steps(std::uint64_t x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  return x;
}

// The factor the build wrote beside this executable (1.3: 30 % more steps); 1 where there is none.
double planted_factor() {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 1;
  std::ifstream in(std::string(self, static_cast<std::size_t>(n)) + ".work");
  double factor = 1;
  return in >> factor && std::isfinite(factor) && factor > 0 ? factor : 1;
}

void steps_arm(benchmark::State& state, const Point& p, double factor) {
  const auto n = static_cast<std::int64_t>(std::llround(static_cast<double>(p.get_int("work")) * factor));
  if (xorshift_steps(1, 3) == xorshift_steps(1, 2)) return fail_verification(state, "xorshift chain stands still");
  mark_verified(state);
  std::uint64_t sink = 1;
  exec(state, Work{.ops = static_cast<double>(p.get_int("work"))}, [&] {
    sink = xorshift_steps(sink | 1, n);
    benchmark::DoNotOptimize(sink);
  });
}

}  // namespace

// Expect: time per iteration proportional to the planted factor (a dependent chain).
PAIRBENCH_EXPERIMENT(planted_work) {
  return Experiment{
      .name = "planted.work",
      .claim = "",
      .question = "Does bisect name the commit that planted more work?",
      .arms = {{.name = "steps", .run = [](benchmark::State& s, const Point& p) { steps_arm(s, p, planted_factor()); }}},
      .grid = {{.name = "work", .quick = {"20000"}}},
      .timing = Timing::kWallClock,
      .metric = {.name = "ns_per_op", .unit = "ns", .better = Better::kLower},
      .instructions = [](const Arm&, const Point&) { return true; },
  };
}

// Never planted: the tests' --benchmarks leaves it out, so bisect must not run it.
PAIRBENCH_EXPERIMENT(planted_untouched) {
  return Experiment{
      .name = "planted.untouched",
      .claim = "",
      .question = "Is a benchmark the regular expression leaves out left alone?",
      .arms = {{.name = "steps", .run = [](benchmark::State& s, const Point& p) { steps_arm(s, p, 1); }}},
      .grid = {{.name = "work", .quick = {"20000"}}},
      .timing = Timing::kWallClock,
      .metric = {.name = "ns_per_op", .unit = "ns", .better = Better::kLower},
  };
}

}  // namespace pairbench::bench
