// ops.fusion (C13) in CUDA: the same ops as sin_cos.h as three kernels (two materialised
// temporaries in device memory) or one fused kernel, on device 0. No CUDA types here, so plain
// C++ bench code can use it; without CUDA every entry point throws NotSupported (cuda_seam.h).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "kernels/common/cuda_events.h"
#include "kernels/common/cuda_seam.h"
#include "kernels/fusion/sin_cos.h"

namespace pairbench::kernels::fusion::cuda {

// x, y, the temporaries a, b and out on device 0, and a stream the object owns. Every method
// throws std::runtime_error naming the failed CUDA call.
class DeviceSinCos {
 public:
  explicit DeviceSinCos(std::int64_t elements) PAIRBENCH_CUDA_ENTRY;  // elements >= 1
  ~DeviceSinCos() PAIRBENCH_CUDA_ELSE();
  DeviceSinCos(const DeviceSinCos&) = delete;
  DeviceSinCos& operator=(const DeviceSinCos&) = delete;

  void upload(std::span<const float> x, std::span<const float> y) PAIRBENCH_CUDA_ENTRY;  // blocks
  void poison() PAIRBENCH_CUDA_ENTRY;                                                    // a, b, out = NaN; blocks
  // Queues one evaluation (3 launches unfused, 1 fused) on stream(); returns at once.
  // sinf/cosf are the accurate device functions (no fast-math intrinsics).
  void enqueue(Op op, Form form) PAIRBENCH_CUDA_ENTRY;
  kernels::cuda::StreamRef stream() const PAIRBENCH_CUDA_ENTRY;  // the object's stream: time it with an EventSpan
  void download(std::span<float> out) PAIRBENCH_CUDA_ENTRY;      // blocks

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace pairbench::kernels::fusion::cuda
