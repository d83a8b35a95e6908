// comm.allreduce (C9) on GPUs: a float buffer of N elements on each of devices 0..P-1, sum-all-
// reduced in place either through GPU 0 (DataParallel's shape: peer copies to GPU 0, a sum kernel
// there, peer copies back) or with NCCL's ncclAllReduce (DistributedDataParallel's). No CUDA or
// NCCL types here, so plain C++ bench code can use it; gpu_allreduce_unavailable.cpp stands in
// where nvcc is absent.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "kernels/collective/thread_allreduce.h"

namespace pairbench::kernels::collective::gpu {

// "" when `participants` CUDA devices are visible, else "no CUDA device", "needs >= 2 CUDA
// devices, found 1" or "not compiled with CUDA".
std::string devices_unavailable_reason(int participants);
// "" when NCCL was found at build time, else "NCCL not found at build time" (or "not compiled with CUDA").
std::string nccl_unavailable_reason();

// Buffers on devices 0..P-1, one non-blocking stream per device, a (P-1) x N staging area on GPU 0
// for the gather, peer access enabled where the hardware allows it; NCCL communicators
// (ncclCommInitAll over devices 0..P-1) are created on the first ring run. Every method throws
// std::runtime_error naming the failed CUDA or NCCL call.
class GpuAllReduce {
 public:
  GpuAllReduce(int participants, std::size_t elements);  // participants >= 1, elements >= 1
  ~GpuAllReduce();
  GpuAllReduce(const GpuAllReduce&) = delete;
  GpuAllReduce& operator=(const GpuAllReduce&) = delete;

  int participants() const;
  void upload(int participant, std::span<const float> values);  // blocks
  void download(int participant, std::span<float> values);      // blocks
  void poison_staging();                                         // GPU 0's gather staging = NaN; blocks
  // CUDA events on GPU 0 around `repeats` all-reduces; the other devices' streams wait for the
  // start event and GPU 0 waits for their last work before the stop event, so the span covers the
  // whole collective on every device. Blocks; returns milliseconds.
  double time_ms(Algorithm algorithm, int repeats);

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace pairbench::kernels::collective::gpu
