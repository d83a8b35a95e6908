// bf16 / fp16 conversions: the scalar reference and the F16C, AVX-512F and AVX-512 BF16 bulk paths,
// each compiled for its own target (the build has no -march), picked at run time.
#include "kernels/elementwise/float16.h"

#include <bit>
#include <stdexcept>

#if defined(__x86_64__)
#include <immintrin.h>
#define PB_X86 1
#else
#define PB_X86 0
#endif

namespace pairbench::kernels::elementwise {

Bf16 to_bf16(float f) {
  const auto x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return {static_cast<std::uint16_t>((x >> 16) | 0x0040u)};  // quiet NaN
  // Round to nearest even at bit 16: add 0x7FFF plus the lowest kept bit; a carry may reach inf.
  return {static_cast<std::uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16)};
}

float to_float(Bf16 h) { return std::bit_cast<float>(static_cast<std::uint32_t>(h.bits) << 16); }

Fp16 to_fp16(float f) {
  const auto x = std::bit_cast<std::uint32_t>(f);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t a = x & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return {static_cast<std::uint16_t>(sign | 0x7E00u | ((a >> 13) & 0x3FFu))};  // NaN
  if (a >= 0x47800000u) return {static_cast<std::uint16_t>(sign | 0x7C00u)};                        // >= 2^16: infinity
  if (a >= 0x38800000u) {
    // Normal fp16 (|f| >= 2^-14): round to nearest even at bit 13, then rebias 127 -> 15. A carry
    // out of the mantissa bumps the exponent, up to 0x7C00 (infinity) for [65520, 65536).
    const std::uint32_t rounded = a + 0xFFFu + ((a >> 13) & 1u);
    return {static_cast<std::uint16_t>(sign | ((rounded >> 13) - ((127u - 15u) << 10)))};
  }
  if (a <= 0x33000000u) return {sign};  // <= 2^-25: rounds to zero (2^-25 itself ties to even, 0)
  // Subnormal fp16: units of 2^-24. f = mant * 2^(e - 150), so q = mant * 2^(e - 126).
  const std::uint32_t e = a >> 23;  // 102 .. 112
  const std::uint32_t mant = (a & 0x7FFFFFu) | 0x800000u;
  const std::uint32_t shift = 126u - e;  // 14 .. 24
  std::uint32_t q = mant >> shift;
  const std::uint32_t rest = mant & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1u);
  if (rest > half || (rest == half && (q & 1u))) ++q;  // may become 0x400: the smallest normal
  return {static_cast<std::uint16_t>(sign | q)};
}

float to_float(Fp16 h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h.bits & 0x8000u) << 16;
  const std::uint32_t e = (h.bits >> 10) & 0x1Fu;
  const std::uint32_t m = h.bits & 0x3FFu;
  if (e == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (m ? 0x400000u | (m << 13) : 0u));
  if (e == 0) {
    const float magnitude = static_cast<float>(m) * 0x1p-24f;  // exact: m < 2^10
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((e + 112u) << 23) | (m << 13));
}

