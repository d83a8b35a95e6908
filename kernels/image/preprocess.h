// Image preprocessing as a data loader does it: an RGB uint8 interleaved image (H x W x 3) is
// bilinearly resized (to 224 x 224 by default), normalised with the ImageNet mean and standard
// deviation and written as float32 planar CHW. One function, three implementations: plain scalar
// code (compiled with vectorisation off), the same source auto-vectorised by the compiler, and a
// hand-vectorised Google Highway version; plus an fp64 reference.
//
// Sampling convention (torchvision/PyTorch `interpolate(mode="bilinear", align_corners=False,
// antialias=False)`, OpenCV INTER_LINEAR): pixel centres sit at half-integers, so output x maps
// to source sx = (x + 0.5) * in_w / out_w - 0.5; sx < 0 is clamped to 0; x0 = floor(sx),
// x1 = min(x0 + 1, in_w - 1), weight of x1 = sx - x0; the same for y. Two taps per axis: no
// antialiasing filter when downscaling (Pillow widens its filter support there; we do not).
// Normalisation: out[c][y][x] = (v / 255 - mean[c]) / std[c].
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace pairbench::kernels::image {

inline constexpr int kChannels = 3;
inline constexpr int kOutputSize = 224;
inline constexpr std::array<double, kChannels> kMean = {0.485, 0.456, 0.406};
inline constexpr std::array<double, kChannels> kStd = {0.229, 0.224, 0.225};
// Every float32 implementation stays within this of the fp64 reference (outputs lie in about
// [-2.2, 2.7]; float32 rounding in the two blends and the affine step gives ~1e-6 at worst).
inline constexpr double kMaxAbsError = 1e-5;

struct ImageU8 {
  int width = 0;
  int height = 0;
  std::vector<std::uint8_t> rgb;  // height * width * 3, row-major, interleaved R G B
};

// A structured test image (gradients, waves, blocks, a little noise), deterministic from seed.
ImageU8 generate_image(int width, int height, std::uint64_t seed);

// Precomputed separable coefficients shared by every implementation (computed in fp64, stored
// as float32): per output column the source element index 3*x0, 3*x1 and the weight of x1; per
// output row the source rows and the weight of y1; per channel v * scale + bias normalises.
struct ResizePlan {
  int in_w = 0, in_h = 0, out_w = 0, out_h = 0;
  std::vector<std::int32_t> x0, x1;  // element offsets within a row (3 * pixel index)
  std::vector<float> wx;
  std::vector<std::int32_t> y0, y1;  // row indices
  std::vector<float> wy;
  std::array<float, kChannels> scale{}, bias{};  // 1 / (255 std[c]), -mean[c] / std[c]
};
// Throws std::invalid_argument for sizes < 1 or too large for 32-bit offsets.
ResizePlan make_plan(int in_w, int in_h, int out_w, int out_h);

// fp64 reference, computed directly (2-D bilinear, not separable); out: 3 * out_h * out_w.
std::vector<double> preprocess_reference(const ImageU8& image, int out_w, int out_h);

enum class Impl { kScalar, kAutovec, kHighway };
const char* impl_name(Impl impl);
// What ran: for kHighway the target HWY_DYNAMIC_DISPATCH chose (hwy::TargetName, e.g. "AVX3");
// for kAutovec the GCC target_clones clone the resolver picks; for kScalar "no vectorisation".
std::string impl_target(Impl impl);
std::string highway_target();

// Algorithm: the same function, two orders. scalar and autovec: per output row, a vertical pass
// blends the two source rows into a float row of in_w * 3 values, then a horizontal pass blends
// two taps per output pixel and channel and normalises into the planar output. highway: the
// horizontal pass first, once per source row it needs (byte shuffles within a window, normalise
// fused), then the vertical pass as one FMA per output on contiguous float rows (see
// preprocess_hwy.cpp). The plan and the row buffer are made once.
class Preprocessor {
 public:
  Preprocessor(Impl impl, int in_w, int in_h, int out_w = kOutputSize, int out_h = kOutputSize);
  // rgb: in_h * in_w * 3 bytes; out: 3 * out_h * out_w floats (CHW). Blocks until done.
  void run(const std::uint8_t* rgb, float* out);
  std::size_t output_size() const { return std::size_t{kChannels} * plan_.out_w * plan_.out_h; }
  const ResizePlan& plan() const { return plan_; }

 private:
  Impl impl_;
  ResizePlan plan_;
  std::vector<float> row_;
};

// One-shot convenience for tests: returns the CHW output.
std::vector<float> preprocess(Impl impl, const ImageU8& image, int out_w = kOutputSize, int out_h = kOutputSize);

// The per-implementation row loops (plan, rgb, row scratch of row_scratch_floats(in_w) floats, out).
inline std::size_t row_scratch_floats(int in_w) {
  return std::size_t{kChannels} * (static_cast<std::size_t>(in_w) + 1);  // 3 planar rows + 1 padding pixel each
}
void preprocess_rows_scalar(const ResizePlan& plan, const std::uint8_t* rgb, float* row, float* out);
void preprocess_rows_autovec(const ResizePlan& plan, const std::uint8_t* rgb, float* row, float* out);
void preprocess_rows_highway(const ResizePlan& plan, const std::uint8_t* rgb, float* row, float* out);
std::string autovec_target();

}  // namespace pairbench::kernels::image
