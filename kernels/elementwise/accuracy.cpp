// Relative Frobenius error against an fp64 reference, and the documented bounds per precision.
#include "kernels/elementwise/accuracy.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>

namespace pairbench::kernels::elementwise {

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kTf32:
      return "tf32";
    case Precision::kFp16:
      return "fp16";
    case Precision::kBf16:
      return "bf16";
  }
  return "?";
}

void RelErrorSum::add(std::span<const double> ref, std::span<const float> got) {
  if (ref.size() != got.size()) throw std::invalid_argument("rel_error: reference and result sizes differ");
  for (std::size_t i = 0; i < ref.size(); ++i) {
    const double g = got[i];
    if (!std::isfinite(g)) finite_ = false;
    const double d = g - ref[i];
    diff2_ += d * d;
    ref2_ += ref[i] * ref[i];
  }
}

double RelErrorSum::value() const {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (!finite_) return kInf;
  if (ref2_ == 0) return diff2_ == 0 ? 0.0 : kInf;
  return std::sqrt(diff2_ / ref2_);
}

double rel_error(std::span<const double> ref, std::span<const float> got) {
  RelErrorSum sum;
  sum.add(ref, got);
  return sum.value();
}

double gemm_error_bound(Precision p, std::int64_t k) {
  switch (p) {
    case Precision::kFp32:
      return 1e-6 * std::sqrt(static_cast<double>(k < 1 ? 1 : k));
    case Precision::kTf32:
      return 2e-3;
    case Precision::kFp16:
      return 5e-3;
    case Precision::kBf16:
      return 1e-2;
  }
  return 0;
}

double elementwise_error_bound(Precision p) {
  switch (p) {
    case Precision::kFp32:
    case Precision::kTf32:
      return 1e-6;
    case Precision::kFp16:
      return 5e-3;
    case Precision::kBf16:
      return 1e-2;
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