namespace {

template <typename From, typename To, typename Fn>
void scalar_loop(const From* in, To* out, std::size_t n, Fn fn) {
  for (std::size_t i = 0; i < n; ++i) out[i] = fn(in[i]);
}
Bf16 bf16_of(float f) { return to_bf16(f); }
Fp16 fp16_of(float f) { return to_fp16(f); }
float float_of_bf16(Bf16 h) { return to_float(h); }
float float_of_fp16(Fp16 h) { return to_float(h); }

#if PB_X86
// GCC 12's AVX-512 headers start some intrinsics from _mm512_undefined_*(), which -Wmaybe-uninitialized
// reports once inlined into a target("avx512f") function (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
// --- AVX2 + F16C: 8 lanes ---
__attribute__((target("avx2,f16c"))) void f32_to_f16_avx2(const float* in, Fp16* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), h);
  }
  scalar_loop(in + i, out + i, n - i, fp16_of);
}
__attribute__((target("avx2,f16c"))) void f16_to_f32_avx2(const Fp16* in, float* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  }
  scalar_loop(in + i, out + i, n - i, float_of_fp16);
}
// Round to nearest even in integer lanes, as the scalar to_bf16 does; NaN lanes become quiet NaN.
__attribute__((target("avx2"))) __m256i bf16_round_avx2(__m256 v) {
  const __m256i x = _mm256_castps_si256(v);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7FFF)), lsb), 16);
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
  const __m256 nan = _mm256_cmp_ps(v, v, _CMP_UNORD_Q);
  return _mm256_blendv_epi8(rounded, quiet, _mm256_castps_si256(nan));
}
__attribute__((target("avx2"))) void f32_to_bf16_avx2(const float* in, Bf16* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i lo = bf16_round_avx2(_mm256_loadu_ps(in + i));
    const __m256i hi = bf16_round_avx2(_mm256_loadu_ps(in + i + 8));
    // packus works within 128-bit lanes: (lo0 hi0 lo1 hi1) -> reorder to (lo0 lo1 hi0 hi1).
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xD8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), packed);
  }
  scalar_loop(in + i, out + i, n - i, bf16_of);
}
__attribute__((target("avx2"))) void bf16_to_f32_avx2(const Bf16* in, float* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm256_slli_epi32(w, 16));
  }
  scalar_loop(in + i, out + i, n - i, float_of_bf16);
}

// --- AVX-512F: 16 lanes ---
__attribute__((target("avx512f"))) void f32_to_f16_avx512(const float* in, Fp16* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256i h = _mm512_cvtps_ph(_mm512_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), h);
  }
  scalar_loop(in + i, out + i, n - i, fp16_of);
}
__attribute__((target("avx512f"))) void f16_to_f32_avx512(const Fp16* in, float* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(out + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i))));
  }
  scalar_loop(in + i, out + i, n - i, float_of_fp16);
}
__attribute__((target("avx512f"))) void f32_to_bf16_avx512(const float* in, Bf16* out, std::size_t n) {
  std::size_t i = 0;
  const __m512i bias = _mm512_set1_epi32(0x7FFF), one = _mm512_set1_epi32(1), qbit = _mm512_set1_epi32(0x40);
  for (; i + 16 <= n; i += 16) {
    const __m512 v = _mm512_loadu_ps(in + i);
    const __m512i x = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(x, 16), one);
    __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(x, bias), lsb), 16);
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(x, 16), qbit);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm512_cvtepi32_epi16(r));
  }
  scalar_loop(in + i, out + i, n - i, bf16_of);
}
__attribute__((target("avx512f"))) void bf16_to_f32_avx512(const Bf16* in, float* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m512i w = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i)));
    _mm512_storeu_si512(out + i, _mm512_slli_epi32(w, 16));
  }
  scalar_loop(in + i, out + i, n - i, float_of_bf16);
}

// --- AVX-512 BF16: the hardware conversion (RNE; fp32 subnormal inputs are read as zero) ---
__attribute__((target("avx512f,avx512bf16"))) void f32_to_bf16_avx512bf16(const float* in, Bf16* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m512bh h = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(in + i + 16), _mm512_loadu_ps(in + i));
    _mm512_storeu_si512(out + i, (__m512i)h);  // C-style: vector casts
  }
  for (; i + 16 <= n; i += 16) {
    const __m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(in + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), (__m256i)h);
  }
  scalar_loop(in + i, out + i, n - i, bf16_of);
}
#pragma GCC diagnostic pop
#endif  // PB_X86

template <typename A, typename B>
void check_sizes(std::span<A> in, std::span<B> out) {
  if (in.size() != out.size()) throw std::invalid_argument("convert: input and output sizes differ");
}

void require(ConversionPath path) {
  if (!path_supported(path)) {
    throw std::invalid_argument(std::string("convert: path ") + path_name(path) + " is not supported by this CPU");
  }
}

}  // namespace

const char* path_name(ConversionPath path) {
  switch (path) {
    case ConversionPath::kScalar:
      return "scalar";
    case ConversionPath::kAvx2F16c:
      return "avx2+f16c";
    case ConversionPath::kAvx512:
      return "avx512f";
    case ConversionPath::kAvx512Bf16:
      return "avx512_bf16";
  }
  return "?";
}

