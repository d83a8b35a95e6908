// OpenBLAS as the suite uses it: sgemm (and sbgemm where the library has it), which kernel and how
// many threads it runs, the right kernel for this CPU, and checks that an environment arm
// (OPENBLAS_CORETYPE, OPENBLAS_NUM_THREADS) really is in effect in this process.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/elementwise/float16.h"

namespace pairbench::kernels::gemm {

// Row-major C[m x n] = A[m x k] * B[k x n] through cblas_sgemm, on OpenBLAS's own threads.
void openblas_sgemm(const float* a, const float* b, float* c, std::int64_t m, std::int64_t n, std::int64_t k);
// cblas_sbgemm (bf16 inputs, fp32 accumulation and output), looked up at run time: Debian's
// OpenBLAS 0.3.21 is built without it (BUILD_BFLOAT16=0). Throws std::runtime_error when absent.
bool openblas_has_sbgemm();
void openblas_sbgemm(const elementwise::Bf16* a, const elementwise::Bf16* b, float* c, std::int64_t m, std::int64_t n,
                     std::int64_t k);

std::string openblas_core();  // openblas_get_corename(), e.g. "SkylakeX", "Haswell", "Prescott"
int openblas_threads();       // openblas_get_num_threads()

// Kernel classes by the widest FP32 FMA vectors they use: 2 = AVX-512, 1 = AVX2+FMA, 0 = older,
// -1 = a name this table does not know (then nothing is overridden).
int core_isa_level(const std::string& core);
struct CpuVectorFeatures {
  bool avx2 = false, fma = false, avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false,
       avx512cd = false;
};
CpuVectorFeatures this_cpu_features();  // what this CPU and OS enable (cpuid + XCR0)
// The kernel OpenBLAS should run on such a CPU: "SkylakeX" with AVX-512 F/CD/BW/DQ/VL, "Haswell"
// with AVX2+FMA, "" otherwise (nothing better than what OpenBLAS picks on its own).
std::string best_core_for(const CpuVectorFeatures& cpu);
bool same_core(const std::string& a, const std::string& b);  // case-insensitive

// The bench start-up fix. OpenBLAS reads OPENBLAS_CORETYPE in its library constructor, before any
// code of ours runs, so setting it from main() is too late. Called from a constructor of the bench
// binary (after OpenBLAS's own): when OPENBLAS_CORETYPE is unset and the kernel OpenBLAS detected
// is of a lower class than this CPU can run, sets OPENBLAS_CORETYPE to the right kernel, notes what
// OpenBLAS had detected in PAIRBENCH_OPENBLAS_AUTODETECTED, and re-executes /proc/self/exe with the
// same arguments. Returns when nothing needs fixing (or the exec failed, which is reported on stderr).
// An OPENBLAS_CORETYPE that is set, even empty (the harness's "let OpenBLAS detect" arm), is respected.
void reexec_with_best_core_if_needed(char** argv);
// Its decision, testable: the core to set, or "" to leave OpenBLAS alone. `coretype_env` and
// `marker_env` are the current OPENBLAS_CORETYPE and PAIRBENCH_OPENBLAS_AUTODETECTED (nullptr: unset).
std::string core_override(const char* coretype_env, const char* marker_env, const std::string& detected,
                          const CpuVectorFeatures& cpu);

// Whether an environment arm is in effect in this process.
struct EnvCheck {
  enum class Status {
    kInEffect,  // run and time it
    kNotSet,    // the variable was not given to this process: not_supported, run through the harness
    kIgnored,   // the variable is set but OpenBLAS does something else: incorrect
  } status = Status::kNotSet;
  std::string message;
};
// `requested` is a core name, or "" for "whatever OpenBLAS detects on its own".
EnvCheck check_coretype(const std::string& requested);
EnvCheck check_threads(int requested);

// "OpenBLAS SkylakeX, 2 threads; OPENBLAS_CORETYPE=SkylakeX set by the bench (OpenBLAS detected
// Prescott)": which kernel ran and why, for every BLAS arm's label.
std::string openblas_kernel_label();

}  // namespace pairbench::kernels::gemm
