// bf16 / fp16 conversions: the scalar reference on exact cases and every 16-bit pattern, and each
// bulk path this CPU has against the scalar reference.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "kernels/elementwise/float16.h"

namespace ew = pairbench::kernels::elementwise;
using ew::Bf16;
using ew::ConversionPath;
using ew::Fp16;

namespace {

std::uint32_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }
float from_bits(std::uint32_t u) { return std::bit_cast<float>(u); }
bool is_nan16(std::uint16_t h, int mantissa_bits) {
  const int exp_bits = 15 - mantissa_bits;
  const std::uint16_t exp_mask = static_cast<std::uint16_t>(((1u << exp_bits) - 1) << mantissa_bits);
  return (h & exp_mask) == exp_mask && (h & ((1u << mantissa_bits) - 1)) != 0;
}

// Random fp32 bit patterns plus the edges: zeros, subnormals, fp16/bf16 range limits, ties, inf, NaN.
std::vector<float> interesting_floats(std::size_t random_count) {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.0f,
                          65504.0f,
                          65519.99f,
                          65520.0f,
                          65536.0f,
                          1e-8f,
                          0x1p-24f,
                          0x1p-25f,
                          0x1.000002p-25f,
                          0x1p-14f,
                          0x1.ff8p-15f,
                          0x1.ffcp-15f,
                          0x1p-126f,
                          0x1p-149f,
                          std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN(),
                          from_bits(0x7F800001u) /* signalling NaN */,
                          from_bits(0xFFC12345u)};
  for (int e = -30; e <= 17; ++e) {  // ties at the fp16 and bf16 rounding points around each binade
    for (float m : {1.0f, 1.5f}) {
      const float x = std::ldexp(m, e);
      v.push_back(x + std::ldexp(1.0f, e - 11));
      v.push_back(x + std::ldexp(1.0f, e - 8));
      v.push_back(-x - std::ldexp(3.0f, e - 11));
    }
  }
  std::mt19937 rng(12345);
  for (std::size_t i = 0; i < random_count; ++i) v.push_back(from_bits(static_cast<std::uint32_t>(rng())));
  return v;
}

std::vector<ConversionPath> supported_paths() {
  std::vector<ConversionPath> out;
  for (ConversionPath p :
       {ConversionPath::kScalar, ConversionPath::kAvx2F16c, ConversionPath::kAvx512, ConversionPath::kAvx512Bf16}) {
    if (ew::path_supported(p)) out.push_back(p);
  }
  return out;
}

}  // namespace

TEST(elementwise_float16, Fp16ExactCases) {
  EXPECT_EQ(ew::to_fp16(1.0f).bits, 0x3C00);
  EXPECT_EQ(ew::to_fp16(-2.0f).bits, 0xC000);
  EXPECT_EQ(ew::to_fp16(65504.0f).bits, 0x7BFF);   // largest finite
  EXPECT_EQ(ew::to_fp16(65519.99f).bits, 0x7BFF);  // below the midpoint
  EXPECT_EQ(ew::to_fp16(65520.0f).bits, 0x7C00);   // the midpoint ties to even: infinity
  EXPECT_EQ(ew::to_fp16(1e6f).bits, 0x7C00);
  EXPECT_EQ(ew::to_fp16(0x1p-14f).bits, 0x0400);         // smallest normal
  EXPECT_EQ(ew::to_fp16(0x1p-24f).bits, 0x0001);         // smallest subnormal
  EXPECT_EQ(ew::to_fp16(0x1p-25f).bits, 0x0000);         // exactly half of it: ties to even, zero
  EXPECT_EQ(ew::to_fp16(0x1.000002p-25f).bits, 0x0001);  // just above half: rounds up
  EXPECT_EQ(ew::to_fp16(0x1.8p-24f).bits, 0x0002);       // 1.5 units: tie to even (2)
  EXPECT_EQ(ew::to_fp16(0x1.ff8p-15f).bits, 0x03FF);     // largest subnormal
  EXPECT_EQ(ew::to_fp16(0x1.ffcp-15f).bits, 0x0400);     // half a unit above it: ties to even, the smallest normal
  EXPECT_EQ(ew::to_fp16(-0.0f).bits, 0x8000);
  EXPECT_EQ(ew::to_fp16(1.0f + 0x1p-11f).bits, 0x3C00);    // tie between 1 and 1+2^-10: even (1)
  EXPECT_EQ(ew::to_fp16(1.0f + 0x1.8p-10f).bits, 0x3C02);  // tie between odd 0x3C01 and 0x3C02: even
  EXPECT_TRUE(is_nan16(ew::to_fp16(std::numeric_limits<float>::quiet_NaN()).bits, 10));
  EXPECT_TRUE(is_nan16(ew::to_fp16(from_bits(0x7F800001u)).bits, 10));  // a NaN whose payload is only low bits
  EXPECT_EQ(ew::to_float(Fp16{0x0001}), 0x1p-24f);
  EXPECT_EQ(ew::to_float(Fp16{0x7C00}), std::numeric_limits<float>::infinity());
}

