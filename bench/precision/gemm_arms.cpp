// The CPU GEMM arm shared by precision.cpu_gemm_loops, cpu_gemm, blas_kernel, blas_threads, d2l_matmul.
#include "bench/precision/gemm_arms.h"

#include <sys/resource.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "bench/common/exec.h"
#include "bench/common/experiment.h"
#include "kernels/common/cpus.h"
#include "kernels/elementwise/float16.h"
#include "kernels/gemm/cpu_gemm.h"

namespace pairbench::bench::precision {
namespace {

namespace eg = kernels::gemm;
namespace ew = kernels::elementwise;

ew::Precision precision_of(CpuGemm kind) {
  switch (kind) {
    case CpuGemm::kBf16Sbgemm:
    case CpuGemm::kBf16Storage:
      return ew::Precision::kBf16;
    case CpuGemm::kFp16Storage:
      return ew::Precision::kFp16;
    default:
      return ew::Precision::kFp32;
  }
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

}  // namespace

int openblas_busy_threads(const eg::GemmShape& shape, int num_threads) {
  constexpr double kOneThreadMaxMnk = 4.0 * 65536;  // SMP_THRESHOLD_MIN x GEMM_MULTITHREAD_THRESHOLD
  const double mnk = static_cast<double>(shape.m) * static_cast<double>(shape.n) * static_cast<double>(shape.k);
  if (mnk <= kOneThreadMaxMnk) return 1;
  return num_threads > 0 ? num_threads : kernels::usable_cpus();
}

bool uses_openblas(CpuGemm kind) { return kind != CpuGemm::kNaive && kind != CpuGemm::kBlocked; }

void run_cpu_gemm(benchmark::State& state, const eg::GemmShape& s, CpuGemm kind, int products) {
  const auto mk = static_cast<std::size_t>(s.m * s.k), kn = static_cast<std::size_t>(s.k * s.n),
             mn = static_cast<std::size_t>(s.m * s.n);
  std::vector<float> a(mk), b(kn), c(mn, std::numeric_limits<float>::quiet_NaN());
  const std::uint64_t seed = eg::fresh_seed();
  eg::fill_random(a, seed);
  eg::fill_random(b, seed ^ 0x5bd1e995u);
  // 16-bit arms keep A and B in 16 bits (the point of the storage type) and widen per call.
  std::vector<ew::Bf16> a16b, b16b;
  std::vector<ew::Fp16> a16h, b16h;
  std::vector<float> aw, bw;
  if (kind == CpuGemm::kBf16Sbgemm || kind == CpuGemm::kBf16Storage) {
    a16b.resize(mk);
    b16b.resize(kn);
    ew::convert(std::span<const float>(a), std::span<ew::Bf16>(a16b));
    ew::convert(std::span<const float>(b), std::span<ew::Bf16>(b16b));
  } else if (kind == CpuGemm::kFp16Storage) {
    a16h.resize(mk);
    b16h.resize(kn);
    ew::convert(std::span<const float>(a), std::span<ew::Fp16>(a16h));
    ew::convert(std::span<const float>(b), std::span<ew::Fp16>(b16h));
  }
  if (kind == CpuGemm::kBf16Storage || kind == CpuGemm::kFp16Storage) {
    aw.resize(mk);
    bw.resize(kn);
  }
  auto once = [&] {
    switch (kind) {
      case CpuGemm::kNaive:
        return eg::gemm_naive(a.data(), b.data(), c.data(), s.m, s.n, s.k);
      case CpuGemm::kBlocked:
        return eg::gemm_blocked(a.data(), b.data(), c.data(), s.m, s.n, s.k);
      case CpuGemm::kOpenblas:
        return eg::openblas_sgemm(a.data(), b.data(), c.data(), s.m, s.n, s.k);
      case CpuGemm::kBf16Sbgemm:
        return eg::openblas_sbgemm(a16b.data(), b16b.data(), c.data(), s.m, s.n, s.k);
      case CpuGemm::kBf16Storage:
        ew::convert(std::span<const ew::Bf16>(a16b), std::span<float>(aw));
        ew::convert(std::span<const ew::Bf16>(b16b), std::span<float>(bw));
        return eg::openblas_sgemm(aw.data(), bw.data(), c.data(), s.m, s.n, s.k);
      case CpuGemm::kFp16Storage:
        ew::convert(std::span<const ew::Fp16>(a16h), std::span<float>(aw));
        ew::convert(std::span<const ew::Fp16>(b16h), std::span<float>(bw));
        return eg::openblas_sgemm(aw.data(), bw.data(), c.data(), s.m, s.n, s.k);
    }
  };

  once();  // the verified call, also the warm-up (OpenBLAS wakes its threads, pages get touched)
  const eg::GemmVerification v = eg::verify_gemm(a, b, c, s, precision_of(kind), eg::fresh_seed());
  state.counters["rel_error"] = v.check.rel_error;
  state.counters["error_bound"] = v.check.bound;
  std::string label;
  if (uses_openblas(kind)) label = eg::openblas_kernel_label() + "; ";
  if (kind == CpuGemm::kBlocked) label = std::string("blocked ") + eg::gemm_blocked_kernel() + ", 1 thread; ";
  if (kind == CpuGemm::kNaive) label = "naive i-j-k, 1 thread; ";
  if (kind == CpuGemm::kBf16Storage || kind == CpuGemm::kFp16Storage) {
    label += std::string("widening via ") + ew::path_name(ew::best_path_for_fp16()) + "; ";
  }
  label += v.text();
  state.SetLabel(label);
  if (!v.check.ok) return fail_verification(state, v.text());
  mark_verified(state);

  const double cpu_before = cpu_seconds();
  const double wall_s = exec(
      state, Work{.flop = s.flops() * products}, [] {},
      [&] {
        for (int i = 0; i < products; ++i) once();
      },
      [&] { benchmark::DoNotOptimize(c.data()); });
  const double iterations = static_cast<double>(state.iterations());
  state.counters["threads"] = uses_openblas(kind) ? eg::openblas_threads() : 1;
  // C20: how many cores the process kept busy (user + system CPU time over wall time), spin-waits included.
  state.counters["cpu_cores_busy"] = (cpu_seconds() - cpu_before) / wall_s;
  if (products > 1) state.counters["seconds_per_" + std::to_string(products) + "_products"] = wall_s / iterations;
}

bool env_in_effect(benchmark::State& state, const eg::EnvCheck& check) {
  switch (check.status) {
    case eg::EnvCheck::Status::kInEffect:
      return true;
    case eg::EnvCheck::Status::kNotSet:
      state.SkipWithError(("not_supported: " + check.message).c_str());
      return false;
    case eg::EnvCheck::Status::kIgnored:
      fail_verification(state, check.message);
      return false;
  }
  return false;
}

}  // namespace pairbench::bench::precision
