// The GPU consumer of the loader experiment (C5): a pinned batch is copied to the device and the
// same linear layer as CpuConsumer runs on it, timed with CUDA events, so "GPU busy" = summed
// kernel time. No CUDA types here; without CUDA every entry point throws NotSupported (cuda_seam.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kernels/common/cuda_seam.h"

namespace pairbench::kernels::loader::cuda {

// Page-locked host memory (cudaHostAlloc) for the loader's batch buffers: HostAllocator hooks.
// pinned_allocate throws std::runtime_error naming the failed call; pinned_free ignores nullptr.
PAIRBENCH_CUDA_INLINE void* pinned_allocate(std::size_t bytes) PAIRBENCH_CUDA_ENTRY;
PAIRBENCH_CUDA_INLINE void pinned_free(void* p) PAIRBENCH_CUDA_ELSE();

struct GpuConsumeResult {
  double output_sum = 0;       // sum of every y, as CpuConsumer::consume returns
  std::uint64_t checksum = 0;  // batch_checksum of the batch as the device received it
};

// Device copies of the weights and of one batch, a stream and two events, owned by the object.
// Every method throws std::runtime_error naming the failed CUDA call.
class CudaConsumer {
 public:
  // weights: consumer_weights(features, outputs, seed)'s layout; max_samples: the largest batch.
  CudaConsumer(std::span<const float> weights, std::size_t features, int outputs, int max_samples) PAIRBENCH_CUDA_ENTRY;
  ~CudaConsumer() PAIRBENCH_CUDA_ELSE();
  CudaConsumer(const CudaConsumer&) = delete;
  CudaConsumer& operator=(const CudaConsumer&) = delete;

  // H2D copy of `samples` rows of `batch` (pinned memory: a true async DMA), then the kernel between
  // two events, then the outputs and checksum back. Blocks until all of it is done, so the caller
  // may hand `batch` back to the loader afterwards.
  GpuConsumeResult consume(const float* batch, int samples) PAIRBENCH_CUDA_ENTRY;
  double kernel_busy_s() const { return busy_s_; }               // summed event time of every kernel so far
  const std::vector<float>& last_outputs() const { return y_; }  // [samples][outputs] of the last batch

 private:
  struct Impl;
  Impl* impl_;
  std::size_t features_;
  int outputs_, max_samples_;
  double busy_s_ = 0;
  std::vector<float> y_;
};

}  // namespace pairbench::kernels::loader::cuda
