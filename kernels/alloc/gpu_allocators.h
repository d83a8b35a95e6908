// Host-side API of the GPU allocator workload: one training-step trace (tensor_trace.h) replayed
// on two CUDA streams through cudaMalloc/cudaFree, a stream-ordered pool (cudaMallocFromPoolAsync)
// or the caching allocator (caching_allocator.h) over cudaMalloc. No CUDA types here;
// gpu_allocators.cu implements it, gpu_allocators_unavailable.cpp stands in where nvcc is absent.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/alloc/tensor_trace.h"

namespace pairbench::kernels::cuda {

enum class GpuAllocatorKind {
  kCudaMalloc,     // cudaMalloc / cudaFree at every event (cudaFree synchronises the device)
  kAsyncPool,      // cudaMallocFromPoolAsync / cudaFreeAsync, pool release threshold 0 (CUDA's default):
                   // memory beyond the threshold goes back to the OS at each synchronisation
  kAsyncPoolRetain,  // the same pool with release threshold UINT64_MAX: nothing is given back
  kCaching,        // kernels/alloc CachingAllocator over cudaMalloc, bins per stream
};
const char* gpu_allocator_name(GpuAllocatorKind kind);

// Every method throws std::runtime_error naming the failed CUDA call.
class GpuTraceReplay {
 public:
  explicit GpuTraceReplay(GpuAllocatorKind kind);  // creates the two streams (and the pool)
  ~GpuTraceReplay();
  GpuTraceReplay(const GpuTraceReplay&) = delete;
  GpuTraceReplay& operator=(const GpuTraceReplay&) = delete;

  // Replays one step: each allocation is followed by a cudaMemsetAsync of its first 4 KiB on its
  // stream (the tensor being produced), each free is stream-ordered after that; ends with both
  // streams synchronised. Blocks.
  void run_step(const alloc::TensorTrace& trace);
  // The same, untimed and slow: no two live tensors overlap, and before each free the tensor's first
  // bytes are copied back and checked against the byte written. Returns "" or what was wrong.
  std::string verify_step(const alloc::TensorTrace& trace);
  // The pool's release threshold in bytes (async kinds), else 0.
  std::uint64_t release_threshold_bytes() const;
  // e.g. "cudaMallocFromPoolAsync, own pool, release threshold 0 B"; "caching: 12 backing allocs, 840 hits".
  std::string describe() const;

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace pairbench::kernels::cuda
