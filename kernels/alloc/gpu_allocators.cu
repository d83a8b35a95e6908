// The GPU allocator workload: a training-step trace replayed through cudaMalloc, a stream-ordered
// pool or the caching allocator. Every CUDA call's status is checked.
#include "kernels/alloc/gpu_allocators.h"

#include "kernels/common/cuda_check.cuh"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/alloc/caching_allocator.h"

namespace pairbench::kernels::cuda {
namespace {

using kernels::check;

constexpr std::size_t kWrittenBytes = 4096;  // per tensor, the part each step writes
constexpr std::size_t kCheckedBytes = 16;

int tag_of(std::uint32_t tensor) { return static_cast<int>(tensor % 251) + 1; }  // never 0

class CudaMallocBacking : public alloc::BackingAllocator {
 public:
  void* allocate(std::size_t bytes) override {
    void* p = nullptr;
    const cudaError_t status = cudaMalloc(&p, bytes);
    if (status == cudaErrorMemoryAllocation) {
      cudaGetLastError();  // clear it: the caching allocator empties its cache and retries
      throw std::bad_alloc();
    }
    check(status, "cudaMalloc");
    return p;
  }
  // Never throws: also called from the caching allocator's destructor.
  void deallocate(void* p, std::size_t) override {
    if (cudaFree(p) != cudaSuccess) ++failed_frees;
  }
  int failed_frees = 0;
};

}  // namespace

struct GpuTraceReplay::Impl {
  GpuAllocatorKind kind = GpuAllocatorKind::kCudaMalloc;
  cudaStream_t streams[2] = {nullptr, nullptr};
  cudaMemPool_t pool = nullptr;
  std::uint64_t release_threshold = 0;
  CudaMallocBacking backing;
  std::unique_ptr<alloc::CachingAllocator> caching;
  std::vector<void*> tensors;

  void* allocate(std::size_t bytes, int stream) {
    void* p = nullptr;
    switch (kind) {
      case GpuAllocatorKind::kCudaMalloc:
        PB_CUDA(cudaMalloc(&p, bytes));
        break;
      case GpuAllocatorKind::kAsyncPool:
      case GpuAllocatorKind::kAsyncPoolRetain:
        PB_CUDA(cudaMallocFromPoolAsync(&p, bytes, pool, streams[stream]));
        break;
      case GpuAllocatorKind::kCaching:
        p = caching->allocate(bytes, static_cast<alloc::StreamId>(stream));
        break;
    }
    return p;
  }

  void release(void* p, int stream) {
    switch (kind) {
      case GpuAllocatorKind::kCudaMalloc:
        PB_CUDA(cudaFree(p));
        break;
      case GpuAllocatorKind::kAsyncPool:
      case GpuAllocatorKind::kAsyncPoolRetain:
        PB_CUDA(cudaFreeAsync(p, streams[stream]));
        break;
      case GpuAllocatorKind::kCaching:
        caching->deallocate(p);  // reused only by later work on the same stream
        break;
    }
  }

