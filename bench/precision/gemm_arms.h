// Shared by bench_precision's CPU GEMM experiments: one verified, timed GEMM arm (naive, blocked,
// OpenBLAS, 16-bit storage), and turning an OpenBLAS environment check into the arm's status.
#pragma once

#include <benchmark/benchmark.h>

#include "kernels/gemm/gemm_reference.h"
#include "kernels/gemm/openblas.h"

namespace pairbench::bench::precision {

enum class CpuGemm {
  kNaive,        // gemm_naive, one core
  kBlocked,      // gemm_blocked, one core
  kOpenblas,     // cblas_sgemm, OpenBLAS's threads
  kBf16Sbgemm,   // cblas_sbgemm on bf16 A and B (where the library has it)
  kBf16Storage,  // A and B kept in bf16, widened to fp32 on every call, then cblas_sgemm
  kFp16Storage,  // the same with fp16
};
bool uses_openblas(CpuGemm kind);

// Fresh random A and B, C poisoned with NaN, one call verified against fp64 (all entries or a
// sample, see verify_gemm) before anything is timed; then `products` calls per timed iteration.
// Sets flop_per_second (the deciding metric), rel_error, error_bound, threads, and a label with
// the kernel that ran and how the check was done.
void run_cpu_gemm(benchmark::State& state, const kernels::gemm::GemmShape& shape, CpuGemm kind, int products = 1);

// Threads an OpenBLAS sgemm of this shape keeps busy, the caller included (Experiment::threads).
// OpenBLAS 0.3.21 (interface/gemm.c) runs a product of m*n*k <= 4 * 65536 on the calling thread
// alone; larger ones on `num_threads` (OPENBLAS_NUM_THREADS), or where that is 0 (unset) on one
// thread per CPU of the process's affinity mask (kernels/common/cpus.h's usable CPUs).
int openblas_busy_threads(const kernels::gemm::GemmShape& shape, int num_threads = 0);

// True when the environment arm is in effect; otherwise reports not_supported (not set in this
// process: run through the harness) or incorrect (set, but OpenBLAS ignored it) and returns false.
bool env_in_effect(benchmark::State& state, const kernels::gemm::EnvCheck& check);

}  // namespace pairbench::bench::precision
