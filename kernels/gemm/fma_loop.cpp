// FMA throughput loop (AVX-512 / AVX2 / SSE2, picked at run time), clock measurement, FMA-unit table.
#include "kernels/gemm/fma_loop.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#endif

namespace pairbench::kernels::gemm {
namespace {

#if defined(__x86_64__)
__attribute__((target("avx512f"))) double fma_avx512(std::int64_t iterations, float check[16]) {
  volatile float one = 1.0f;
  const __m512 m = _mm512_set1_ps(one), a = _mm512_set1_ps(one);
  __m512 acc[16];
#pragma GCC unroll 16
  for (int j = 0; j < 16; ++j) acc[j] = _mm512_set1_ps(static_cast<float>(j));  // distinct: no CSE
  for (std::int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 16
    for (int j = 0; j < 16; ++j) acc[j] = _mm512_fmadd_ps(acc[j], m, a);
  }
#pragma GCC unroll 16
  for (int j = 0; j < 16; ++j) check[j] = _mm512_cvtss_f32(acc[j]) - static_cast<float>(j);
  return static_cast<double>(iterations) * 16 * 16 * 2;
}

__attribute__((target("avx2,fma"))) double fma_avx2(std::int64_t iterations, float check[16]) {
  volatile float one = 1.0f;
  const __m256 m = _mm256_set1_ps(one), a = _mm256_set1_ps(one);
  __m256 acc[12];  // 12 + m + a = 14 of 16 ymm registers
#pragma GCC unroll 12
  for (int j = 0; j < 12; ++j) acc[j] = _mm256_set1_ps(static_cast<float>(j));
  for (std::int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) acc[j] = _mm256_fmadd_ps(acc[j], m, a);
  }
#pragma GCC unroll 12
  for (int j = 0; j < 12; ++j) check[j] = _mm256_cvtss_f32(acc[j]) - static_cast<float>(j);
  for (int j = 12; j < 16; ++j) check[j] = static_cast<float>(iterations);
  return static_cast<double>(iterations) * 12 * 8 * 2;
}

double fma_sse2(std::int64_t iterations, float check[16]) {
  volatile float one = 1.0f;
  const __m128 m = _mm_set1_ps(one), a = _mm_set1_ps(one);
  __m128 acc[12];
#pragma GCC unroll 12
  for (int j = 0; j < 12; ++j) acc[j] = _mm_set1_ps(static_cast<float>(j));
  for (std::int64_t i = 0; i < iterations; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) acc[j] = _mm_add_ps(_mm_mul_ps(acc[j], m), a);
  }
#pragma GCC unroll 12
  for (int j = 0; j < 12; ++j) check[j] = _mm_cvtss_f32(acc[j]) - static_cast<float>(j);
  for (int j = 12; j < 16; ++j) check[j] = static_cast<float>(iterations);
  return static_cast<double>(iterations) * 12 * 4 * 2;
}

struct CpuId {
  std::string vendor;
  unsigned family = 0, model = 0;
};
CpuId cpu_id() {
  CpuId id;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0, &a, &b, &c, &d)) {
    char v[13] = {};
    std::memcpy(v, &b, 4);
    std::memcpy(v + 4, &d, 4);
    std::memcpy(v + 8, &c, 4);
    id.vendor = v;
  }
  if (__get_cpuid(1, &a, &b, &c, &d)) {
    const unsigned base_family = (a >> 8) & 0xF, base_model = (a >> 4) & 0xF;
    id.family = base_family == 0xF ? base_family + ((a >> 20) & 0xFF) : base_family;
    id.model = (base_family == 0xF || base_family == 0x6) ? (((a >> 16) & 0xF) << 4) | base_model : base_model;
  }
  return id;
}
#endif

}  // namespace

FmaIsa fma_isa() {
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx512f")) return {"avx512f", 16, 16};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return {"avx2+fma", 8, 12};
  return {"sse2 (mul+add)", 4, 12};
#else
  return {"none", 0, 0};
#endif
}

double fma_block(std::int64_t iterations, float check[16]) {
#if defined(__x86_64__)
  static const auto fn = [] {
    const FmaIsa isa = fma_isa();
    if (isa.lanes == 16) return &fma_avx512;
    if (isa.lanes == 8) return &fma_avx2;
    return &fma_sse2;
  }();
  return fn(iterations, check);
#else
  for (int j = 0; j < 16; ++j) check[j] = 0;
  return 0;
#endif
}

double measure_clock_hz(double seconds, int tries) {
#if defined(__x86_64__)
  using Clock = std::chrono::steady_clock;
  constexpr int kAddsPerIteration = 100;
  auto run = [](std::uint64_t iterations) {
    std::uint64_t x = 0, n = iterations;
    const std::uint64_t one = 1;
    const auto t0 = Clock::now();
    asm volatile(
        "1:\n\t"
        ".rept 100\n\t"
        "add %[one], %[x]\n\t"
        ".endr\n\t"
        "dec %[n]\n\t"
        "jnz 1b"
        : [x] "+r"(x), [n] "+r"(n)
        : [one] "r"(one)
        : "cc");
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  // Calibrate to ~`seconds` per try, then keep the fastest (least interrupted) try.
  std::uint64_t iterations = 10000;
  double t = run(iterations);
  while (t < seconds / 10) {
    iterations *= 4;
    t = run(iterations);
  }
  iterations = static_cast<std::uint64_t>(static_cast<double>(iterations) * seconds / t) + 1;
  double best = 0;
  for (int i = 0; i < std::max(tries, 1); ++i) {
    best = std::max(best, static_cast<double>(iterations) * kAddsPerIteration / run(iterations));
  }
  return best;
#else
  return 0;
#endif
}

double cpuinfo_mhz() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("cpu MHz", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return std::atof(line.c_str() + colon + 1);
    }
  }
  return 0;
}

FmaUnits fma_units_per_core() {
  const FmaIsa isa = fma_isa();
#if defined(__x86_64__)
  const CpuId id = cpu_id();
  char fam[64];
  std::snprintf(fam, sizeof fam, "%s family 0x%x model 0x%x", id.vendor.c_str(), id.family, id.model);
  const std::string where = fam;
  if (isa.lanes == 4) return {1, where + ": no FMA, one mul + one add per cycle assumed"};
  if (id.vendor == "AuthenticAMD") {
    if (id.family >= 0x1A) {
      return {2, where +
                     " (Zen 5): two 512-bit FMA pipes assumed (EPYC/desktop Zen 5; mobile Zen 5 has a "
                     "256-bit datapath, which would halve this)"};
    }
    if (id.family == 0x19) {
      if (isa.lanes == 16) return {1, where + " (Zen 4): two 256-bit FMA pipes, one 512-bit FMA per cycle"};
      return {2, where + " (Zen 3): two 256-bit FMA pipes"};
    }
    if (id.family == 0x17) {
      if (id.model >= 0x30) return {2, where + " (Zen 2): two 256-bit FMA pipes"};
      return {1, where + " (Zen 1): 256-bit FMAs split into two 128-bit halves"};
    }
    return {1, where + ": unknown AMD core, one FMA per cycle assumed"};
  }
  if (id.vendor == "GenuineIntel") {
    if (isa.lanes == 16) {
      return {2, where +
                     ": two 512-bit FMA units assumed (Xeon Gold/Platinum and later; Silver/Bronze and "
                     "some client parts have one)"};
    }
    return {2, where + ": two 256-bit FMA units (Haswell and later)"};
  }
  return {1, where + ": unknown vendor, one FMA per cycle assumed"};
#else
  return {1, "not x86-64"};
#endif
}

}  // namespace pairbench::kernels::gemm
