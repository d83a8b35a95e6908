// Host-side API of the GPU allocator workload: one training-step trace (tensor_trace.h) replayed
// on two CUDA streams through cudaMalloc/cudaFree, a stream-ordered pool (cudaMallocFromPoolAsync)
// or the caching allocator (caching_allocator.h) over cudaMalloc. No CUDA types here;
// gpu_allocators.cu implements it; without CUDA every entry point throws NotSupported (cuda_seam.h).
#pragma once

#include <cstdint>
#include <string>

#include "kernels/alloc/tensor_trace.h"
#include "kernels/common/cuda_seam.h"

namespace pairbench::kernels::cuda {

enum class GpuAllocatorKind {
  kCudaMalloc,       // cudaMalloc / cudaFree at every event (cudaFree synchronises the device)
  kAsyncPool,        // cudaMallocFromPoolAsync / cudaFreeAsync, pool release threshold 0 (CUDA's default):
                     // memory beyond the threshold goes back to the OS at each synchronisation
  kAsyncPoolRetain,  // the same pool with release threshold UINT64_MAX: nothing is given back
  kCaching,          // kernels/alloc CachingAllocator over cudaMalloc, bins per stream
};
inline const char* gpu_allocator_name(GpuAllocatorKind kind) {
  switch (kind) {
    case GpuAllocatorKind::kCudaMalloc:
      return "cuda_malloc";
    case GpuAllocatorKind::kAsyncPool:
      return "async_pool";
    case GpuAllocatorKind::kAsyncPoolRetain:
      return "async_pool_retain";
    case GpuAllocatorKind::kCaching:
      return "caching";
  }
  return "unknown";
}

// Every method throws std::runtime_error naming the failed CUDA call.
class GpuTraceReplay {
 public:
  explicit GpuTraceReplay(GpuAllocatorKind kind) PAIRBENCH_CUDA_ENTRY;  // creates the two streams (and the pool)
  ~GpuTraceReplay() PAIRBENCH_CUDA_ELSE();
  GpuTraceReplay(const GpuTraceReplay&) = delete;
  GpuTraceReplay& operator=(const GpuTraceReplay&) = delete;

  // Replays one step: each allocation is followed by a cudaMemsetAsync of its first 4 KiB on its
  // stream (the tensor being produced), each free is stream-ordered after that; ends with both
  // streams synchronised. Blocks.
  void run_step(const alloc::TensorTrace& trace) PAIRBENCH_CUDA_ENTRY;
  // The same, untimed and slow: no two live tensors overlap, and before each free the tensor's first
  // bytes are copied back and checked against the byte written. Returns "" or what was wrong.
  std::string verify_step(const alloc::TensorTrace& trace) PAIRBENCH_CUDA_ENTRY;
  // The pool's release threshold in bytes (async kinds), else 0.
  std::uint64_t release_threshold_bytes() const PAIRBENCH_CUDA_ENTRY;
  // e.g. "cudaMallocFromPoolAsync, own pool, release threshold 0 B"; "caching: 12 backing allocs, 840 hits".
  std::string describe() const PAIRBENCH_CUDA_ENTRY;

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace pairbench::kernels::cuda
