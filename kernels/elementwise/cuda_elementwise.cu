// CUDA bandwidth-bound ops over fp32 / bf16 / fp16 storage with fp32 math: axpb with 16-byte
// vector accesses, layer-norm with one warp per row. Every CUDA call's status is checked.
#include <cuda_bf16.h>

#include "kernels/common/cuda_check.cuh"
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "kernels/elementwise/cuda_elementwise.h"

namespace pairbench::kernels::cuda {
namespace {

using elementwise::Storage;

using kernels::check;

__device__ __forceinline__ float to_f(float v) { return v; }
__device__ __forceinline__ float to_f(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
template <typename T>
__device__ __forceinline__ T from_f(float v);
template <>
__device__ __forceinline__ float from_f<float>(float v) {
  return v;
}
template <>
__device__ __forceinline__ __half from_f<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_f<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}

// Each thread moves 16 bytes per step (4 fp32 or 8 16-bit elements); the tail goes element-wise.
template <typename T>
__global__ void axpb_kernel(const T* __restrict__ x, T* __restrict__ y, std::size_t n, float a, float b) {
  constexpr int kVec = 16 / sizeof(T);
  const std::size_t nvec = n / kVec;
  const std::size_t first = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t v = first; v < nvec; v += stride) {
    uint4 raw = reinterpret_cast<const uint4*>(x)[v];
    T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
    for (int l = 0; l < kVec; ++l) e[l] = from_f<T>(a * to_f(e[l]) + b);
    reinterpret_cast<uint4*>(y)[v] = raw;
  }
  for (std::size_t i = nvec * kVec + first; i < n; i += stride) y[i] = from_f<T>(a * to_f(x[i]) + b);
#if defined(PAIRBENCH_PLANTED_SLOWDOWN_PERCENT)
  // The GPU gate's planted change (CMake PAIRBENCH_PLANTED_SLOWDOWN, never in a real build): fp32
  // only, the last block's first thread spins after its share, so the kernel ends that much later.
  // n / 2100 cycles is 10 % at 16M elements on an H200 (axpb moves 8 bytes per element at 3.3 TB/s:
  // 41 us; 8000 cycles at 1.98 GHz: 4 us); rereading data instead was mostly served by the L2 and
  // measured +3 % there (2026-11-28). Outputs are unchanged, so the arm still verifies.
  if constexpr (std::is_same_v<T, float>) {
    if (blockIdx.x == gridDim.x - 1 && threadIdx.x == 0) {
      const long long until = clock64() + static_cast<long long>(n / 21000) * PAIRBENCH_PLANTED_SLOWDOWN_PERCENT;
      while (clock64() < until) {
      }
    }
  }
#endif
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xFFFFFFFFu, v, offset);
  return v;
}

// One warp per row; the second and third reads of a row hit L1/L2, so DRAM sees one read, one write.
template <typename T>
__global__ void layer_norm_kernel(const T* __restrict__ x, T* __restrict__ y, std::int64_t rows, std::int64_t cols,
                                  float eps) {
  const std::int64_t row = (blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const T* xr = x + row * cols;
  T* yr = y + row * cols;
  float s = 0;
  for (std::int64_t j = lane; j < cols; j += 32) s += to_f(xr[j]);
  const float mean = warp_sum(s) / static_cast<float>(cols);
  float v = 0;
  for (std::int64_t j = lane; j < cols; j += 32) {
    const float d = to_f(xr[j]) - mean;
    v += d * d;
  }
  const float rstd = rsqrtf(warp_sum(v) / static_cast<float>(cols) + eps);
  for (std::int64_t j = lane; j < cols; j += 32) yr[j] = from_f<T>((to_f(xr[j]) - mean) * rstd);
}

constexpr int kThreads = 256;

}  // namespace

