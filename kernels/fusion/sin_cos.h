// ops.fusion (C13) on the host: out = f(x) + g(y) as three passes over memory with two
// materialised temporaries (what an eager framework runs: one kernel per op) or as one fused pass,
// for a libm-bound op (sin(x) + cos(y)) and a cheap one (2x + 3y); fp64 references and bounds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "kernels/common/rng.h"

namespace pairbench::kernels::fusion {

enum class Op {
  kSinCos,  // out = sinf(x) + cosf(y): libm calls, not vectorised (see sin_cos.cpp)
  kAddMul,  // out = x*2 + y*3: a few vector instructions per element, memory-bound past the caches
};
enum class Form {
  kUnfused,  // a = f(x); b = g(y); out = a + b: three passes, 7 floats moved per element
  kFused,    // out[i] = f(x[i]) + g(y[i]): one pass, 3 floats moved per element
};

Op op_from_name(const std::string& name);  // "sin_cos" | "add_mul"; throws std::invalid_argument
const char* op_name(Op op);

// Bytes read + written per element, write-allocate (read-for-ownership) traffic not counted, as
// in STREAM: unfused reads x, y, a, b and writes a, b, out (7 x 4 B); fused reads x, y, writes out.
double bytes_moved_per_element(Form form);

// The input range of every generated input: x, y uniform in [-kInputRange, kInputRange).
inline constexpr float kInputRange = 8.0f;

// Largest |out - reference| a correct fp32 arm may show for inputs in the range above, host or CUDA:
//  sin_cos: glibc's sinf/cosf are within 1 ulp, CUDA's within 2 ulp (CUDA C Programming Guide,
//           full range, no fast-math); |sin|, |cos| <= 1, so each is off by <= 2 x 2^-23; the fp32
//           sum (<= 2) rounds by <= 2^-23: 5 x 2^-23, rounded up to 8 x 2^-23 (~9.5e-7).
//  add_mul: x*2 is exact; y*3 (< 24) rounds by <= 2^-20; the sum (< 40) by <= 2^-19:
//           1.5 x 2^-19, rounded up to 2^-18 (~3.8e-6).
// A wrong element (missing pass, swapped operand) is off by ~0.1 or more, far above either.
double max_abs_error_bound(Op op);

// Three passes; `a` and `b` are the temporaries (same length as x). Spans must all be of equal
// length; throws std::invalid_argument otherwise. Every pass is its own out-of-line function, so
// the compiler cannot merge them back into one loop.
void run_unfused(Op op, std::span<const float> x, std::span<const float> y, std::span<float> a, std::span<float> b,
                 std::span<float> out);
// One pass, computing the same fp32 values as run_unfused bit for bit.
void run_fused(Op op, std::span<const float> x, std::span<const float> y, std::span<float> out);

// f(x) + g(y) in fp64 for element i (the reference: sin/cos of the fp32 inputs widened to double).
double reference_at(Op op, float x, float y);

// Fills `out` with uniform values in [-kInputRange, kInputRange) from the counter-based stream
// named by seed (element i depends only on seed and i).
void fill_inputs(std::span<float> out, std::uint64_t seed);
using ::pairbench::kernels::fresh_seed;  // kernels/common/rng.h

struct ErrorCheck {
  bool ok = true;
  double max_abs_error = 0;  // over the elements checked
  double bound = 0;          // max_abs_error_bound(op)
  std::size_t worst = 0;     // index of the largest error (or of the first non-finite value)
  std::size_t checked = 0;   // elements compared with the fp64 reference
  std::string text() const;  // "max |error| 1.2e-07 at element 17 (bound 9.5e-07, 65536 checked)"
};
// Compares out with the fp64 reference: every element when n <= max_checked, else an evenly
// strided sample of about max_checked elements (starting at a per-call offset) plus the first and
// last 4096; and, always over every element, that the value is finite (poison is NaN).
ErrorCheck check_against_reference(Op op, std::span<const float> x, std::span<const float> y,
                                   std::span<const float> out, std::size_t max_checked = std::size_t{1} << 20,
                                   std::size_t sample_offset = 0);

// Writes quiet NaN over `out`: an element an arm forgot to write fails the check above.
void poison(std::span<float> out);

}  // namespace pairbench::kernels::fusion
