// Accuracy beside speed: the relative Frobenius error of a result against an fp64 reference, and
// each precision's documented bound. An arm over its bound is reported "incorrect", never timed.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace pairbench::kernels::elementwise {

// fp32: IEEE single. tf32: fp32 storage, inputs rounded to 10 mantissa bits inside tensor-core math.
// fp16 / bf16: 16-bit storage of inputs (and of outputs where the arm says so), fp32 arithmetic.
enum class Precision { kFp32, kTf32, kFp16, kBf16 };
const char* precision_name(Precision p);  // "fp32", "tf32", "fp16", "bf16"

// ||got - ref||_F / ||ref||_F, summed in fp64. Any NaN or infinity in `got` gives +infinity (a
// poisoned output that was never written is caught here); an all-zero reference gives 0 when
// `got` is all zero too, +infinity otherwise. Sizes must match (std::invalid_argument).
double rel_error(std::span<const double> ref, std::span<const float> got);

// The same error, accumulated chunk by chunk: a 16 M-element check needs no 128 MiB fp64
// reference (whose page faults cost more than the check on a VM).
class RelErrorSum {
 public:
  void add(std::span<const double> ref, std::span<const float> got);  // sizes must match
  double value() const;                                               // as rel_error over everything added
 private:
  double diff2_ = 0, ref2_ = 0;
  bool finite_ = true;
};

// The bound on rel_error for C = A*B with depth k, random inputs of both signs, fp32 accumulation:
//   fp32: 1e-6 * sqrt(k). A random walk of fp32 rounding errors gives ~2^-24 * sqrt(k/2) ~ 4e-8 *
//         sqrt(k); the bound is 25x that, and still far below tf32's ~4e-4 for k < 10^5, so an fp32
//         arm that silently ran on TF32 tensor cores (NVIDIA_TF32_OVERRIDE=1) is flagged.
//   tf32: 2e-3. Inputs rounded to 10 mantissa bits (u = 2^-11) give ~3e-4 rms with round-to-nearest,
//         ~8e-4 if the hardware truncates (a bias); independent of k, as input rounding dominates.
//   fp16: 5e-3. Same 10-bit inputs as tf32 plus fp16 output rounding: ~5e-4 expected.
//   bf16: 1e-2. 7-bit mantissas (u = 2^-8): ~2.5e-3 expected from inputs and output rounding.
double gemm_error_bound(Precision p, std::int64_t k);
// The bound for elementwise and row-wise ops (axpb, layer-norm) whose inputs and outputs are stored
// in the precision and computed in fp32: fp32 1e-6, fp16 5e-3, bf16 1e-2 (two roundings each);
// tf32 is not a storage type and gets fp32's bound.
double elementwise_error_bound(Precision p);

struct ErrorCheck {
  double rel_error = 0;
  double bound = 0;
  bool ok = false;           // rel_error <= bound; false for NaN
  std::string text() const;  // "rel_error 3.1e-04 <= bound 1.0e-02"
};
ErrorCheck check_error(double rel_error, double bound);

}  // namespace pairbench::kernels::elementwise
