// scratch.dot_product: an integer dot product summed along one dependency chain vs four
// independent chains, in elements per second. A throw-away experiment: the test
// throwaway_experiment_test builds it from this one file (the area folder is the whole
// declaration of its binary), then lists, runs, summarises and draws it through pairbench.
// docs/adding-an-experiment.md walks through this file.
#include <cstdint>
#include <vector>

#include "bench/common/exec.h"
#include "bench/common/experiment.h"
#include "kernels/common/rng.h"

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
    // Fresh random inputs every process, in [-1024, 1024); integer sums are exact, so the
    // check is equality.
    std::uint64_t state_bits = kernels::fresh_seed();
    std::vector<std::int32_t> x(n), y(n);
    for (std::size_t i = 0; i < n; ++i) {
      x[i] = static_cast<std::int32_t>(kernels::splitmix64_next(state_bits) >> 53) - 1024;
      y[i] = static_cast<std::int32_t>(kernels::splitmix64_next(state_bits) >> 53) - 1024;
    }
    std::int64_t reference = 0;
    for (std::size_t i = 0; i < n; ++i) reference += std::int64_t{x[i]} * y[i];
    if (dot(x, y) != reference) return fail_verification(state, "dot product differs from the reference");
    mark_verified(state);

    // The framework times each iteration and turns the declared work into elements_per_second.
    std::int64_t sink = 0;
    exec(state, Work{.elements = static_cast<double>(n)}, [&] {
      sink += dot(x, y);
      benchmark::DoNotOptimize(sink);
    });
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
