// CUDA kernels of ops.fusion: unfused = three grid-stride kernels (a = f(x), b = g(y), out = a + b)
// with a and b in device memory; fused = one kernel. The accurate sinf/cosf (no --use_fast_math,
// no __sinf), and __fmul_rn/__fadd_rn so nvcc cannot contract x*2 + y*3 into an fma in the fused
// kernel only: both forms compute the same fp32 values. Every CUDA call's status is checked.
#include <cuda_runtime.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "kernels/common/cuda_check.cuh"
#include "kernels/fusion/cuda_sin_cos.h"

namespace pairbench::kernels::fusion::cuda {
namespace {

using kernels::check;

struct Sin {
  __device__ float operator()(float v) const { return sinf(v); }
};
struct Cos {
  __device__ float operator()(float v) const { return cosf(v); }
};
struct Mul {
  float k;
  __device__ float operator()(float v) const { return __fmul_rn(v, k); }
};

template <typename F>
__global__ void map_kernel(const float* __restrict__ in, float* __restrict__ out, std::size_t n, F f) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    out[i] = f(in[i]);
  }
}

__global__ void add_kernel(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ out,
                           std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    out[i] = __fadd_rn(a[i], b[i]);
  }
}

template <typename F, typename G>
__global__ void fused_kernel(const float* __restrict__ x, const float* __restrict__ y, float* __restrict__ out,
                             std::size_t n, F f, G g) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    out[i] = __fadd_rn(f(x[i]), g(y[i]));
  }
}

constexpr int kThreads = 256;
constexpr float kMulX = 2.0f, kMulY = 3.0f;  // as in sin_cos.cpp

}  // namespace

struct DeviceSinCos::Impl {
  std::size_t n = 0;
  float *x = nullptr, *y = nullptr, *a = nullptr, *b = nullptr, *out = nullptr;
  cudaStream_t stream = nullptr;
  unsigned blocks = 1;
  std::size_t bytes() const { return n * sizeof(float); }
  void release() {
    if (stream) cudaStreamDestroy(stream);
    for (float* p : {out, b, a, y, x}) {
      if (p) cudaFree(p);
    }
  }
  template <typename F, typename G>
  void enqueue(Form form, F f, G g) {
    if (form == Form::kUnfused) {
      map_kernel<<<blocks, kThreads, 0, stream>>>(x, a, n, f);
      PB_LAUNCHED("map_kernel (a = f(x))");
      map_kernel<<<blocks, kThreads, 0, stream>>>(y, b, n, g);
      PB_LAUNCHED("map_kernel (b = g(y))");
      add_kernel<<<blocks, kThreads, 0, stream>>>(a, b, out, n);
      PB_LAUNCHED("add_kernel");
    } else {
      fused_kernel<<<blocks, kThreads, 0, stream>>>(x, y, out, n, f, g);
      PB_LAUNCHED("fused_kernel");
    }
  }
  void enqueue(Op op, Form form) {
    if (op == Op::kSinCos)
      enqueue(form, Sin{}, Cos{});
    else
      enqueue(form, Mul{kMulX}, Mul{kMulY});
  }
};

DeviceSinCos::DeviceSinCos(std::int64_t elements) : impl_(new Impl) {
  impl_->n = static_cast<std::size_t>(elements);
  try {
    if (elements <= 0) throw std::invalid_argument("DeviceSinCos: elements must be > 0");
    for (float** p : {&impl_->x, &impl_->y, &impl_->a, &impl_->b, &impl_->out}) {
      PB_CUDA(cudaMalloc(reinterpret_cast<void**>(p), impl_->bytes()));
    }
    PB_CUDA(cudaStreamCreateWithFlags(&impl_->stream, cudaStreamNonBlocking));
    int sms = 1;
    PB_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    // One resident wave (8 blocks of 256 = 2048 threads per SM) looping grid-stride over the rest.
    const std::size_t wanted = (impl_->n + kThreads - 1) / kThreads;
    impl_->blocks = static_cast<unsigned>(std::min<std::size_t>(wanted, static_cast<std::size_t>(sms) * 8));
  } catch (...) {
    impl_->release();
    delete impl_;
    throw;
  }
}

DeviceSinCos::~DeviceSinCos() {
  cudaStreamSynchronize(impl_->stream);
  impl_->release();
  delete impl_;
}

void DeviceSinCos::upload(std::span<const float> x, std::span<const float> y) {
  if (x.size() != impl_->n || y.size() != impl_->n) throw std::invalid_argument("DeviceSinCos::upload: size mismatch");
  PB_CUDA(cudaMemcpyAsync(impl_->x, x.data(), impl_->bytes(), cudaMemcpyHostToDevice, impl_->stream));
  PB_CUDA(cudaMemcpyAsync(impl_->y, y.data(), impl_->bytes(), cudaMemcpyHostToDevice, impl_->stream));
  PB_CUDA(cudaStreamSynchronize(impl_->stream));
}

void DeviceSinCos::poison() {
  for (float* p : {impl_->a, impl_->b, impl_->out}) {
    PB_CUDA(cudaMemsetAsync(p, 0xFF, impl_->bytes(), impl_->stream));  // all-ones bytes: a NaN
  }
  PB_CUDA(cudaStreamSynchronize(impl_->stream));
}

void DeviceSinCos::enqueue(Op op, Form form) { impl_->enqueue(op, form); }

kernels::cuda::StreamRef DeviceSinCos::stream() const { return {impl_->stream}; }

void DeviceSinCos::download(std::span<float> out) {
  if (out.size() != impl_->n) throw std::invalid_argument("DeviceSinCos::download: size mismatch");
  PB_CUDA(cudaMemcpyAsync(out.data(), impl_->out, impl_->bytes(), cudaMemcpyDeviceToHost, impl_->stream));
  PB_CUDA(cudaStreamSynchronize(impl_->stream));
}

}  // namespace pairbench::kernels::fusion::cuda