bool path_supported(ConversionPath path) {
#if PB_X86
  switch (path) {
    case ConversionPath::kScalar:
      return true;
    case ConversionPath::kAvx2F16c:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
    case ConversionPath::kAvx512:
      return __builtin_cpu_supports("avx512f");
    case ConversionPath::kAvx512Bf16:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16");
  }
  return false;
#else
  return path == ConversionPath::kScalar;
#endif
}

ConversionPath best_path_for_bf16() {
  if (path_supported(ConversionPath::kAvx512Bf16)) return ConversionPath::kAvx512Bf16;
  return best_path_for_fp16();
}

ConversionPath best_path_for_fp16() {
  if (path_supported(ConversionPath::kAvx512)) return ConversionPath::kAvx512;
  if (path_supported(ConversionPath::kAvx2F16c)) return ConversionPath::kAvx2F16c;
  return ConversionPath::kScalar;
}

void convert(std::span<const float> in, std::span<Bf16> out, ConversionPath path) {
  check_sizes(in, out);
  require(path);
#if PB_X86
  switch (path) {
    case ConversionPath::kAvx2F16c:
      return f32_to_bf16_avx2(in.data(), out.data(), in.size());
    case ConversionPath::kAvx512:
      return f32_to_bf16_avx512(in.data(), out.data(), in.size());
    case ConversionPath::kAvx512Bf16:
      return f32_to_bf16_avx512bf16(in.data(), out.data(), in.size());
    case ConversionPath::kScalar:
      break;
  }
#endif
  scalar_loop(in.data(), out.data(), in.size(), bf16_of);
}

void convert(std::span<const float> in, std::span<Fp16> out, ConversionPath path) {
  check_sizes(in, out);
  require(path);
#if PB_X86
  switch (path) {
    case ConversionPath::kAvx2F16c:
      return f32_to_f16_avx2(in.data(), out.data(), in.size());
    case ConversionPath::kAvx512:
    case ConversionPath::kAvx512Bf16:
      return f32_to_f16_avx512(in.data(), out.data(), in.size());
    case ConversionPath::kScalar:
      break;
  }
#endif
  scalar_loop(in.data(), out.data(), in.size(), fp16_of);
}

void convert(std::span<const Bf16> in, std::span<float> out, ConversionPath path) {
  check_sizes(in, out);
  require(path);
#if PB_X86
  switch (path) {
    case ConversionPath::kAvx2F16c:
      return bf16_to_f32_avx2(in.data(), out.data(), in.size());
    case ConversionPath::kAvx512:
    case ConversionPath::kAvx512Bf16:
      return bf16_to_f32_avx512(in.data(), out.data(), in.size());
    case ConversionPath::kScalar:
      break;
  }
#endif
  scalar_loop(in.data(), out.data(), in.size(), float_of_bf16);
}

void convert(std::span<const Fp16> in, std::span<float> out, ConversionPath path) {
  check_sizes(in, out);
  require(path);
#if PB_X86
  switch (path) {
    case ConversionPath::kAvx2F16c:
      return f16_to_f32_avx2(in.data(), out.data(), in.size());
    case ConversionPath::kAvx512:
    case ConversionPath::kAvx512Bf16:
      return f16_to_f32_avx512(in.data(), out.data(), in.size());
    case ConversionPath::kScalar:
      break;
  }
#endif
  scalar_loop(in.data(), out.data(), in.size(), float_of_fp16);
}

// The best paths are looked up once: __builtin_cpu_supports is cheap, but this is a hot call.
void convert(std::span<const float> in, std::span<Bf16> out) {
  static const ConversionPath path = best_path_for_bf16();
  convert(in, out, path);
}
void convert(std::span<const float> in, std::span<Fp16> out) {
  static const ConversionPath path = best_path_for_fp16();
  convert(in, out, path);
}
void convert(std::span<const Bf16> in, std::span<float> out) {
  static const ConversionPath path = best_path_for_fp16();
  convert(in, out, path);
}
void convert(std::span<const Fp16> in, std::span<float> out) {
  static const ConversionPath path = best_path_for_fp16();
  convert(in, out, path);
}

}  // namespace pairbench::kernels::elementwise
