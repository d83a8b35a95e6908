// Stand-in for gpu_allocators.cu where nvcc is absent: reports why, never pretends to run.
#include "kernels/alloc/gpu_allocators.h"

#include <stdexcept>

namespace pairbench::kernels::cuda {

static constexpr const char* kNoCuda = "not compiled with CUDA";

const char* gpu_allocator_name(GpuAllocatorKind kind) {
  switch (kind) {
    case GpuAllocatorKind::kCudaMalloc: return "cuda_malloc";
    case GpuAllocatorKind::kAsyncPool: return "async_pool";
    case GpuAllocatorKind::kAsyncPoolRetain: return "async_pool_retain";
    case GpuAllocatorKind::kCaching: return "caching";
  }
  return "unknown";
}

struct GpuTraceReplay::Impl {};
GpuTraceReplay::GpuTraceReplay(GpuAllocatorKind) : impl_(nullptr) { throw std::runtime_error(kNoCuda); }
GpuTraceReplay::~GpuTraceReplay() = default;
void GpuTraceReplay::run_step(const alloc::TensorTrace&) { throw std::runtime_error(kNoCuda); }
std::string GpuTraceReplay::verify_step(const alloc::TensorTrace&) { throw std::runtime_error(kNoCuda); }
std::uint64_t GpuTraceReplay::release_threshold_bytes() const { return 0; }
std::string GpuTraceReplay::describe() const { return kNoCuda; }

}  // namespace pairbench::kernels::cuda
