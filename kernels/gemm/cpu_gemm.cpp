// The naive and the blocked fp32 GEMM. The blocked one's micro-kernels are compiled per target and
// picked at run time; packing zero-pads edge panels, and edge tiles go through a small buffer.
#include "kernels/gemm/cpu_gemm.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <stdexcept>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace pairbench::kernels::gemm {

void gemm_naive(const float* a, const float* b, float* c, std::int64_t m, std::int64_t n, std::int64_t k) {
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      float acc = 0;
      for (std::int64_t p = 0; p < k; ++p) acc += a[i * k + p] * b[p * n + j];
      c[i * n + j] = acc;
    }
  }
}

namespace {

// Cache blocking: an A block (MC x KC, 120 KiB) stays in L2, a B micro-panel (KC x NR, <= 32 KiB)
// in L1, the B panel (KC x NC, <= 4 MiB) in L3. MC is a multiple of every MR (8, 6, 4).
constexpr std::int64_t kKc = 256, kMc = 120, kNc = 4096;

// Computes the MR x NR tile kc-deep from packed micro-panels; C += tile if accumulate, else C = tile.
using MicroKernel = void (*)(std::int64_t kc, const float* ap, const float* bp, float* c, std::int64_t ldc,
                             bool accumulate);

struct Kernel {
  int mr, nr;
  MicroKernel fn;
  const char* name;
};

void micro_portable(std::int64_t kc, const float* ap, const float* bp, float* c, std::int64_t ldc, bool accumulate) {
  constexpr int kMr = 4, kNr = 8;
  float acc[kMr][kNr] = {};
  for (std::int64_t p = 0; p < kc; ++p) {
    for (int i = 0; i < kMr; ++i) {
      for (int j = 0; j < kNr; ++j) acc[i][j] += ap[p * kMr + i] * bp[p * kNr + j];
    }
  }
  for (int i = 0; i < kMr; ++i) {
    for (int j = 0; j < kNr; ++j) c[i * ldc + j] = accumulate ? c[i * ldc + j] + acc[i][j] : acc[i][j];
  }
}

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) void micro_avx2(std::int64_t kc, const float* ap, const float* bp, float* c,
                                                    std::int64_t ldc, bool accumulate) {
  constexpr int kMr = 6;  // 6 x 16: 12 ymm accumulators + 2 B vectors + 1 broadcast of 16 registers
  __m256 acc[kMr][2];
#pragma GCC unroll 6
  for (int i = 0; i < kMr; ++i) acc[i][0] = acc[i][1] = _mm256_setzero_ps();
  for (std::int64_t p = 0; p < kc; ++p) {
    const __m256 b0 = _mm256_loadu_ps(bp), b1 = _mm256_loadu_ps(bp + 8);
#pragma GCC unroll 6
    for (int i = 0; i < kMr; ++i) {
      const __m256 av = _mm256_broadcast_ss(ap + i);
      acc[i][0] = _mm256_fmadd_ps(av, b0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(av, b1, acc[i][1]);
    }
    ap += kMr;
    bp += 16;
  }
#pragma GCC unroll 6
  for (int i = 0; i < kMr; ++i) {
    float* row = c + i * ldc;
    if (accumulate) {
      acc[i][0] = _mm256_add_ps(acc[i][0], _mm256_loadu_ps(row));
      acc[i][1] = _mm256_add_ps(acc[i][1], _mm256_loadu_ps(row + 8));
    }
    _mm256_storeu_ps(row, acc[i][0]);
    _mm256_storeu_ps(row + 8, acc[i][1]);
  }
}

__attribute__((target("avx512f"))) void micro_avx512(std::int64_t kc, const float* ap, const float* bp, float* c,
                                                     std::int64_t ldc, bool accumulate) {
  constexpr int kMr = 8;  // 8 x 32: 16 zmm accumulators, 2 B vectors, 1 broadcast of 32 registers
  __m512 acc[kMr][2];
#pragma GCC unroll 8
  for (int i = 0; i < kMr; ++i) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
  for (std::int64_t p = 0; p < kc; ++p) {
    const __m512 b0 = _mm512_loadu_ps(bp), b1 = _mm512_loadu_ps(bp + 16);
#pragma GCC unroll 8
    for (int i = 0; i < kMr; ++i) {
      const __m512 av = _mm512_set1_ps(ap[i]);
      acc[i][0] = _mm512_fmadd_ps(av, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(av, b1, acc[i][1]);
    }
    ap += kMr;
    bp += 32;
  }
#pragma GCC unroll 8
  for (int i = 0; i < kMr; ++i) {
    float* row = c + i * ldc;
    if (accumulate) {
      acc[i][0] = _mm512_add_ps(acc[i][0], _mm512_loadu_ps(row));
      acc[i][1] = _mm512_add_ps(acc[i][1], _mm512_loadu_ps(row + 16));
    }
    _mm512_storeu_ps(row, acc[i][0]);
    _mm512_storeu_ps(row + 16, acc[i][1]);
  }
}
#endif

Kernel kernel_of(BlockedKernel which) {
  switch (which) {
#if defined(__x86_64__)
    case BlockedKernel::kAvx512:
      return Kernel{8, 32, micro_avx512, "avx512f 8x32"};
    case BlockedKernel::kAvx2:
      return Kernel{6, 16, micro_avx2, "avx2+fma 6x16"};
#else
    case BlockedKernel::kAvx512:
    case BlockedKernel::kAvx2:
#endif
    case BlockedKernel::kPortable:
      break;
  }
  return Kernel{4, 8, micro_portable, "portable 4x8"};
}

const Kernel& kernel() {
  static const Kernel chosen = [] {
    for (BlockedKernel k : {BlockedKernel::kAvx512, BlockedKernel::kAvx2}) {
      if (blocked_kernel_supported(k)) return kernel_of(k);
    }
    return kernel_of(BlockedKernel::kPortable);
  }();
  return chosen;
}

// B[pc.., jc..] (kc x nc, leading dimension ldb) -> micro-panels of nr columns, each kc x nr row-major.
void pack_b(const float* b, std::int64_t ldb, std::int64_t kc, std::int64_t nc, int nr, float* out) {
  for (std::int64_t js = 0; js < nc; js += nr) {
    const std::int64_t w = std::min<std::int64_t>(nr, nc - js);
    for (std::int64_t p = 0; p < kc; ++p) {
      const float* src = b + p * ldb + js;
      std::int64_t j = 0;
      for (; j < w; ++j) out[j] = src[j];
      for (; j < nr; ++j) out[j] = 0;
      out += nr;
    }
  }
}

// A[ic.., pc..] (mc x kc, leading dimension lda) -> micro-panels of mr rows, each kc x mr (column of A first).
void pack_a(const float* a, std::int64_t lda, std::int64_t mc, std::int64_t kc, int mr, float* out) {
  for (std::int64_t is = 0; is < mc; is += mr) {
    const std::int64_t h = std::min<std::int64_t>(mr, mc - is);
    for (std::int64_t p = 0; p < kc; ++p) {
      std::int64_t i = 0;
      for (; i < h; ++i) out[i] = a[(is + i) * lda + p];
      for (; i < mr; ++i) out[i] = 0;
      out += mr;
    }
  }
}

struct AlignedFloats {
  explicit AlignedFloats(std::size_t n)
      : p(static_cast<float*>(::operator new[](std::max<std::size_t>(n, 1) * sizeof(float), std::align_val_t(64)))) {}
  ~AlignedFloats() { ::operator delete[](p, std::align_val_t(64)); }
  AlignedFloats(const AlignedFloats&) = delete;
  AlignedFloats& operator=(const AlignedFloats&) = delete;
  float* p;
};

void gemm_blocked_with(const float* a, const float* b, float* c, std::int64_t m, std::int64_t n, std::int64_t k,
                       const Kernel& kern);

}  // namespace

const char* gemm_blocked_kernel() { return kernel().name; }

bool blocked_kernel_supported(BlockedKernel kernel) {
#if defined(__x86_64__)
  switch (kernel) {
    case BlockedKernel::kAvx512:
      return __builtin_cpu_supports("avx512f");
    case BlockedKernel::kAvx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case BlockedKernel::kPortable:
      return true;
  }
  return false;
#else
  return kernel == BlockedKernel::kPortable;
#endif
}

void gemm_blocked(const float* a, const float* b, float* c, std::int64_t m, std::int64_t n, std::int64_t k) {
  gemm_blocked_with(a, b, c, m, n, k, kernel());
}

void gemm_blocked(const float* a, const float* b, float* c, std::int64_t m, std::int64_t n, std::int64_t k,
                  BlockedKernel which) {
  if (!blocked_kernel_supported(which)) throw std::invalid_argument("gemm_blocked: this CPU cannot run that kernel");
  gemm_blocked_with(a, b, c, m, n, k, kernel_of(which));
}

namespace {

void gemm_blocked_with(const float* a, const float* b, float* c, std::int64_t m, std::int64_t n, std::int64_t k,
                       const Kernel& kern) {
  if (m <= 0 || n <= 0) return;
  if (k <= 0) {
    std::fill_n(c, m * n, 0.0f);
    return;
  }
  const int mr = kern.mr, nr = kern.nr;
  const std::int64_t nc_max = std::min(kNc, (n + nr - 1) / nr * nr);
  AlignedFloats bpack(static_cast<std::size_t>(kKc * nc_max));
  AlignedFloats apack(static_cast<std::size_t>(kKc * kMc));
  alignas(64) float edge[8 * 32];  // the largest MR x NR tile
  for (std::int64_t jc = 0; jc < n; jc += kNc) {
    const std::int64_t nc = std::min(kNc, n - jc);
    for (std::int64_t pc = 0; pc < k; pc += kKc) {
      const std::int64_t kc = std::min(kKc, k - pc);
      const bool accumulate = pc > 0;
      pack_b(b + pc * n + jc, n, kc, nc, nr, bpack.p);
      for (std::int64_t ic = 0; ic < m; ic += kMc) {
        const std::int64_t mc = std::min(kMc, m - ic);
        pack_a(a + ic * k + pc, k, mc, kc, mr, apack.p);
        for (std::int64_t jr = 0; jr < nc; jr += nr) {
          const std::int64_t w = std::min<std::int64_t>(nr, nc - jr);
          const float* bp = bpack.p + (jr / nr) * kc * nr;
          for (std::int64_t ir = 0; ir < mc; ir += mr) {
            const std::int64_t h = std::min<std::int64_t>(mr, mc - ir);
            const float* ap = apack.p + (ir / mr) * kc * mr;
            float* ct = c + (ic + ir) * n + jc + jr;
            if (w == nr && h == mr) {
              kern.fn(kc, ap, bp, ct, n, accumulate);
              continue;
            }
            kern.fn(kc, ap, bp, edge, nr, false);  // edge tile: compute in full, write the valid part
            for (std::int64_t i = 0; i < h; ++i) {
              for (std::int64_t j = 0; j < w; ++j) {
                ct[i * n + j] = accumulate ? ct[i * n + j] + edge[i * nr + j] : edge[i * nr + j];
              }
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace pairbench::kernels::gemm
