// OpenBLAS calls, kernel classification, the start-up re-exec that picks the right kernel, and
// the in-process checks that an OPENBLAS_* environment arm is in effect.
#include "kernels/gemm/openblas.h"

#include <cblas.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace pairbench::kernels::gemm {
namespace {

constexpr const char* kAutodetectedVar = "PAIRBENCH_OPENBLAS_AUTODETECTED";

blasint as_blasint(std::int64_t v, const char* what) {
  if (v < 0 || v > INT_MAX) throw std::invalid_argument(std::string(what) + " out of range for 32-bit BLAS");
  return static_cast<blasint>(v);
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string trim(const char* s) {
  std::string out = s ? s : "";
  while (!out.empty() && std::isspace(static_cast<unsigned char>(out.back()))) out.pop_back();
  while (!out.empty() && std::isspace(static_cast<unsigned char>(out.front()))) out.erase(out.begin());
  return out;
}

using SbgemmFn = void (*)(CBLAS_ORDER, CBLAS_TRANSPOSE, CBLAS_TRANSPOSE, blasint, blasint, blasint, float,
                          const std::uint16_t*, blasint, const std::uint16_t*, blasint, float, float*, blasint);
SbgemmFn sbgemm_fn() {
  static const auto fn = reinterpret_cast<SbgemmFn>(dlsym(RTLD_DEFAULT, "cblas_sbgemm"));
  return fn;
}

}  // namespace

void openblas_sgemm(const float* a, const float* b, float* c, std::int64_t m, std::int64_t n, std::int64_t k) {
  const blasint bm = as_blasint(m, "m"), bn = as_blasint(n, "n"), bk = as_blasint(k, "k");
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, bm, bn, bk, 1.0f, a, std::max(bk, 1), b, std::max(bn, 1), 0.0f,
              c, std::max(bn, 1));
}

bool openblas_has_sbgemm() { return sbgemm_fn() != nullptr; }

void openblas_sbgemm(const elementwise::Bf16* a, const elementwise::Bf16* b, float* c, std::int64_t m, std::int64_t n,
                     std::int64_t k) {
  const SbgemmFn fn = sbgemm_fn();
  if (!fn) throw std::runtime_error("this OpenBLAS has no cblas_sbgemm (built without BUILD_BFLOAT16)");
  const blasint bm = as_blasint(m, "m"), bn = as_blasint(n, "n"), bk = as_blasint(k, "k");
  static_assert(sizeof(elementwise::Bf16) == sizeof(std::uint16_t));
  fn(CblasRowMajor, CblasNoTrans, CblasNoTrans, bm, bn, bk, 1.0f, reinterpret_cast<const std::uint16_t*>(a),
     std::max(bk, 1), reinterpret_cast<const std::uint16_t*>(b), std::max(bn, 1), 0.0f, c, std::max(bn, 1));
}

std::string openblas_core() { return trim(openblas_get_corename()); }
int openblas_threads() { return openblas_get_num_threads(); }

int core_isa_level(const std::string& core) {
  // OpenBLAS 0.3.21's x86_64 DYNAMIC_ARCH core names (driver/others/dynamic.c).
  static const std::array<const char*, 3> kAvx512 = {"skylakex", "cooperlake", "sapphirerapids"};
  static const std::array<const char*, 2> kAvx2 = {"haswell", "zen"};
  static const std::array<const char*, 21> kOlder = {
      "katmai", "coppermine",  "northwood", "prescott",  "banias",     "atom",          "core2",
      "penryn", "dunnington",  "nehalem",   "athlon",    "opteron",    "opteron(sse3)", "barcelona",
      "nano",   "sandybridge", "bobcat",    "bulldozer", "piledriver", "steamroller",   "excavator"};
  const std::string c = lower(core);
  auto in = [&](const auto& list) { return std::find(list.begin(), list.end(), c) != list.end(); };
  if (in(kAvx512)) return 2;
  if (in(kAvx2)) return 1;
  if (in(kOlder)) return 0;
  return -1;
}

CpuVectorFeatures this_cpu_features() {
  CpuVectorFeatures f;
#if defined(__x86_64__)
  __builtin_cpu_init();  // we may run from a constructor, before libgcc's own detection has run
  // __builtin_cpu_supports also checks that the OS saves the AVX / AVX-512 register state (XCR0).
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512vl = __builtin_cpu_supports("avx512vl");
  f.avx512dq = __builtin_cpu_supports("avx512dq");
  f.avx512cd = __builtin_cpu_supports("avx512cd");
#endif
  return f;
}

