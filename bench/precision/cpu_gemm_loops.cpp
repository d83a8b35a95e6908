// precision.cpu_gemm_loops (C19): fp32 C = A*B by the textbook triple loop, by a cache- and
// register-blocked loop, and by OpenBLAS sgemm, at sizes where the naive loop still finishes.
#include "bench/common/experiment.h"
#include "bench/precision/gemm_arms.h"

namespace pairbench::bench {
namespace {

using precision::CpuGemm;

ArmFn arm(CpuGemm kind) {
  return [kind](benchmark::State& s, const Point& p) {
    precision::run_cpu_gemm(s, kernels::gemm::parse_shape(p.get("n")), kind);
  };
}

}  // namespace

// Expect: naive 2-4 GFLOP/s (scalar dot products, B walked down its columns, ~1 % of one core's
// FMA peak); blocked 40-100x that, at 70-90 % of one core's peak (an 8x32 AVX-512 micro-kernel on
// packed panels). OpenBLAS on every core does not beat one blocked core at these sizes: a 4-34
// MFLOP call is too short to amortise its fork/join and packing. So d2l's numpy-vs-loops gap is
// the naive -> blocked step. % of limit: naive and blocked against one core, OpenBLAS all cores.
PAIRBENCH_EXPERIMENT(cpu_gemm_loops) {
  return Experiment{
      .name = "precision.cpu_gemm_loops",
      .claim = "C19",
      .question = "How much faster than a naive triple loop are a cache-blocked loop and OpenBLAS sgemm?",
      .arms = {{.name = "naive", .run = arm(CpuGemm::kNaive)},
               {.name = "blocked", .run = arm(CpuGemm::kBlocked)},
               {.name = "openblas", .run = arm(CpuGemm::kOpenblas)}},
      .grid = {{.name = "n", .quick = {"128", "256"}, .nightly = {"64", "128", "256", "512"}}},
      .timing = Timing::kWallClock,
      .metric = {.name = "flop_per_second", .unit = "FLOP/s", .better = Better::kHigher},
      .limits =
          {{.experiment = "limits.fma_peak",
            .arm = "fma_loop",
            .where = {{"threads", "1"}},
            .arms = {"naive", "blocked"}},
           {.experiment = "limits.fma_peak", .arm = "fma_loop", .where = {{"threads", "all"}}, .arms = {"openblas"}}},
      // Instruction counts gate the two loops (one thread, deterministic); OpenBLAS picks its
      // kernel and thread count at run time, which a simulator's CPU model would change.
      .instructions = [](const Arm& a, const Point&) { return a.name != "openblas"; },
      .threads =
          [](const Arm& a, const Point& p) {
            return a.name == "openblas" ? precision::openblas_busy_threads(kernels::gemm::parse_shape(p.get("n"))) : 1;
          },
      .verdict = {{.test = VerdictCheck::Test::kBetter, .threshold = 1.0}},
      .figure = {.kind = FigureKind::kAccuracy, .counter = "rel_error"},
  };
}

}  // namespace pairbench::bench
