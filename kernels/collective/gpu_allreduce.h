// comm.allreduce (C9) on GPUs: a float buffer of N elements on each of devices 0..P-1, sum-all-
// reduced in place either through GPU 0 (DataParallel's shape: peer copies to GPU 0, a sum kernel
// there, peer copies back) or with NCCL's ncclAllReduce (DistributedDataParallel's). No CUDA or
// NCCL types here, so plain C++ bench code can use it; without CUDA every entry point throws
// NotSupported (kernels/common/cuda_seam.h). Device counts: kernels/common/device.h.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "kernels/collective/thread_allreduce.h"
#include "kernels/common/cuda_events.h"
#include "kernels/common/cuda_seam.h"
#include "kernels/common/device.h"

namespace pairbench::kernels::collective::gpu {

// "" when NCCL was found at build time, else "NCCL not found at build time" (or "not compiled with CUDA").
PAIRBENCH_CUDA_INLINE std::string nccl_unavailable_reason()
    PAIRBENCH_CUDA_ELSE(::pairbench::kernels::cuda::kNotCompiledWithCudaReason);

// Buffers on devices 0..P-1, one non-blocking stream per device, a (P-1) x N staging area on GPU 0
// for the gather, peer access enabled where the hardware allows it; NCCL communicators
// (ncclCommInitAll over devices 0..P-1) are created on the first ring run. Every method throws
// std::runtime_error naming the failed CUDA or NCCL call; too few devices: NotSupported.
class GpuAllReduce {
 public:
  GpuAllReduce(int participants, std::size_t elements) PAIRBENCH_CUDA_ENTRY;  // participants >= 1, elements >= 1
  ~GpuAllReduce() PAIRBENCH_CUDA_ELSE();
  GpuAllReduce(const GpuAllReduce&) = delete;
  GpuAllReduce& operator=(const GpuAllReduce&) = delete;

  int participants() const PAIRBENCH_CUDA_ENTRY;
  void upload(int participant, std::span<const float> values) PAIRBENCH_CUDA_ENTRY;  // blocks
  void download(int participant, std::span<float> values) PAIRBENCH_CUDA_ENTRY;      // blocks
  void poison_staging() PAIRBENCH_CUDA_ENTRY;  // GPU 0's gather staging = NaN; blocks
  // Queues one all-reduce: every GPU's stream forks from GPU 0's stream and joins back into it,
  // so an event pair on stream() (device 0) spans the whole collective. Returns at once; leaves
  // device 0 current.
  void enqueue(Algorithm algorithm) PAIRBENCH_CUDA_ENTRY;
  kernels::cuda::StreamRef stream() const PAIRBENCH_CUDA_ENTRY;  // GPU 0's stream
  void synchronize() PAIRBENCH_CUDA_ENTRY;                       // waits for stream(), which has joined every GPU's

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace pairbench::kernels::collective::gpu
