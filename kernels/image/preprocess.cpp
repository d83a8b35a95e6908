// The scalar arm, the fp64 reference, the coefficient plan and the test images. CMake compiles
// this file with -fno-tree-vectorize -fno-tree-slp-vectorize: plain scalar code, like Pillow
// without SIMD, whatever the build's optimisation level.
#include "kernels/image/preprocess.h"

#include "kernels/common/rng.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace pairbench::kernels::image {

#define PB_PREPROCESS_ROWS_NAME preprocess_rows_scalar
#define PB_PREPROCESS_ROWS_ATTR
#include "kernels/image/preprocess_rows.inc"
#undef PB_PREPROCESS_ROWS_NAME
#undef PB_PREPROCESS_ROWS_ATTR

namespace {

// The sampling convention of preprocess.h for one axis, in fp64.
struct Tap {
  int i0, i1;
  double w1;
};
Tap tap(int out_index, int in_size, int out_size) {
  double s = (out_index + 0.5) * (static_cast<double>(in_size) / out_size) - 0.5;
  if (s < 0) s = 0;
  int i0 = static_cast<int>(std::floor(s));
  if (i0 > in_size - 1) i0 = in_size - 1;
  const int i1 = i0 < in_size - 1 ? i0 + 1 : i0;
  return {i0, i1, s - i0};
}

void check_sizes(int in_w, int in_h, int out_w, int out_h) {
  if (in_w < 1 || in_h < 1 || out_w < 1 || out_h < 1) {
    throw std::invalid_argument("image sizes must be >= 1: input " + std::to_string(in_w) + "x" + std::to_string(in_h) +
                                ", output " + std::to_string(out_w) + "x" + std::to_string(out_h));
  }
  constexpr long long kMax = std::numeric_limits<std::int32_t>::max() / 4;
  if (static_cast<long long>(in_w) * kChannels > kMax || static_cast<long long>(out_w) * out_h * kChannels > kMax) {
    throw std::invalid_argument("image too large for 32-bit element offsets");
  }
}

}  // namespace

ImageU8 generate_image(int width, int height, std::uint64_t seed) {
  check_sizes(width, height, 1, 1);
  std::uint64_t s = seed;
  const double fx = 0.02 + (splitmix64_next(s) % 1000) * 1e-4;  // wave frequencies (radians per pixel)
  const double fy = 0.01 + (splitmix64_next(s) % 1000) * 1e-4;
  const int block = 8 + static_cast<int>(splitmix64_next(s) % 24);
  ImageU8 img{width, height, std::vector<std::uint8_t>(static_cast<std::size_t>(width) * height * kChannels)};
  const auto clamp8 = [](double v) { return static_cast<std::uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v); };
  std::size_t k = 0;
  for (int y = 0; y < height; ++y) {
    for (int x = 0; x < width; ++x) {
      const std::uint64_t noise = splitmix64_next(s);
      const double n0 = static_cast<double>(noise & 15) - 7.5, n1 = static_cast<double>((noise >> 4) & 15) - 7.5;
      const double n2 = static_cast<double>((noise >> 8) & 15) - 7.5;
      img.rgb[k++] = clamp8(128 + 110 * std::sin(fx * x + fy * y) + n0);             // waves
      img.rgb[k++] = clamp8(255.0 * (x + y) / (width + height) + n1);                // gradient
      img.rgb[k++] = clamp8(((x / block + y / block) % 2 ? 200.0 : 40.0) + 3 * n2);  // blocks
    }
  }
  return img;
}

ResizePlan make_plan(int in_w, int in_h, int out_w, int out_h) {
  check_sizes(in_w, in_h, out_w, out_h);
  ResizePlan p{.in_w = in_w, .in_h = in_h, .out_w = out_w, .out_h = out_h};
  for (int x = 0; x < out_w; ++x) {
    const Tap t = tap(x, in_w, out_w);
    p.x0.push_back(kChannels * t.i0);
    p.x1.push_back(kChannels * t.i1);
    p.wx.push_back(static_cast<float>(t.w1));
  }
  for (int y = 0; y < out_h; ++y) {
    const Tap t = tap(y, in_h, out_h);
    p.y0.push_back(t.i0);
    p.y1.push_back(t.i1);
    p.wy.push_back(static_cast<float>(t.w1));
  }
  for (int c = 0; c < kChannels; ++c) {
    p.scale[c] = static_cast<float>(1.0 / (255.0 * kStd[c]));
    p.bias[c] = static_cast<float>(-kMean[c] / kStd[c]);
  }
  return p;
}

std::vector<double> preprocess_reference(const ImageU8& image, int out_w, int out_h) {
  check_sizes(image.width, image.height, out_w, out_h);
  const auto px = [&](int x, int y, int c) {
    return static_cast<double>(image.rgb[(static_cast<std::size_t>(y) * image.width + x) * kChannels + c]);
  };
  std::vector<double> out(static_cast<std::size_t>(kChannels) * out_w * out_h);
  for (int y = 0; y < out_h; ++y) {
    const Tap ty = tap(y, image.height, out_h);
    for (int x = 0; x < out_w; ++x) {
      const Tap tx = tap(x, image.width, out_w);
      for (int c = 0; c < kChannels; ++c) {
        const double v = (1 - ty.w1) * ((1 - tx.w1) * px(tx.i0, ty.i0, c) + tx.w1 * px(tx.i1, ty.i0, c)) +
                         ty.w1 * ((1 - tx.w1) * px(tx.i0, ty.i1, c) + tx.w1 * px(tx.i1, ty.i1, c));
        out[(static_cast<std::size_t>(c) * out_h + y) * out_w + x] = (v / 255.0 - kMean[c]) / kStd[c];
      }
    }
  }
  return out;
}

const char* impl_name(Impl impl) {
  switch (impl) {
    case Impl::kScalar:
      return "scalar";
    case Impl::kAutovec:
      return "autovec";
    case Impl::kHighway:
      return "highway";
  }
  return "unknown";
}

std::string impl_target(Impl impl) {
  switch (impl) {
    case Impl::kScalar:
      return "no vectorisation (-fno-tree-vectorize)";
    case Impl::kAutovec:
      return autovec_target();
    case Impl::kHighway:
      return "highway " + highway_target();
  }
  return "unknown";
}

Preprocessor::Preprocessor(Impl impl, int in_w, int in_h, int out_w, int out_h)
    : impl_(impl), plan_(make_plan(in_w, in_h, out_w, out_h)), row_(row_scratch_floats(in_w)) {}

void Preprocessor::run(const std::uint8_t* rgb, float* out) {
  switch (impl_) {
    case Impl::kScalar:
      return preprocess_rows_scalar(plan_, rgb, row_.data(), out);
    case Impl::kAutovec:
      return preprocess_rows_autovec(plan_, rgb, row_.data(), out);
    case Impl::kHighway:
      return preprocess_rows_highway(plan_, rgb, row_.data(), out);
  }
}

std::vector<float> preprocess(Impl impl, const ImageU8& image, int out_w, int out_h) {
  if (image.rgb.size() != static_cast<std::size_t>(image.width) * image.height * kChannels) {
    throw std::invalid_argument("image buffer holds " + std::to_string(image.rgb.size()) + " bytes, not " +
                                std::to_string(image.width) + "x" + std::to_string(image.height) + "x3");
  }
  Preprocessor p(impl, image.width, image.height, out_w, out_h);
  std::vector<float> out(p.output_size(), std::numeric_limits<float>::quiet_NaN());  // poisoned
  p.run(image.rgb.data(), out.data());
  return out;
}

}  // namespace pairbench::kernels::image
