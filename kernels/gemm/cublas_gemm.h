// Host API of the GPU GEMM through cuBLASLt: fp32, tf32 (fp32 data, tensor-core math), fp16 and
// bf16 (16-bit A, B and C, fp32 accumulation). No CUDA types here, so plain C++ bench code can use
// it; without CUDA every entry point throws NotSupported (kernels/common/cuda_seam.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "kernels/common/cuda_events.h"
#include "kernels/common/cuda_seam.h"
#include "kernels/common/device.h"
#include "kernels/elementwise/accuracy.h"
#include "kernels/gemm/gemm_reference.h"

namespace pairbench::kernels::cuda {

// "" when device 0 can run this precision's GEMM as the arm means it; otherwise why, with the
// compute capability: tf32 and bf16 tensor cores need 8.0, fp16 tensor cores 7.0. Never throws.
PAIRBENCH_CUDA_INLINE std::string gemm_unsupported_reason(elementwise::Precision p)
    PAIRBENCH_CUDA_ELSE(device_unavailable_reason());

// The untimed tuning pass: every algorithm cuBLASLt's heuristic offers, each timed, the fastest kept.
struct GemmAlgoChoice {
  int candidates = 0;             // algorithms the heuristic returned and that ran
  int chosen = 0;                 // index of the fastest in the heuristic's order (0 = its first choice)
  double chosen_ms = 0;           // per matmul, in the tuning pass
  double heuristic_first_ms = 0;  // the heuristic's first choice, per matmul
  std::string description;        // "algo 21 tile 20 stages 8 splitk 1 (2nd of 8 candidates)"
};

// Row-major C[m x n] = A[m x k] * B[k x n] on device 0, on a stream the object owns. Storage: fp32
// for fp32/tf32, the 16-bit type for fp16/bf16 (A, B and C). Methods throw std::runtime_error
// naming the failed CUDA/cuBLAS call.
class LtGemm {
 public:
  LtGemm(elementwise::Precision precision, const gemm::GemmShape& shape) PAIRBENCH_CUDA_ENTRY;
  ~LtGemm() PAIRBENCH_CUDA_ELSE();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  void upload(std::span<const float> a,
              std::span<const float> b) PAIRBENCH_CUDA_ENTRY;  // rounds to storage on the host; blocks
  void poison_output() PAIRBENCH_CUDA_ENTRY;                   // C = NaN; blocks
  GemmAlgoChoice tune(int max_candidates, int launches_per_candidate) PAIRBENCH_CUDA_ENTRY;  // blocks
  void enqueue() PAIRBENCH_CUDA_ENTRY;  // one matmul with the chosen algorithm; returns at once
  kernels::cuda::StreamRef stream() const PAIRBENCH_CUDA_ENTRY;  // the object's stream: time it with an EventSpan
  void sync() PAIRBENCH_CUDA_ENTRY;                              // waits for the stream
  void download(std::span<float> c) PAIRBENCH_CUDA_ENTRY;        // widens C to fp32 on the host; blocks

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace pairbench::kernels::cuda