  void sync() {
    PB_CUDA(cudaStreamSynchronize(streams[0]));
    PB_CUDA(cudaStreamSynchronize(streams[1]));
  }
};

GpuTraceReplay::GpuTraceReplay(GpuAllocatorKind kind) : impl_(new Impl) {
  impl_->kind = kind;
  try {
    PB_CUDA(cudaSetDevice(0));
    for (cudaStream_t& s : impl_->streams) PB_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    if (kind == GpuAllocatorKind::kAsyncPool || kind == GpuAllocatorKind::kAsyncPoolRetain) {
      cudaMemPoolProps props{};
      props.allocType = cudaMemAllocationTypePinned;
      props.location.type = cudaMemLocationTypeDevice;
      props.location.id = 0;
      PB_CUDA(cudaMemPoolCreate(&impl_->pool, &props));
      impl_->release_threshold =
          kind == GpuAllocatorKind::kAsyncPoolRetain ? std::numeric_limits<std::uint64_t>::max() : 0;
      PB_CUDA(cudaMemPoolSetAttribute(impl_->pool, cudaMemPoolAttrReleaseThreshold, &impl_->release_threshold));
    }
    if (kind == GpuAllocatorKind::kCaching) impl_->caching = std::make_unique<alloc::CachingAllocator>(impl_->backing);
  } catch (...) {
    for (cudaStream_t s : impl_->streams) {
      if (s) cudaStreamDestroy(s);
    }
    if (impl_->pool) cudaMemPoolDestroy(impl_->pool);
    delete impl_;
    throw;
  }
}

GpuTraceReplay::~GpuTraceReplay() {
  cudaStreamSynchronize(impl_->streams[0]);
  cudaStreamSynchronize(impl_->streams[1]);
  impl_->caching.reset();  // cudaFree of every cached block
  if (impl_->pool) cudaMemPoolDestroy(impl_->pool);
  for (cudaStream_t s : impl_->streams) cudaStreamDestroy(s);
  delete impl_;
}

void GpuTraceReplay::run_step(const alloc::TensorTrace& trace) {
  Impl& m = *impl_;
  m.tensors.assign(trace.tensors, nullptr);
  for (const alloc::TraceEvent& e : trace.events) {
    if (e.kind == alloc::TraceEvent::Kind::kAlloc) {
      void* p = m.allocate(e.bytes, e.stream);
      m.tensors[e.tensor] = p;
      PB_CUDA(cudaMemsetAsync(p, tag_of(e.tensor), std::min(e.bytes, kWrittenBytes), m.streams[e.stream]));
    } else {
      m.release(m.tensors[e.tensor], e.stream);
      m.tensors[e.tensor] = nullptr;
    }
  }
  m.sync();
}

std::string GpuTraceReplay::verify_step(const alloc::TensorTrace& trace) {
  Impl& m = *impl_;
  m.tensors.assign(trace.tensors, nullptr);
  std::map<std::uintptr_t, std::size_t> live;  // start -> bytes
  for (const alloc::TraceEvent& e : trace.events) {
    if (e.kind == alloc::TraceEvent::Kind::kAlloc) {
      void* p = m.allocate(e.bytes, e.stream);
      if (p == nullptr) return "tensor " + std::to_string(e.tensor) + ": null pointer";
      const auto start = reinterpret_cast<std::uintptr_t>(p);
      auto next = live.lower_bound(start);
      if (next != live.end() && next->first < start + e.bytes)
        return "tensor " + std::to_string(e.tensor) + " overlaps a live tensor";
      if (next != live.begin() && std::prev(next)->first + std::prev(next)->second > start) {
        return "tensor " + std::to_string(e.tensor) + " overlaps a live tensor";
      }
      live.emplace(start, e.bytes);
      m.tensors[e.tensor] = p;
      PB_CUDA(cudaMemsetAsync(p, tag_of(e.tensor), std::min(e.bytes, kWrittenBytes), m.streams[e.stream]));
    } else {
      void* p = m.tensors[e.tensor];
      unsigned char host[kCheckedBytes];
      std::memset(host, 0, sizeof host);
      const std::size_t n = std::min(e.bytes, kCheckedBytes);
      PB_CUDA(cudaMemcpyAsync(host, p, n, cudaMemcpyDeviceToHost, m.streams[e.stream]));
      PB_CUDA(cudaStreamSynchronize(m.streams[e.stream]));
      for (std::size_t i = 0; i < n; ++i) {
        if (host[i] != static_cast<unsigned char>(tag_of(e.tensor))) {
          return "tensor " + std::to_string(e.tensor) + ": byte " + std::to_string(i) + " was overwritten";
        }
      }
      live.erase(reinterpret_cast<std::uintptr_t>(p));
      m.release(p, e.stream);
      m.tensors[e.tensor] = nullptr;
    }
  }
  m.sync();
  if (m.backing.failed_frees > 0) return std::to_string(m.backing.failed_frees) + " cudaFree calls failed";
  return "";
}

std::uint64_t GpuTraceReplay::release_threshold_bytes() const { return impl_->release_threshold; }

std::string GpuTraceReplay::describe() const {
  switch (impl_->kind) {
    case GpuAllocatorKind::kCudaMalloc:
      return "cudaMalloc/cudaFree per tensor";
    case GpuAllocatorKind::kAsyncPool:
    case GpuAllocatorKind::kAsyncPoolRetain:
      return "cudaMallocFromPoolAsync, own pool, release threshold " + std::to_string(impl_->release_threshold) + " B";
    case GpuAllocatorKind::kCaching: {
      const alloc::CachingStats s = impl_->caching->stats();
      return "caching allocator over cudaMalloc, per-stream bins: " + std::to_string(s.backing_allocs) +
             " backing allocs, " + std::to_string(s.cache_hits) + " hits of " + std::to_string(s.requests) +
             " requests, peak reserved " + std::to_string(s.peak_bytes_reserved) + " B";
    }
  }
  return "";
}

}  // namespace pairbench::kernels::cuda
