// The image preprocessing kernels: the fp64 reference against hand-computed values, every
// implementation against the reference on fresh random images (odd, tiny, up- and downscaled
// sizes), the sampling convention, and the Highway target recorded.
#include "kernels/image/preprocess.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <chrono>
#include <cmath>
#include <random>

namespace ki = pairbench::kernels::image;

namespace {

std::uint64_t fresh_seed() {
  return std::random_device{}() ^
         static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

double normalised(double v, int c) { return (v / 255.0 - ki::kMean[c]) / ki::kStd[c]; }

ki::ImageU8 image_from(int w, int h, std::vector<std::uint8_t> rgb) { return {w, h, std::move(rgb)}; }

constexpr ki::Impl kImpls[] = {ki::Impl::kScalar, ki::Impl::kAutovec, ki::Impl::kHighway};

TEST(ImageReference, TwoByTwoToOneByOneIsTheMean) {
  // Pixels (R,G,B): (0,10,20) (40,50,60) / (80,90,100) (120,130,140); the one output pixel's
  // centre maps to source (0.5, 0.5): the mean of all four.
  const auto img = image_from(2, 2, {0, 10, 20, 40, 50, 60, 80, 90, 100, 120, 130, 140});
  const std::vector<double> out = ki::preprocess_reference(img, 1, 1);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_NEAR(out[0], normalised(60, 0), 1e-12);
  EXPECT_NEAR(out[1], normalised(70, 1), 1e-12);
  EXPECT_NEAR(out[2], normalised(80, 2), 1e-12);
}

TEST(ImageReference, TwoByOneUpscaledToFourByOne) {
  // Output x = 0..3 map to source -0.25 (clamped to 0), 0.25, 0.75, 1.25 (x1 clamped to 1):
  // weights of the right pixel 0, 0.25, 0.75, 1. Red goes 0 -> 200, green 100 -> 100.
  const auto img = image_from(2, 1, {0, 100, 255, 200, 100, 55});
  const std::vector<double> out = ki::preprocess_reference(img, 4, 1);
  const double red[] = {0, 50, 150, 200};
  const double blue[] = {255, 205, 105, 55};
  for (int x = 0; x < 4; ++x) {
    EXPECT_NEAR(out[0 * 4 + x], normalised(red[x], 0), 1e-12) << x;
    EXPECT_NEAR(out[1 * 4 + x], normalised(100, 1), 1e-12) << x;
    EXPECT_NEAR(out[2 * 4 + x], normalised(blue[x], 2), 1e-12) << x;
  }
  // Every implementation gives the same, within the float32 bound.
  for (ki::Impl impl : kImpls) {
    const std::vector<float> got = ki::preprocess(impl, img, 4, 1);
    for (std::size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(got[i], out[i], ki::kMaxAbsError) << ki::impl_name(impl);
  }
}

TEST(ImageReference, SameSizeIsTheIdentityResize) {
  const ki::ImageU8 img = ki::generate_image(7, 5, fresh_seed());
  const std::vector<double> out = ki::preprocess_reference(img, 7, 5);
  for (int y = 0; y < 5; ++y) {
    for (int x = 0; x < 7; ++x) {
      for (int c = 0; c < 3; ++c) {
        EXPECT_NEAR(out[(c * 5 + y) * 7 + x], normalised(img.rgb[(y * 7 + x) * 3 + c], c), 1e-12);
      }
    }
  }
}

TEST(ImagePlan, HalfPixelCentresClampedAtEdges) {
  const ki::ResizePlan p = ki::make_plan(/*in_w=*/4, /*in_h=*/3, /*out_w=*/2, /*out_h=*/6);
  // Downscale 4 -> 2: x = 0 maps to 0.5 (pixels 0,1), x = 1 to 2.5 (pixels 2,3); offsets are 3*x.
  EXPECT_EQ(p.x0, (std::vector<std::int32_t>{0, 6}));
  EXPECT_EQ(p.x1, (std::vector<std::int32_t>{3, 9}));
  EXPECT_EQ(p.wx, (std::vector<float>{0.5f, 0.5f}));
  // Upscale 3 -> 6: y maps to -0.25 (clamped), 0.25, 0.75, 1.25, 1.75, 2.25 (both taps row 2).
  EXPECT_EQ(p.y0, (std::vector<std::int32_t>{0, 0, 0, 1, 1, 2}));
  EXPECT_EQ(p.y1, (std::vector<std::int32_t>{1, 1, 1, 2, 2, 2}));
  EXPECT_EQ(p.wy, (std::vector<float>{0.0f, 0.25f, 0.75f, 0.25f, 0.75f, 0.25f}));
  EXPECT_THROW(ki::make_plan(0, 3, 2, 2), std::invalid_argument);
  EXPECT_THROW(ki::make_plan(3, 3, 2, 0), std::invalid_argument);
}

struct Case {
  int in_w, in_h, out_w, out_h;
};

// Each implementation against the fp64 reference, on a fresh image, output poisoned (NaN) first.
TEST(ImageImpls, MatchTheReferenceAtOddAndEdgeSizes) {
  const Case cases[] = {{1, 1, 224, 224},     {1, 1, 1, 1},         {3, 5, 224, 224}, {5, 3, 2, 7},
                        {225, 223, 224, 224}, {256, 256, 224, 224}, {31, 17, 33, 15}, {640, 480, 224, 224},
                        {224, 224, 224, 224}, {2, 2, 4, 4},         {1000, 3, 5, 1},  {17, 1, 224, 224}};
  for (const Case& k : cases) {
    const std::uint64_t seed = fresh_seed();
    const ki::ImageU8 img = ki::generate_image(k.in_w, k.in_h, seed);
    const std::vector<double> want = ki::preprocess_reference(img, k.out_w, k.out_h);
    std::vector<float> scalar;
    for (ki::Impl impl : kImpls) {
      const std::vector<float> got = ki::preprocess(impl, img, k.out_w, k.out_h);  // poisons with NaN
      ASSERT_EQ(got.size(), want.size());
      double worst = 0;
      for (std::size_t i = 0; i < got.size(); ++i) {
        const double d = std::abs(got[i] - want[i]);
        if (!(d <= worst)) worst = d;  // a NaN (unwritten element) sticks
      }
      EXPECT_LE(worst, ki::kMaxAbsError) << ki::impl_name(impl) << " " << k.in_w << "x" << k.in_h << " -> " << k.out_w
                                         << "x" << k.out_h << " seed " << seed;
      if (impl == ki::Impl::kScalar) {
        scalar = got;
      } else {
        for (std::size_t i = 0; i < got.size(); ++i) {
          ASSERT_NEAR(got[i], scalar[i], 2 * ki::kMaxAbsError) << ki::impl_name(impl) << " element " << i;
        }
      }
    }
  }
}

// The preprocessor reuses its plan and scratch row: a second image gives that image's answer.
TEST(ImageImpls, PreprocessorIsReusable) {
  for (ki::Impl impl : kImpls) {
    ki::Preprocessor p(impl, 50, 40, 30, 20);
    for (int round = 0; round < 2; ++round) {
      const ki::ImageU8 img = ki::generate_image(50, 40, fresh_seed());
      std::vector<float> out(p.output_size(), NAN);
      p.run(img.rgb.data(), out.data());
      const std::vector<double> want = ki::preprocess_reference(img, 30, 20);
      for (std::size_t i = 0; i < out.size(); ++i) ASSERT_NEAR(out[i], want[i], ki::kMaxAbsError) << i;
    }
  }
}

TEST(ImageImpls, RejectsMismatchedBuffers) {
  ki::ImageU8 img = ki::generate_image(4, 4, 1);
  img.rgb.pop_back();
  EXPECT_THROW(ki::preprocess(ki::Impl::kHighway, img), std::invalid_argument);
}

TEST(ImageTargets, HighwayTargetIsRecorded) {
  const std::string t = ki::highway_target();
  EXPECT_FALSE(t.empty());
  EXPECT_NE(t, "Unknown");
  std::cout << "highway target: " << t << "; autovec: " << ki::autovec_target() << "\n";
  EXPECT_NE(ki::impl_target(ki::Impl::kHighway).find(t), std::string::npos);
  EXPECT_FALSE(ki::impl_target(ki::Impl::kAutovec).empty());
}

// Every Highway target compiled in and supported here (e.g. AVX3 16 lanes, AVX2 8, SSE4 4),
// not only the one dispatch picks: the vector tails differ by lane count.
TEST(ImageTargets, EveryHighwayTargetMatchesTheReference) {
  const std::vector<std::int64_t> targets = hwy::SupportedAndGeneratedTargets();
  ASSERT_FALSE(targets.empty());
  // {2048, 9, 224, 5}: a downscale steeper than the shuffle window allows, so the gather fallback runs.
  const Case cases[] = {{3, 5, 224, 224}, {225, 223, 224, 224}, {5, 3, 2, 7},         {1, 1, 1, 1},
                        {31, 17, 33, 15}, {2048, 9, 224, 5},    {1025, 769, 224, 224}};
  for (const std::int64_t target : targets) {
    hwy::SetSupportedTargetsForTest(target);
    std::cout << "highway target tested: " << hwy::TargetName(target) << "\n";
    EXPECT_EQ(ki::highway_target(), hwy::TargetName(target));
    for (const Case& k : cases) {
      const ki::ImageU8 img = ki::generate_image(k.in_w, k.in_h, fresh_seed());
      const std::vector<double> want = ki::preprocess_reference(img, k.out_w, k.out_h);
      const std::vector<float> got = ki::preprocess(ki::Impl::kHighway, img, k.out_w, k.out_h);
      for (std::size_t i = 0; i < got.size(); ++i) {
        ASSERT_NEAR(got[i], want[i], ki::kMaxAbsError)
            << hwy::TargetName(target) << " " << k.in_w << "x" << k.in_h << " element " << i;
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);  // back to the CPU's own targets
}

TEST(ImageGenerate, DeterministicAndStructured) {
  const ki::ImageU8 a = ki::generate_image(64, 48, 9), b = ki::generate_image(64, 48, 9),
                    c = ki::generate_image(64, 48, 10);
  EXPECT_EQ(a.rgb, b.rgb);
  EXPECT_NE(a.rgb, c.rgb);
  ASSERT_EQ(a.rgb.size(), 64u * 48 * 3);
  int lo = 255, hi = 0;
  for (std::uint8_t v : a.rgb) {
    lo = std::min<int>(lo, v);
    hi = std::max<int>(hi, v);
  }
  EXPECT_LT(lo, 40);  // uses most of the range
  EXPECT_GT(hi, 215);
}

}  // namespace
