// precision.blas_threads (C20): OpenBLAS sgemm with OPENBLAS_NUM_THREADS = 1, 2, 4, ... up to every
// usable core (environment arms; each process checks how many threads OpenBLAS runs).
#include <string>
#include <vector>

#include "bench/common/experiment.h"
#include "bench/precision/gemm_arms.h"
#include "kernels/common/cpus.h"
#include "kernels/gemm/fma_loop.h"

namespace pairbench::bench {
namespace {

namespace eg = kernels::gemm;

std::vector<int> thread_counts() {
  const int cores = kernels::usable_cpus();
  std::vector<int> out;
  for (int t = 1; t < cores; t *= 2) out.push_back(t);
  out.push_back(cores);
  return out;
}

constexpr const char* kArmPrefix = "threads_";  // + its OPENBLAS_NUM_THREADS

std::vector<Arm> arms() {
  std::vector<Arm> out;
  for (int t : thread_counts()) {
    out.push_back({.name = kArmPrefix + std::to_string(t),
                   .run =
                       [t](benchmark::State& s, const Point& p) {
                         if (!precision::env_in_effect(s, eg::check_threads(t))) return;
                         precision::run_cpu_gemm(s, eg::parse_shape(p.get("n")), precision::CpuGemm::kOpenblas);
                       },
                   .env = {{"OPENBLAS_NUM_THREADS", std::to_string(t)}}});
  }
  return out;
}

}  // namespace

// Expect: sgemm at n=1024 scales close to linearly with threads on dedicated cores (compute-bound,
// ~1.8-1.9x on 2), and cpu_cores_busy tracks the thread count: the claim that raising the BLAS
// thread count does not raise CPU use would not hold for GEMM. On a shared VM (steal time) the
// top arm can fall well short of linear; small n (256) scales worse (fork/join per call).
PAIRBENCH_EXPERIMENT(blas_threads) {
  const std::string all = "threads_" + std::to_string(kernels::usable_cpus());
  return Experiment{
      .name = "precision.blas_threads",
      .claim = "C20",
      .question = "Does giving OpenBLAS more threads (OPENBLAS_NUM_THREADS) make sgemm faster and use more CPU?",
      .arms = arms(),
      .grid = {{.name = "n", .quick = {"1024"}, .nightly = {"256", "1024", "2048"}}},
      .timing = Timing::kWallClock,
      .metric = {.name = "flop_per_second", .unit = "FLOP/s", .better = Better::kHigher},
      .limits =
          {{.experiment = "limits.fma_peak", .arm = "fma_loop", .where = {{"threads", "1"}}, .arms = {"threads_1"}},
           {.experiment = "limits.fma_peak", .arm = "fma_loop", .where = {{"threads", "all"}}, .arms = {all}}},
      .threads =
          [](const Arm& a, const Point& p) {
            const int num_threads = std::stoi(a.name.substr(std::string(kArmPrefix).size()));
            return precision::openblas_busy_threads(eg::parse_shape(p.get("n")), num_threads);
          },
      .verdict = {{.test = VerdictCheck::Test::kSame,
                   .tolerance = 1.1,
                   .why = "the claim is that more threads did not help: held if every thread count is within 10 % of "
                          "one thread"}},
      .figure = {.kind = FigureKind::kAccuracy, .counter = "rel_error"},
  };
}

}  // namespace pairbench::bench
