// ops.fusion (C13) in CUDA: the same ops as sin_cos.h as three kernels (two materialised
// temporaries in device memory) or one fused kernel, on device 0. No CUDA types here, so plain
// C++ bench code can use it; cuda_sin_cos_unavailable.cpp stands in where nvcc is absent.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "kernels/fusion/sin_cos.h"

namespace pairbench::kernels::fusion::cuda {

// "" when a CUDA device is usable, else "no CUDA device" / "not compiled with CUDA".
std::string device_unavailable_reason();

// x, y, the temporaries a, b and out on device 0, and a stream the object owns. Every method
// throws std::runtime_error naming the failed CUDA call.
class DeviceSinCos {
 public:
  explicit DeviceSinCos(std::int64_t elements);  // elements >= 1
  ~DeviceSinCos();
  DeviceSinCos(const DeviceSinCos&) = delete;
  DeviceSinCos& operator=(const DeviceSinCos&) = delete;

  void upload(std::span<const float> x, std::span<const float> y);  // blocks
  void poison();                                                     // a, b, out = NaN; blocks
  // CUDA events around `repeats` evaluations (3 launches each unfused, 1 fused); blocks.
  // sinf/cosf are the accurate device functions (no fast-math intrinsics).
  double time_ms(Op op, Form form, int repeats);
  void download(std::span<float> out);  // blocks

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace pairbench::kernels::fusion::cuda
