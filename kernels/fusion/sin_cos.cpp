// Host passes of ops.fusion: each unfused pass is an out-of-line loop of its own, as an eager
// framework runs one kernel per op; the fused loop does the same fp32 operations in one pass.
//
// Vectorisation: the add/mul loops vectorise at -O3 (SSE2 at least). The sinf/cosf loops do not:
// GCC 12 vectorises them only through libmvec's _ZGVbN4v_sinf, which glibc's headers offer only
// under -ffast-math (and that also changes the results). We keep glibc's scalar sinf/cosf on
// purpose, bit-identical in both forms: a scalar sinf + cosf costs ~10-50 ns per element on one
// core against ~2 ns for moving 28 bytes, so the host sin_cos op is compute-bound and fusion can
// save little there. That is a finding, not a defect; op=add_mul shows the memory-bound case.
#include "kernels/fusion/sin_cos.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <random>
#include <stdexcept>

namespace pairbench::kernels::fusion {
namespace {

constexpr float kMulX = 2.0f, kMulY = 3.0f;  // add_mul: out = x*2 + y*3

// noinline keeps each pass a separate loop over memory: GCC does not fuse loops at -O3 today, but
// nothing in the language stops a compiler from doing so across inlined calls.
[[gnu::noinline]] void sin_pass(const float* __restrict__ x, float* __restrict__ a, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) a[i] = std::sin(x[i]);  // std::sin(float) is sinf
}
[[gnu::noinline]] void cos_pass(const float* __restrict__ y, float* __restrict__ b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) b[i] = std::cos(y[i]);
}
[[gnu::noinline]] void mul_pass(const float* __restrict__ x, float k, float* __restrict__ a, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) a[i] = x[i] * k;
}
[[gnu::noinline]] void add_pass(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                                std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}
[[gnu::noinline]] void fused_sin_cos(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out,
                                     std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = std::sin(x[i]) + std::cos(y[i]);
}
// The file is compiled with -ffp-contract=off (kernels/CMakeLists.txt): x*2 + y*3 must not become
// fma(y, 3, x*2) on an FMA target, or fused and unfused would round differently.
[[gnu::noinline]] void fused_add_mul(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out,
                                     std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = x[i] * kMulX + y[i] * kMulY;
}

void require_same_length(std::size_t n, std::initializer_list<std::size_t> others) {
  for (std::size_t m : others) {
    if (m != n) throw std::invalid_argument("fusion: every array must have the same length");
  }
}

}  // namespace

Op op_from_name(const std::string& name) {
  if (name == "sin_cos") return Op::kSinCos;
  if (name == "add_mul") return Op::kAddMul;
  throw std::invalid_argument("fusion: unknown op '" + name + "' (sin_cos | add_mul)");
}

const char* op_name(Op op) { return op == Op::kSinCos ? "sin_cos" : "add_mul"; }

double bytes_moved_per_element(Form form) { return (form == Form::kUnfused ? 7.0 : 3.0) * sizeof(float); }

double max_abs_error_bound(Op op) { return op == Op::kSinCos ? std::ldexp(8.0, -23) : std::ldexp(1.0, -18); }

void run_unfused(Op op, std::span<const float> x, std::span<const float> y, std::span<float> a, std::span<float> b,
                 std::span<float> out) {
  const std::size_t n = x.size();
  require_same_length(n, {y.size(), a.size(), b.size(), out.size()});
  if (op == Op::kSinCos) {
    sin_pass(x.data(), a.data(), n);
    cos_pass(y.data(), b.data(), n);
  } else {
    mul_pass(x.data(), kMulX, a.data(), n);
    mul_pass(y.data(), kMulY, b.data(), n);
  }
  add_pass(a.data(), b.data(), out.data(), n);
}

void run_fused(Op op, std::span<const float> x, std::span<const float> y, std::span<float> out) {
  const std::size_t n = x.size();
  require_same_length(n, {y.size(), out.size()});
  if (op == Op::kSinCos)
    fused_sin_cos(x.data(), y.data(), out.data(), n);
  else
    fused_add_mul(x.data(), y.data(), out.data(), n);
}

double reference_at(Op op, float x, float y) {
  const double dx = x, dy = y;
  return op == Op::kSinCos ? std::sin(dx) + std::cos(dy) : dx * kMulX + dy * kMulY;
}

void fill_inputs(std::span<float> out, std::uint64_t seed) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    // 24 random bits scaled to [0, 16) and shifted: exact in fp32, uniform in [-8, 8).
    out[i] = float24(splitmix64(seed ^ (0xD1B54A32D192ED03ull * (i + 1))), -kInputRange, 2.0f * kInputRange);
  }
}

void poison(std::span<float> out) {
  for (float& v : out) v = std::numeric_limits<float>::quiet_NaN();
}

std::string ErrorCheck::text() const {
  char line[200];
  if (!std::isfinite(max_abs_error)) {
    std::snprintf(line, sizeof line, "element %zu is not finite (poison left or overflow)", worst);
  } else {
    std::snprintf(line, sizeof line, "max |error| %.3g at element %zu (bound %.3g, %zu elements checked)",
                  max_abs_error, worst, bound, checked);
  }
  return line;
}

ErrorCheck check_against_reference(Op op, std::span<const float> x, std::span<const float> y,
                                   std::span<const float> out, std::size_t max_checked, std::size_t sample_offset) {
  const std::size_t n = x.size();
  require_same_length(n, {y.size(), out.size()});
  ErrorCheck c;
  c.bound = max_abs_error_bound(op);
  for (std::size_t i = 0; i < n; ++i) {  // cheap, over everything: no element left unwritten
    if (!std::isfinite(out[i])) {
      c.ok = false;
      c.max_abs_error = std::numeric_limits<double>::infinity();
      c.worst = i;
      return c;
    }
  }
  auto compare = [&](std::size_t i) {
    const double err = std::fabs(static_cast<double>(out[i]) - reference_at(op, x[i], y[i]));
    if (err > c.max_abs_error) {
      c.max_abs_error = err;
      c.worst = i;
    }
    ++c.checked;
  };
  constexpr std::size_t kEdge = 4096;
  if (n <= max_checked || n <= 2 * kEdge) {
    for (std::size_t i = 0; i < n; ++i) compare(i);
  } else {
    const std::size_t stride = (n + max_checked - 1) / std::max<std::size_t>(max_checked, 1);
    for (std::size_t i = 0; i < kEdge; ++i) compare(i);
    for (std::size_t i = kEdge + sample_offset % stride; i < n - kEdge; i += stride) compare(i);
    for (std::size_t i = n - kEdge; i < n; ++i) compare(i);
  }
  c.ok = c.max_abs_error <= c.bound;
  return c;
}

}  // namespace pairbench::kernels::fusion
