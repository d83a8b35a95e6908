// Host API of the CUDA bandwidth-bound ops: y = a*x + b and row-wise layer-norm over fp32, bf16 or
// fp16 storage with fp32 math, the same ops as bandwidth_ops.h. No CUDA types here, so plain C++
// bench code can use it; without CUDA every entry point throws NotSupported (cuda_seam.h).
#pragma once

#include <cstdint>
#include <span>

#include "kernels/common/cuda_events.h"
#include "kernels/common/cuda_seam.h"
#include "kernels/elementwise/bandwidth_ops.h"

namespace pairbench::kernels::cuda {

struct ElementwiseOp {
  enum class Kind { kAxpb, kLayerNorm } kind = Kind::kAxpb;
  float a = 1, b = 0;        // axpb: y = a*x + b
  std::int64_t cols = 1024;  // layer-norm: row length (one warp per row)
  float eps = 1e-5f;
};

// x and y on device 0 in one storage type, and a stream the object owns.
// Every method throws std::runtime_error naming the failed CUDA call.
class DeviceBandwidthOps {
 public:
  DeviceBandwidthOps(elementwise::Storage storage, std::int64_t elements) PAIRBENCH_CUDA_ENTRY;
  ~DeviceBandwidthOps() PAIRBENCH_CUDA_ELSE();
  DeviceBandwidthOps(const DeviceBandwidthOps&) = delete;
  DeviceBandwidthOps& operator=(const DeviceBandwidthOps&) = delete;

  void upload(std::span<const float> x) PAIRBENCH_CUDA_ENTRY;  // rounds to the storage type on the host, copies; blocks
  void poison_output() PAIRBENCH_CUDA_ENTRY;                   // y = NaN; blocks
  void enqueue(const ElementwiseOp& op) PAIRBENCH_CUDA_ENTRY;  // one launch on the stream; returns at once
  kernels::cuda::StreamRef stream() const PAIRBENCH_CUDA_ENTRY;  // the object's stream: time it with an EventSpan
  void download(std::span<float> y) PAIRBENCH_CUDA_ENTRY;        // widens y to fp32 on the host; blocks

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace pairbench::kernels::cuda
