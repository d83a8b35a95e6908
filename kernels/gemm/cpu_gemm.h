// Hand-written fp32 GEMM on one core: the textbook triple loop and a cache-blocked, register-blocked
// loop (GotoBLAS structure: packed panels sized for L1/L2, an MR x NR micro-kernel in registers).
#pragma once

#include <cstdint>

namespace pairbench::kernels::gemm {

// Row-major C[m x n] = A[m x k] * B[k x n] (C is overwritten). Single-threaded.
// i-j-k order, one dot product per entry, B walked down its columns: what C19's "naive loops" means.
void gemm_naive(const float* a, const float* b, float* c, std::int64_t m, std::int64_t n, std::int64_t k);
// B panels of KC x NC and A blocks of MC x KC packed into micro-panels; an AVX-512 8x32, AVX2 6x16
// or portable 4x8 micro-kernel (chosen at run time, the build has no -march).
void gemm_blocked(const float* a, const float* b, float* c, std::int64_t m, std::int64_t n, std::int64_t k);
const char* gemm_blocked_kernel();  // the one gemm_blocked uses: "avx512f 8x32", "avx2+fma 6x16", "portable 4x8"

// Each micro-kernel on its own, so tests cover the ones this CPU would not pick.
enum class BlockedKernel { kAvx512, kAvx2, kPortable };
bool blocked_kernel_supported(BlockedKernel kernel);
void gemm_blocked(const float* a, const float* b, float* c, std::int64_t m, std::int64_t n, std::int64_t k,
                  BlockedKernel kernel);  // std::invalid_argument when this CPU cannot run it

}  // namespace pairbench::kernels::gemm
