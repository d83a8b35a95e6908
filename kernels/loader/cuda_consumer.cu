// The loader's GPU consumer: pinned batch -> cudaMemcpyAsync H2D -> the linear layer of CpuConsumer
// (one block per sample) between two CUDA events -> outputs and checksum back. Every CUDA call's
// status is checked.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

#include "kernels/common/cuda_check.cuh"
#include "kernels/common/rng.h"
#include "kernels/loader/cuda_consumer.h"

namespace pairbench::kernels::loader::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kBlock = 8;  // outputs per weight block, as in pipeline.cpp

// Block s handles sample s: its share of batch_checksum (exact integer sum, so any order gives
// the host's value), then y[s][r] = sum_k W[r][k] x[s][k] in blocks of 8 outputs, reduced across
// the block (float sums in another order than the host's: equal within rounding, not bit for bit).
__global__ void consume_kernel(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y,
                               unsigned long long* __restrict__ checksum, unsigned long long features, int outputs) {
  __shared__ float partial[kWarps][kBlock];
  const unsigned long long s = blockIdx.x;
  const float* xs = x + s * features;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;

  unsigned long long h = 0;
  for (unsigned long long k = threadIdx.x; k < features; k += blockDim.x) {
    h += splitmix64(static_cast<unsigned long long>(__float_as_uint(xs[k])) ^ ((s * features + k) << 32));
  }
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) h += __shfl_down_sync(0xFFFFFFFFu, h, offset);
  if (lane == 0) atomicAdd(checksum, h);

  for (int b = 0; b < outputs / kBlock; ++b) {
    const float* wb = w + static_cast<unsigned long long>(b) * features * kBlock;
    float acc[kBlock] = {};
    for (unsigned long long k = threadIdx.x; k < features; k += blockDim.x) {
      const float xk = xs[k];
#pragma unroll
      for (int i = 0; i < kBlock; ++i) acc[i] += wb[k * kBlock + i] * xk;
    }
#pragma unroll
    for (int i = 0; i < kBlock; ++i) {
#pragma unroll
      for (int offset = 16; offset > 0; offset /= 2) acc[i] += __shfl_xor_sync(0xFFFFFFFFu, acc[i], offset);
    }
    if (lane == 0) {
#pragma unroll
      for (int i = 0; i < kBlock; ++i) partial[warp][i] = acc[i];
    }
    __syncthreads();
    if (threadIdx.x < kBlock) {
      float sum = 0;
      for (int v = 0; v < kWarps; ++v) sum += partial[v][threadIdx.x];
      y[s * outputs + b * kBlock + threadIdx.x] = sum;
    }
    __syncthreads();  // partial is rewritten by the next block of outputs
  }
}

}  // namespace

void* pinned_allocate(std::size_t bytes) {
  void* p = nullptr;
  PB_CUDA(cudaHostAlloc(&p, bytes, cudaHostAllocDefault));
  return p;
}

void pinned_free(void* p) {
  if (p) cudaFreeHost(p);  // a destructor path: an error here has nowhere to go
}

struct CudaConsumer::Impl {
  float* w = nullptr;
  float* x = nullptr;
  float* y = nullptr;
  unsigned long long* checksum = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  void release() {
    if (stop) cudaEventDestroy(stop);
    if (start) cudaEventDestroy(start);
    if (stream) cudaStreamDestroy(stream);
    if (checksum) cudaFree(checksum);
    if (y) cudaFree(y);
    if (x) cudaFree(x);
    if (w) cudaFree(w);
  }
};

CudaConsumer::CudaConsumer(std::span<const float> weights, std::size_t features, int outputs, int max_samples)
    : impl_(new Impl), features_(features), outputs_(outputs), max_samples_(max_samples) {
  try {
    if (outputs < kBlock || outputs % kBlock != 0)
      throw std::invalid_argument("CudaConsumer: outputs must be a multiple of 8");
    if (features == 0 || max_samples < 1)
      throw std::invalid_argument("CudaConsumer: features and max_samples must be > 0");
    if (weights.size() != features * static_cast<std::size_t>(outputs)) {
      throw std::invalid_argument("CudaConsumer: weights must hold features * outputs values");
    }
    PB_CUDA(cudaMalloc(&impl_->w, weights.size_bytes()));
    PB_CUDA(cudaMalloc(&impl_->x, static_cast<std::size_t>(max_samples) * features * sizeof(float)));
    PB_CUDA(cudaMalloc(&impl_->y, static_cast<std::size_t>(max_samples) * outputs * sizeof(float)));
    PB_CUDA(cudaMalloc(&impl_->checksum, sizeof(unsigned long long)));
    PB_CUDA(cudaStreamCreateWithFlags(&impl_->stream, cudaStreamNonBlocking));
    PB_CUDA(cudaEventCreate(&impl_->start));
    PB_CUDA(cudaEventCreate(&impl_->stop));
    PB_CUDA(cudaMemcpyAsync(impl_->w, weights.data(), weights.size_bytes(), cudaMemcpyHostToDevice, impl_->stream));
    PB_CUDA(cudaStreamSynchronize(impl_->stream));
  } catch (...) {
    impl_->release();
    delete impl_;
    throw;
  }
}

CudaConsumer::~CudaConsumer() {
  cudaStreamSynchronize(impl_->stream);
  impl_->release();
  delete impl_;
}

GpuConsumeResult CudaConsumer::consume(const float* batch, int samples) {
  if (samples < 0 || samples > max_samples_) throw std::invalid_argument("CudaConsumer::consume: bad sample count");
  y_.assign(static_cast<std::size_t>(samples) * outputs_, 0.0f);
  if (samples == 0) return {};
  const std::size_t x_bytes = static_cast<std::size_t>(samples) * features_ * sizeof(float);
  unsigned long long checksum = 0;
  PB_CUDA(cudaMemcpyAsync(impl_->x, batch, x_bytes, cudaMemcpyHostToDevice, impl_->stream));
  PB_CUDA(cudaMemsetAsync(impl_->checksum, 0, sizeof(unsigned long long), impl_->stream));
  PB_CUDA(cudaEventRecord(impl_->start, impl_->stream));
  consume_kernel<<<static_cast<unsigned>(samples), kThreads, 0, impl_->stream>>>(
      impl_->x, impl_->w, impl_->y, impl_->checksum, static_cast<unsigned long long>(features_), outputs_);
  PB_LAUNCHED("consume_kernel");
  PB_CUDA(cudaEventRecord(impl_->stop, impl_->stream));
  PB_CUDA(cudaMemcpyAsync(y_.data(), impl_->y, y_.size() * sizeof(float), cudaMemcpyDeviceToHost, impl_->stream));
  PB_CUDA(cudaMemcpyAsync(&checksum, impl_->checksum, sizeof(checksum), cudaMemcpyDeviceToHost, impl_->stream));
  PB_CUDA(cudaStreamSynchronize(impl_->stream));  // the batch buffer is free again after this
  float ms = 0;
  PB_CUDA(cudaEventElapsedTime(&ms, impl_->start, impl_->stop));
  busy_s_ += ms * 1e-3;
  GpuConsumeResult result{.output_sum = 0, .checksum = checksum};
  for (float v : y_) result.output_sum += v;
  return result;
}

}  // namespace pairbench::kernels::loader::cuda
