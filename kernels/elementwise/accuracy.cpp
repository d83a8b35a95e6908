// Relative Frobenius error against an fp64 reference, and the documented bounds per precision.
#include "kernels/elementwise/accuracy.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace pairbench::kernels::elementwise {

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::kFp32: return "fp32";
    case Precision::kTf32: return "tf32";
    case Precision::kFp16: return "fp16";
    case Precision::kBf16: return "bf16";
  }
  return "?";
}

double rel_error(std::span<const double> ref, std::span<const float> got) {
  if (ref.size() != got.size()) throw std::invalid_argument("rel_error: reference and result sizes differ");
  constexpr double kInf = std::numeric_limits<double>::infinity();
  double diff2 = 0, ref2 = 0;
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double g = got[i];
    if (!std::isfinite(g)) return kInf;
    const double d = g - ref[i];
    diff2 += d * d;
    ref2 += ref[i] * ref[i];
  }
  if (ref2 == 0) return diff2 == 0 ? 0.0 : kInf;
  return std::sqrt(diff2 / ref2);
}

double gemm_error_bound(Precision p, std::int64_t k) {
  switch (p) {
    case Precision::kFp32: return 1e-6 * std::sqrt(static_cast<double>(k < 1 ? 1 : k));
    case Precision::kTf32: return 2e-3;
    case Precision::kFp16: return 5e-3;
    case Precision::kBf16: return 1e-2;
  }
  return 0;
}

double elementwise_error_bound(Precision p) {
  switch (p) {
    case Precision::kFp32:
    case Precision::kTf32: return 1e-6;
    case Precision::kFp16: return 5e-3;
    case Precision::kBf16: return 1e-2;
  }
  return 0;
}

std::string ErrorCheck::text() const {
  char buf[96];
  std::snprintf(buf, sizeof buf, "rel_error %.2e %s bound %.1e", rel_error, ok ? "<=" : ">", bound);
  return buf;
}

ErrorCheck check_error(double rel_error, double bound) {
  return {.rel_error = rel_error, .bound = bound, .ok = rel_error <= bound};
}

}  // namespace pairbench::kernels::elementwise