TEST(elementwise_float16, Bf16ExactCases) {
  EXPECT_EQ(ew::to_bf16(1.0f).bits, 0x3F80);
  EXPECT_EQ(ew::to_bf16(1.0f + 0x1p-8f).bits, 0x3F80);                     // tie: even (1)
  EXPECT_EQ(ew::to_bf16(1.0f + 0x1.8p-7f).bits, 0x3F82);                   // tie between odd 0x3F81 and 0x3F82: even
  EXPECT_EQ(ew::to_bf16(1.0f + 0x1.2p-8f).bits, 0x3F81);                   // above the tie: up
  EXPECT_EQ(ew::to_bf16(std::numeric_limits<float>::max()).bits, 0x7F80);  // rounds up to infinity
  EXPECT_EQ(ew::to_bf16(-0.0f).bits, 0x8000);
  EXPECT_EQ(ew::to_bf16(0x1p-149f).bits, 0x0000);                      // the smallest fp32 subnormal rounds to zero
  EXPECT_TRUE(is_nan16(ew::to_bf16(from_bits(0x7F800001u)).bits, 7));  // would become infinity if just rounded
  EXPECT_EQ(ew::to_float(Bf16{0xC040}), -3.0f);
}

TEST(elementwise_float16, EveryFp16PatternRoundTrips) {
  for (std::uint32_t h = 0; h <= 0xFFFF; ++h) {
    const float f = ew::to_float(Fp16{static_cast<std::uint16_t>(h)});
    const std::uint16_t back = ew::to_fp16(f).bits;
    if (is_nan16(static_cast<std::uint16_t>(h), 10)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      ASSERT_EQ(back, h | 0x0200) << std::hex << h;  // quietened, payload kept
    } else {
      ASSERT_EQ(back, h) << std::hex << h;
    }
  }
}

TEST(elementwise_float16, EveryBf16PatternRoundTrips) {
  for (std::uint32_t h = 0; h <= 0xFFFF; ++h) {
    const float f = ew::to_float(Bf16{static_cast<std::uint16_t>(h)});
    ASSERT_EQ(bits(f), h << 16);
    const std::uint16_t back = ew::to_bf16(f).bits;
    ASSERT_EQ(back, is_nan16(static_cast<std::uint16_t>(h), 7) ? (h | 0x0040) : h) << std::hex << h;
  }
}

