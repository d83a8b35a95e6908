// scratch.dot_product: an integer dot product summed along one dependency chain vs four
// independent chains, in elements per second. A throw-away experiment: the test
// throwaway_experiment_test builds it from this one file (the area folder is the whole
// declaration of its binary), then lists, runs, summarises and draws it through pairbench.
// docs/adding-an-experiment.md walks through this file.
#include <cstdint>
#include <random>
#include <vector>

#include "bench/common/experiment.h"
#include "bench/common/wall_timer.h"

namespace pairbench::bench {
namespace {

// The kernel, inline for a throw-away experiment (a real one lives in kernels/<family>/).
std::int64_t dot_one_chain(const std::vector<std::int32_t>& x, const std::vector<std::int32_t>& y) {
  std::int64_t sum = 0;
  for (std::size_t i = 0; i < x.size(); ++i) sum += std::int64_t{x[i]} * y[i];
  return sum;
}

std::int64_t dot_four_chains(const std::vector<std::int32_t>& x, const std::vector<std::int32_t>& y) {
  std::int64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  std::size_t i = 0;
  for (; i + 4 <= x.size(); i += 4) {
    s0 += std::int64_t{x[i]} * y[i];
    s1 += std::int64_t{x[i + 1]} * y[i + 1];
    s2 += std::int64_t{x[i + 2]} * y[i + 2];
    s3 += std::int64_t{x[i + 3]} * y[i + 3];
  }
  for (; i < x.size(); ++i) s0 += std::int64_t{x[i]} * y[i];
  return (s0 + s1) + (s2 + s3);
}

using DotFn = std::int64_t (*)(const std::vector<std::int32_t>&, const std::vector<std::int32_t>&);

ArmFn arm(DotFn dot) {
  return [dot](benchmark::State& state, const Point& p) {
    const auto n = static_cast<std::size_t>(p.get_int("n"));
    // Fresh random inputs every process; integer sums are exact, so the check is equality.
    std::mt19937_64 rng{std::random_device{}()};
    std::uniform_int_distribution<std::int32_t> value(-1000, 1000);
    std::vector<std::int32_t> x(n), y(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = value(rng), y[i] = value(rng);
    std::int64_t reference = 0;
    for (std::size_t i = 0; i < n; ++i) reference += std::int64_t{x[i]} * y[i];
    if (dot(x, y) != reference) return fail_verification(state, "dot product differs from the reference");
    mark_verified(state);

    WallTimer timer(state);
    std::int64_t sink = 0;
    for (auto _ : state) {
      timer.start();
      sink += dot(x, y);
      benchmark::DoNotOptimize(sink);
      timer.stop();
    }
    state.counters["elements_per_second"] =
        static_cast<double>(n) * static_cast<double>(state.iterations()) / (timer.total_ns() * 1e-9);
  };
}

}  // namespace

// Expect: four_chains at least as fast as one_chain at every n (ratio >= 1): one chain waits
// for each add before the next, four let the core overlap them (unless the compiler already
// vectorised the single chain, which -O2 with GCC 12 may: then the ratio is near 1).
PAIRBENCH_EXPERIMENT(scratch_dot_product) {
  return Experiment{
      .name = "scratch.dot_product",
      .question = "Does a dot product summed along four independent chains beat one chain?",
      .arms = {{.name = "one_chain", .run = arm(dot_one_chain)}, {.name = "four_chains", .run = arm(dot_four_chains)}},
      .grid = {{.name = "n", .quick = {"1024", "65536"}, .nightly = {"1024", "16384", "262144"}}},
      .timing = Timing::kWallClock,
      .metric = {.name = "elements_per_second", .unit = "elements/s", .better = Better::kHigher},
      .figure = {.x_scale = Scale::kLog},  // n spans 64x: a log axis, said rather than inferred
  };
}

}  // namespace pairbench::bench
