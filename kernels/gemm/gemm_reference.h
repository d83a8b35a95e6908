// GEMM shapes, fresh random inputs, the fp64 reference (full, or at a random sample of C's entries
// for large shapes) and the verification every GEMM arm passes before it is timed.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kernels/common/rng.h"
#include "kernels/elementwise/accuracy.h"

namespace pairbench::kernels::gemm {

// Row-major C[m x n] = A[m x k] * B[k x n].
struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  double flops() const { return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k); }
  std::string text() const;  // "4096x4096x1024" (m x n x k)
};
// Parses "MxNxK" (e.g. "8192x1024x4096") or a single "N" for a square N x N x N; throws
// std::invalid_argument naming the text otherwise.
GemmShape parse_shape(const std::string& text);

using ::pairbench::kernels::fresh_seed;  // kernels/common/rng.h
// Uniform in [-1, 1), both signs, never all zero; the same seed gives the same values.
void fill_random(std::span<float> out, std::uint64_t seed);

// C in fp64 from fp32 inputs, every entry (i-k-j order, fp64 accumulation).
void gemm_reference(std::span<const float> a, std::span<const float> b, const GemmShape& s, std::span<double> c);

// Which entries of C a verification compares: all of them when m*n*k <= kFullCheckFlops/2, else
// the crossing of up to 64 random rows and 64 random columns (up to 4096 entries, each a k-long
// fp64 dot product), so an 8192^3 check costs 2^25 multiply-adds instead of 2^39.
constexpr double kFullCheckFlops = 2.0 * 512 * 512 * 256;
struct GemmSample {
  std::vector<std::int64_t> rows, cols;  // sorted, distinct
  bool all = false;
  std::string describe() const;  // "all 65536 entries" / "64x64 sampled entries (fp64)"
};
GemmSample choose_sample(const GemmShape& s, std::uint64_t seed);
std::vector<double> reference_at(const GemmSample& sample, std::span<const float> a, std::span<const float> b,
                                 const GemmShape& s);  // row-major rows.size() x cols.size()
std::vector<float> values_at(const GemmSample& sample, std::span<const float> c, const GemmShape& s);

struct GemmVerification {
  elementwise::ErrorCheck check;
  std::string how;           // GemmSample::describe()
  std::string text() const;  // "rel_error 1.2e-07 <= bound 3.2e-05 over all 65536 entries"
};
// Compares C (fp32, or 16-bit results widened to fp32) with the fp64 product of the fp32 inputs
// A and B, against the precision's bound for depth k. Inputs before any 16-bit rounding: the
// error then includes what the arm's storage type loses.
GemmVerification verify_gemm(std::span<const float> a, std::span<const float> b, std::span<const float> c,
                             const GemmShape& s, elementwise::Precision p, std::uint64_t seed);

}  // namespace pairbench::kernels::gemm
