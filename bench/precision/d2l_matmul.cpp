// precision.d2l_matmul (C19): d2l's ten 1000x1000 fp32 matrix products, on the CPU through OpenBLAS
// and on the GPU through cuBLASLt (wall clock, synchronised once after the ten, as d2l did).
#include <limits>
#include <vector>

#include "bench/common/devices.h"
#include "bench/common/exec.h"
#include "bench/common/experiment.h"
#include "bench/precision/gemm_arms.h"
#include "kernels/gemm/cublas_gemm.h"

namespace pairbench::bench {
namespace {

namespace eg = kernels::gemm;
namespace ew = kernels::elementwise;
constexpr int kProducts = 10;

void run_cublas(benchmark::State& state, const Point& p) {
  const eg::GemmShape s = eg::parse_shape(p.get("n"));
  std::vector<float> a(static_cast<std::size_t>(s.m * s.k)), b(static_cast<std::size_t>(s.k * s.n));
  std::vector<float> c(static_cast<std::size_t>(s.m * s.n), std::numeric_limits<float>::quiet_NaN());
  const std::uint64_t seed = eg::fresh_seed();
  eg::fill_random(a, seed);
  eg::fill_random(b, seed ^ 0x5bd1e995u);
  kernels::cuda::LtGemm gemm(ew::Precision::kFp32, s);
  gemm.upload(a, b);
  gemm.poison_output();
  const kernels::cuda::GemmAlgoChoice algo = gemm.tune(/*max_candidates=*/8, /*launches_per_candidate=*/5);
  gemm.enqueue();
  gemm.download(c);
  const eg::GemmVerification v = eg::verify_gemm(a, b, c, s, ew::Precision::kFp32, eg::fresh_seed());
  state.counters["rel_error"] = v.check.rel_error;
  state.counters["error_bound"] = v.check.bound;
  state.SetLabel("cuBLASLt fp32 " + algo.description + "; " + v.text());
  if (!v.check.ok) return fail_verification(state, v.text());
  mark_verified(state);
  const double wall_s = exec(state, Work{.flop = s.flops() * kProducts}, [&] {
    for (int i = 0; i < kProducts; ++i) gemm.enqueue();
    gemm.sync();
  });
  state.counters["seconds_per_10_products"] = wall_s / static_cast<double>(state.iterations());
}

}  // namespace

// Expect: d2l measured numpy 2.2 s vs a GPU 0.004 s for ten products (random generation included).
// Without generation, OpenBLAS on this 2-core VM does ten 1000^3 products in ~0.06 s with its
// AVX-512 kernel (~350 GFLOP/s; ~0.1 s with Haswell's); cuBLAS on an H100 in ~0.5-1 ms (fp32
// without tensor cores, ~30-50 TFLOP/s at this small size): a ~100x gap, far less than d2l's ~550x.
PAIRBENCH_EXPERIMENT(d2l_matmul) {
  return Experiment{
      .name = "precision.d2l_matmul",
      .claim = "C19",
      .question = "How long do ten 1000x1000 fp32 matrix products take on the CPU (BLAS) vs the GPU (cuBLAS)?",
      .arms = {{.name = "cpu_blas",
                .run =
                    [](benchmark::State& s, const Point& p) {
                      precision::run_cpu_gemm(s, eg::parse_shape(p.get("n")), precision::CpuGemm::kOpenblas, kProducts);
                    }},
               {.name = "cublas", .run = run_cublas, .unavailable = needs_cuda, .cuda = true}},
      .grid = {{.name = "n", .quick = {"1000"}}},
      .timing = Timing::kWallClock,
      .metric = {.name = "flop_per_second", .unit = "FLOP/s", .better = Better::kHigher},
      .limits =
          {{.experiment = "limits.fma_peak", .arm = "fma_loop", .where = {{"threads", "all"}}, .arms = {"cpu_blas"}}},
      // cublas: one host thread launches and waits.
      .threads =
          [](const Arm& a, const Point& p) {
            return a.name == "cpu_blas" ? precision::openblas_busy_threads(eg::parse_shape(p.get("n"))) : 1;
          },
      .verdict = {{.test = VerdictCheck::Test::kBetter, .threshold = 1.0}},
      .figure = {.kind = FigureKind::kAccuracy, .counter = "rel_error"},
  };
}

}  // namespace pairbench::bench