TEST(elementwise_float16, RoundingIsToTheNearest) {
  // Within the normal range the 16-bit value is the nearest one: no other pattern is closer.
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-60000.0f, 60000.0f);
  for (int i = 0; i < 100000; ++i) {
    const float x = dist(rng) * (i % 2 ? 1.0f : 1e-3f);
    const Fp16 h = ew::to_fp16(x);
    const double err = std::fabs(static_cast<double>(ew::to_float(h)) - x);
    for (int d : {-1, 1}) {
      const Fp16 other{static_cast<std::uint16_t>(h.bits + d)};
      if ((other.bits & 0x7C00) == 0x7C00) continue;
      ASSERT_LE(err, std::fabs(static_cast<double>(ew::to_float(other)) - x)) << x;
    }
    const Bf16 b = ew::to_bf16(x);
    const double berr = std::fabs(static_cast<double>(ew::to_float(b)) - x);
    for (int d : {-1, 1}) {
      const Bf16 other{static_cast<std::uint16_t>(b.bits + d)};
      if ((other.bits & 0x7F80) == 0x7F80) continue;
      ASSERT_LE(berr, std::fabs(static_cast<double>(ew::to_float(other)) - x)) << x;
    }
  }
}

TEST(elementwise_float16, EveryBulkPathMatchesTheScalarReference) {
  const std::vector<float> in = interesting_floats(200000);
  for (ConversionPath path : supported_paths()) {
    SCOPED_TRACE(ew::path_name(path));
    // Lengths that leave every tail size behind the vector loops.
    for (std::size_t n : {in.size(), in.size() - 1, std::size_t{31}, std::size_t{7}, std::size_t{0}}) {
      std::span<const float> src(in.data(), n);
      std::vector<Fp16> h(n);
      ew::convert(src, std::span<Fp16>(h), path);
      std::vector<Bf16> b(n);
      ew::convert(src, std::span<Bf16>(b), path);
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(h[i].bits, ew::to_fp16(in[i]).bits) << "fp16 of " << std::hexfloat << in[i];
        const std::uint16_t want = ew::to_bf16(in[i]).bits;
        const bool fp32_subnormal = (bits(in[i]) & 0x7F800000u) == 0 && (bits(in[i]) & 0x7FFFFFu) != 0;
        if (path == ConversionPath::kAvx512Bf16 && fp32_subnormal) {
          // VCVTNEPS2BF16 reads fp32 subnormals as zero (documented in float16.h).
          ASSERT_TRUE(b[i].bits == want || (b[i].bits & 0x7FFF) == 0) << std::hexfloat << in[i];
        } else if (is_nan16(want, 7)) {
          ASSERT_TRUE(is_nan16(b[i].bits, 7)) << i;
        } else {
          ASSERT_EQ(b[i].bits, want) << "bf16 of " << std::hexfloat << in[i];
        }
      }
      std::vector<float> fh(n), fb(n);
      ew::convert(std::span<const Fp16>(h), std::span<float>(fh), path);
      ew::convert(std::span<const Bf16>(b), std::span<float>(fb), path);
      for (std::size_t i = 0; i < n; ++i) {
        const float wh = ew::to_float(h[i]), wb = ew::to_float(b[i]);
        ASSERT_TRUE(bits(fh[i]) == bits(wh) || (std::isnan(fh[i]) && std::isnan(wh))) << i;
        ASSERT_EQ(bits(fb[i]), bits(wb)) << i;
      }
    }
  }
}

TEST(elementwise_float16, BulkConversionRejectsMismatchedSizesAndUnsupportedPaths) {
  std::vector<float> f(4);
  std::vector<Fp16> h(3);
  EXPECT_THROW(ew::convert(std::span<const float>(f), std::span<Fp16>(h)), std::invalid_argument);
  for (ConversionPath p : {ConversionPath::kAvx2F16c, ConversionPath::kAvx512, ConversionPath::kAvx512Bf16}) {
    if (ew::path_supported(p)) continue;
    std::vector<Fp16> h4(4);
    EXPECT_THROW(ew::convert(std::span<const float>(f), std::span<Fp16>(h4), p), std::invalid_argument);
  }
  EXPECT_TRUE(ew::path_supported(ConversionPath::kScalar));
  EXPECT_TRUE(ew::path_supported(ew::best_path_for_bf16()));
  EXPECT_TRUE(ew::path_supported(ew::best_path_for_fp16()));
}