struct DeviceBandwidthOps::Impl {
  Storage storage;
  std::size_t n = 0;
  void* x = nullptr;
  void* y = nullptr;
  cudaStream_t stream = nullptr;
  int sms = 1;
  std::size_t bytes() const { return n * elementwise::storage_bytes(storage); }
  void release() {
    if (stream) cudaStreamDestroy(stream);
    if (y) cudaFree(y);
    if (x) cudaFree(x);
  }
  template <typename T>
  void launch(const ElementwiseOp& op) {
    const T* xs = static_cast<const T*>(x);
    T* ys = static_cast<T*>(y);
    if (op.kind == ElementwiseOp::Kind::kAxpb) {
      const std::size_t vecs = std::max<std::size_t>(n / (16 / sizeof(T)), 1);
      const unsigned blocks = static_cast<unsigned>(
          std::min<std::size_t>((vecs + kThreads - 1) / kThreads, static_cast<std::size_t>(sms) * 16));
      axpb_kernel<T><<<blocks, kThreads, 0, stream>>>(xs, ys, n, op.a, op.b);
      PB_LAUNCHED("axpb_kernel");
    } else {
      if (op.cols <= 0 || n % static_cast<std::size_t>(op.cols) != 0) {
        throw std::invalid_argument("layer_norm_rows: elements is not a multiple of cols");
      }
      const std::int64_t rows = static_cast<std::int64_t>(n) / op.cols;
      const std::int64_t warps_per_block = kThreads / 32;
      const auto blocks = static_cast<unsigned>((rows + warps_per_block - 1) / warps_per_block);
      layer_norm_kernel<T><<<blocks, kThreads, 0, stream>>>(xs, ys, rows, op.cols, op.eps);
      PB_LAUNCHED("layer_norm_kernel");
    }
  }
};

DeviceBandwidthOps::DeviceBandwidthOps(Storage storage, std::int64_t elements) : impl_(new Impl) {
  impl_->storage = storage;
  impl_->n = static_cast<std::size_t>(elements);
  try {
    if (elements <= 0) throw std::invalid_argument("DeviceBandwidthOps: elements must be > 0");
    PB_CUDA(cudaMalloc(&impl_->x, impl_->bytes()));
    PB_CUDA(cudaMalloc(&impl_->y, impl_->bytes()));
    PB_CUDA(cudaStreamCreateWithFlags(&impl_->stream, cudaStreamNonBlocking));
    PB_CUDA(cudaDeviceGetAttribute(&impl_->sms, cudaDevAttrMultiProcessorCount, 0));
  } catch (...) {
    impl_->release();
    delete impl_;
    throw;
  }
}

DeviceBandwidthOps::~DeviceBandwidthOps() {
  cudaStreamSynchronize(impl_->stream);
  impl_->release();
  delete impl_;
}

void DeviceBandwidthOps::upload(std::span<const float> x) {
  if (x.size() != impl_->n) throw std::invalid_argument("DeviceBandwidthOps::upload: size mismatch");
  elementwise::HostArray host(impl_->storage, impl_->n);
  host.store(x);
  PB_CUDA(cudaMemcpyAsync(impl_->x, host.data(), impl_->bytes(), cudaMemcpyHostToDevice, impl_->stream));
  PB_CUDA(cudaStreamSynchronize(impl_->stream));
}

void DeviceBandwidthOps::poison_output() {
  // All-ones bytes are NaN in fp32, fp16 and bf16 alike.
  PB_CUDA(cudaMemsetAsync(impl_->y, 0xFF, impl_->bytes(), impl_->stream));
  PB_CUDA(cudaStreamSynchronize(impl_->stream));
}

void DeviceBandwidthOps::enqueue(const ElementwiseOp& op) {
  switch (impl_->storage) {
    case Storage::kFp32:
      return impl_->launch<float>(op);
    case Storage::kFp16:
      return impl_->launch<__half>(op);
    case Storage::kBf16:
      return impl_->launch<__nv_bfloat16>(op);
  }
}

kernels::cuda::StreamRef DeviceBandwidthOps::stream() const { return {impl_->stream}; }

void DeviceBandwidthOps::download(std::span<float> y) {
  if (y.size() != impl_->n) throw std::invalid_argument("DeviceBandwidthOps::download: size mismatch");
  elementwise::HostArray host(impl_->storage, impl_->n);
  PB_CUDA(cudaMemcpyAsync(host.data(), impl_->y, impl_->bytes(), cudaMemcpyDeviceToHost, impl_->stream));
  PB_CUDA(cudaStreamSynchronize(impl_->stream));
  host.load(y);
}

}  // namespace pairbench::kernels::cuda