std::string best_core_for(const CpuVectorFeatures& cpu) {
  if (cpu.avx512f && cpu.avx512cd && cpu.avx512bw && cpu.avx512dq && cpu.avx512vl) return "SkylakeX";
  if (cpu.avx2 && cpu.fma) return "Haswell";
  return "";
}

bool same_core(const std::string& a, const std::string& b) { return !a.empty() && lower(a) == lower(b); }

std::string core_override(const char* coretype_env, const char* marker_env, const std::string& detected,
                          const CpuVectorFeatures& cpu) {
  if (coretype_env || marker_env) return "";  // the user's (or the harness's) choice, or already done once
  const std::string best = best_core_for(cpu);
  const int detected_level = core_isa_level(detected);
  if (best.empty() || detected_level < 0 || detected_level >= core_isa_level(best)) return "";
  return best;
}

void reexec_with_best_core_if_needed(char** argv) {
  const std::string detected = openblas_core();
  const std::string best =
      core_override(std::getenv("OPENBLAS_CORETYPE"), std::getenv(kAutodetectedVar), detected, this_cpu_features());
  if (best.empty()) return;
  if (!argv || !argv[0]) return;
  setenv("OPENBLAS_CORETYPE", best.c_str(), 1);
  setenv(kAutodetectedVar, detected.c_str(), 1);
  execv("/proc/self/exe", argv);
  // Still here: the exec failed. Carry on with OpenBLAS's own choice; every BLAS label says which ran.
  std::fprintf(stderr, "note: could not re-execute with OPENBLAS_CORETYPE=%s (%s); OpenBLAS runs %s\n", best.c_str(),
               std::strerror(errno), detected.c_str());
  unsetenv("OPENBLAS_CORETYPE");
  unsetenv(kAutodetectedVar);
}

EnvCheck check_coretype(const std::string& requested) {
  const char* env = std::getenv("OPENBLAS_CORETYPE");
  const bool set_by_bench = std::getenv(kAutodetectedVar) != nullptr;
  const std::string ran = openblas_core();
  if (requested.empty()) {
    // Detection is in effect when the variable is set empty (the harness's arm) or was never set.
    if ((env && !*env) || (!env && !set_by_bench)) return {EnvCheck::Status::kInEffect, "OpenBLAS detected " + ran};
    return {EnvCheck::Status::kNotSet,
            "run through the harness: needs OPENBLAS_CORETYPE= (empty: OpenBLAS detects the core itself)"};
  }
  if (same_core(ran, requested)) return {EnvCheck::Status::kInEffect, "OpenBLAS runs " + ran};
  if (env && same_core(env, requested)) {
    return {EnvCheck::Status::kIgnored, "OPENBLAS_CORETYPE=" + std::string(env) + " is set but OpenBLAS runs " + ran};
  }
  return {EnvCheck::Status::kNotSet, "run through the harness: needs OPENBLAS_CORETYPE=" + requested};
}

EnvCheck check_threads(int requested) {
  const int threads = openblas_threads();
  const char* env = std::getenv("OPENBLAS_NUM_THREADS");
  const std::string want = std::to_string(requested);
  if (threads == requested) return {EnvCheck::Status::kInEffect, "OpenBLAS runs " + want + " threads"};
  if (env && std::atoi(env) == requested) {
    return {EnvCheck::Status::kIgnored, "OPENBLAS_NUM_THREADS=" + std::string(env) + " is set but OpenBLAS runs " +
                                            std::to_string(threads) + " threads"};
  }
  return {EnvCheck::Status::kNotSet, "run through the harness: needs OPENBLAS_NUM_THREADS=" + want};
}

std::string openblas_kernel_label() {
  const std::string ran = openblas_core();
  std::string label = "OpenBLAS " + ran + ", " + std::to_string(openblas_threads()) + " threads; ";
  const char* env = std::getenv("OPENBLAS_CORETYPE");
  const char* detected = std::getenv(kAutodetectedVar);
  if (env && detected) {
    label += "OPENBLAS_CORETYPE=" + std::string(env) + " set by the bench (OpenBLAS detected " + detected + ")";
  } else if (env && *env) {
    label += "OPENBLAS_CORETYPE=" + std::string(env) + " from the environment";
  } else {
    label += "core detected by OpenBLAS";
  }
  const std::string best = best_core_for(this_cpu_features());
  if (!best.empty() && core_isa_level(ran) >= 0 && core_isa_level(ran) < core_isa_level(best)) {
    label += "; below this CPU's best kernel, " + best;
  }
  return label;
}

}  // namespace pairbench::kernels::gemm
