// precision.cpu_gemm (C10 on a CPU): OpenBLAS sgemm on fp32 inputs vs bf16 inputs (sbgemm where
// the library has it) vs A and B kept in bf16 / fp16 and widened to fp32 on every call.
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

// Expect: 16-bit storage does not speed up GEMM on a CPU without native 16-bit GEMM kernels: the
// math is fp32 either way and widening A and B costs O(n^2) extra passes, so bf16/fp16 storage is
// 0.9-1.0x fp32 at n=1024 (a few % lost) and closer to 1.0x as n grows; the gain is memory only
// (half the bytes for A and B). Their rel_error is ~2e-3 (bf16) and ~3e-4 (fp16) against ~3e-7.
// Target (issue 4): fp32 sgemm >= 80 % of this machine's FP32 FMA peak at n >= 1024. A Target's
// bound is absolute, so the target shows as the fp32 arm's "% of limit" against limits.fma_peak.
PAIRBENCH_EXPERIMENT(cpu_gemm) {
  return Experiment{
      .name = "precision.cpu_gemm",
      .claim = "C10",
      .question = "On a CPU, does keeping GEMM inputs in bf16 or fp16 speed it up, and what does it cost in accuracy?",
      .arms = {{.name = "fp32", .run = arm(CpuGemm::kOpenblas)},
               {.name = "bf16_sbgemm",
                .run = arm(CpuGemm::kBf16Sbgemm),
                .unavailable = [](const Point&) -> std::string {
                  return kernels::gemm::openblas_has_sbgemm()
                             ? ""
                             : "this OpenBLAS has no cblas_sbgemm (Debian's 0.3.21 is built without BUILD_BFLOAT16)";
                }},
               {.name = "bf16_storage", .run = arm(CpuGemm::kBf16Storage)},
               {.name = "fp16_storage", .run = arm(CpuGemm::kFp16Storage)}},
      .grid = {{.name = "n",
                .quick = {"1024"},
                .nightly = {"256", "1024", "2048"},
                .full = {"256", "1024", "2048", "4096"}}},
      .timing = Timing::kWallClock,
      .metric = {.name = "flop_per_second", .unit = "FLOP/s", .better = Better::kHigher},
      .limits = {{.experiment = "limits.fma_peak", .arm = "fma_loop", .where = {{"threads", "all"}}}},
      // Every arm ends in an OpenBLAS call (sgemm or sbgemm) on OpenBLAS's threads.
      .threads =
          [](const Arm&, const Point& p) {
            return precision::openblas_busy_threads(kernels::gemm::parse_shape(p.get("n")));
          },
      .verdict = {{.test = VerdictCheck::Test::kBetter, .threshold = 1.0}},
      .figure = {.kind = FigureKind::kAccuracy, .counter = "rel_error"},
  };
}

}  // namespace pairbench::bench
