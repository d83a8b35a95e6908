// precision.blas_kernel: OpenBLAS sgemm under the kernel OpenBLAS detects on its own vs kernels
// named through OPENBLAS_CORETYPE (environment arms; each process checks which kernel ran).
#include <string>

#include "bench/common/experiment.h"
#include "bench/precision/gemm_arms.h"

namespace pairbench::bench {
namespace {

namespace eg = kernels::gemm;

// `core` "" = OpenBLAS's own detection (the harness sets OPENBLAS_CORETYPE to the empty string,
// which OpenBLAS 0.3.21 treats as unset: "Core not found: " and detection, not a fallback).
Arm core_arm(const std::string& name, const std::string& core) {
  return {.name = name,
          .run =
              [core](benchmark::State& s, const Point& p) {
                if (!precision::env_in_effect(s, eg::check_coretype(core))) return;
                precision::run_cpu_gemm(s, eg::parse_shape(p.get("n")), precision::CpuGemm::kOpenblas);
              },
          .unavailable = [core](const Point&) -> std::string {
            const int level = eg::core_isa_level(core);
            const int cpu_level = eg::core_isa_level(eg::best_core_for(eg::this_cpu_features()));
            if (level > 0 && cpu_level < level) {
              return "this CPU lacks the " + std::string(level == 2 ? "AVX-512 (F/CD/BW/DQ/VL)" : "AVX2+FMA") +
                     " instructions the " + core + " kernel needs";
            }
            return "";
          },
          .env = {{"OPENBLAS_CORETYPE", core}}};
}

}  // namespace

// Expect: the kernel class decides everything. Prescott (SSE3, 4 lanes, no FMA) runs sgemm at
// 1/5-1/8 of SkylakeX (AVX-512, 16 lanes, FMA); Haswell (AVX2+FMA, 8 lanes) at ~1/2. This issue's
// figures on a Xeon: Prescott ~33 vs SkylakeX ~260-310 GFLOP/s, with Debian's OpenBLAS 0.3.21
// detecting Prescott there; on a CPU it recognises (this Zen 5 VM: it picks Cooperlake, an
// AVX-512 kernel) autodetect is within ~10 % of the best arm. bench_precision itself runs the right
// kernel when OPENBLAS_CORETYPE is unset (blas_core_default.cpp).
PAIRBENCH_EXPERIMENT(blas_kernel) {
  return Experiment{
      .name = "precision.blas_kernel",
      .claim = "C18",
      .question = "How much sgemm speed does OpenBLAS's own kernel choice leave on the table on this CPU?",
      .arms = {core_arm("autodetect", ""), core_arm("prescott", "Prescott"), core_arm("haswell", "Haswell"),
               core_arm("skylakex", "SkylakeX")},
      .grid = {{.name = "n", .quick = {"1024"}, .nightly = {"256", "1024", "2048"}}},
      .timing = Timing::kWallClock,
      .metric = {.name = "flop_per_second", .unit = "FLOP/s", .better = Better::kHigher},
      .limits = {{.experiment = "limits.fma_peak", .arm = "fma_loop", .where = {{"threads", "all"}}}},
      .threads = [](const Arm&,
                    const Point& p) { return precision::openblas_busy_threads(eg::parse_shape(p.get("n"))); },
      .verdict = {{.test = VerdictCheck::Test::kBetter, .threshold = 1.0}},
      .figure = {.kind = FigureKind::kAccuracy, .counter = "rel_error"},
  };
}

}  // namespace pairbench::bench
