// data.simd_preprocess (C15): one image preprocessing step (bilinear resize to 224x224, ImageNet
// normalisation, uint8 HWC -> float32 CHW) as plain scalar code, the same code auto-vectorised
// by the compiler, and hand-vectorised with Google Highway. pixels_per_second counts output pixels
// (224 * 224 per image), so it is images/s * 50176 at every input size.
#include <charconv>
#include <chrono>
#include <cmath>
#include <limits>
#include <random>

#include "bench/common/exec.h"
#include "bench/common/experiment.h"
#include "kernels/common/rng.h"
#include "kernels/image/preprocess.h"

namespace pairbench::bench {
namespace {

namespace ki = kernels::image;

// "WxH" -> {W, H}.
std::pair<int, int> parse_size(const std::string& s) {
  int w = 0, h = 0;
  const char* end = s.data() + s.size();
  const auto [x, ec1] = std::from_chars(s.data(), end, w);
  if (ec1 != std::errc{} || x == end || *x != 'x') throw std::invalid_argument("input '" + s + "' is not WxH");
  const auto [rest, ec2] = std::from_chars(x + 1, end, h);
  if (ec2 != std::errc{} || rest != end || w < 1 || h < 1) throw std::invalid_argument("input '" + s + "' is not WxH");
  return {w, h};
}

// The largest |a - b|; NaN (an element never written over the poison) counts as infinite.
template <class A, class B>
double max_abs_diff(const std::vector<A>& a, const std::vector<B>& b) {
  double worst = 0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const double d = std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
    if (!(d <= worst)) worst = std::isnan(d) ? std::numeric_limits<double>::infinity() : d;
  }
  return worst;
}

void run(benchmark::State& state, const Point& p, ki::Impl impl) {
  const auto [in_w, in_h] = parse_size(p.get("input"));
  const ki::ImageU8 image = ki::generate_image(in_w, in_h, kernels::fresh_seed());
  ki::Preprocessor pre(impl, in_w, in_h);
  const std::vector<double> reference = ki::preprocess_reference(image, ki::kOutputSize, ki::kOutputSize);
  // The scalar arm's output on the same image: the difference the issue asks to see.
  const std::vector<float> scalar = ki::preprocess(ki::Impl::kScalar, image);
  std::vector<float> out(pre.output_size(), std::numeric_limits<float>::quiet_NaN());  // poisoned
  pre.run(image.rgb.data(), out.data());
  const double vs_reference = max_abs_diff(out, reference);
  if (!(vs_reference <= ki::kMaxAbsError)) {
    return fail_verification(state, std::string(ki::impl_name(impl)) + " differs from the fp64 reference by " +
                                        std::to_string(vs_reference) + " > " + std::to_string(ki::kMaxAbsError));
  }
  const double vs_scalar = max_abs_diff(out, scalar);
  mark_verified(state);
  state.SetLabel(ki::impl_target(impl));  // what ran: the Highway target, the autovec clone
  std::fill(out.begin(), out.end(), std::numeric_limits<float>::quiet_NaN());

  exec(state, Work{.per_second = {{"pixels", static_cast<double>(ki::kOutputSize) * ki::kOutputSize}}}, [&] {
    pre.run(image.rgb.data(), out.data());
    benchmark::ClobberMemory();
  });
  if (const double after = max_abs_diff(out, reference); !(after <= ki::kMaxAbsError)) {
    return fail_verification(state, "after timing: differs from the reference by " + std::to_string(after));
  }
  state.counters["max_abs_diff_vs_reference"] = vs_reference;
  state.counters["max_abs_diff_vs_scalar"] = vs_scalar;
}

ArmFn arm(ki::Impl impl) {
  return [impl](benchmark::State& s, const Point& p) { run(s, p, impl); };
}

}  // namespace

// Expect: highway 4-8x the scalar arm's pixels/s on AVX2/AVX-512 (AVX3 here: 16 float lanes; its
// horizontal pass is gather-free byte shuffles within a window, and the vertical pass one FMA per
// output); autovec between the two: the compiler vectorises the vertical pass (contiguous) but
// not the horizontal one (indexed loads), so about 1.5-3x, and highway 1.5-3x autovec. The
// claim's 4-6x is for Pillow-SIMD's integer code. (A first highway version that gathered its
// taps measured only 2x scalar here: the gathers, not the lane count, set the speed.)
PAIRBENCH_EXPERIMENT(data_simd_preprocess) {
  return Experiment{
      .name = "data.simd_preprocess",
      .claim = "C15",
      .question = "How much faster is SIMD image preprocessing (resize + normalise) than scalar code?",
      .arms = {{.name = "scalar", .run = arm(ki::Impl::kScalar)},
               {.name = "autovec", .run = arm(ki::Impl::kAutovec)},
               {.name = "highway", .run = arm(ki::Impl::kHighway)}},
      .grid = {{.name = "input", .quick = {"256x256"}, .nightly = {"256x256", "512x512", "1024x768"}}},
      .timing = Timing::kWallClock,
      .metric = {.name = "pixels_per_second", .unit = "pixels/s", .better = Better::kHigher},
      .secondary = {{.name = "max_abs_diff_vs_scalar", .unit = "", .better = Better::kLower}},
      // Instruction counts gate this experiment too: one thread; the SIMD target is the one the CPU (or the simulator) reports.
      .instructions = cpu_point,
      .verdict = {{.test = VerdictCheck::Test::kBetter,
                   .treatments = {"highway"},
                   .threshold = 4.0,
                   .why =
                       "the claim is quantitative: the hand-vectorised arm must be at least 4x the scalar one (the low "
                       "end of the seed's 4-6x); autovec shows what the compiler alone gets and does not decide"}},
  };
}

}  // namespace pairbench::bench
