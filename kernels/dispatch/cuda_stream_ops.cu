// CUDA dispatch workload: x[i] += 1 on a stream, the ways of waiting for it, scalar read-back,
// on-device accumulation and CUDA-graph replay. Every CUDA call's status is checked.
#include "kernels/dispatch/cuda_stream_ops.h"

#include "kernels/common/cuda_check.cuh"

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace pairbench::kernels::cuda {
namespace {

using kernels::check;

constexpr int kThreadsPerBlock = 256;

__global__ void add_one_kernel(float* x, std::size_t n) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}

__global__ void fill_kernel(float* x, std::size_t n, float value) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] = value;
}

__global__ void accumulate_kernel(const float* x, double* acc) { *acc += static_cast<double>(x[0]); }

// Keeps its SM busy for `cycles` clock cycles: unrelated work queued behind the tiny op.
__global__ void busy_kernel(long long cycles, int* sink) {
  const long long start = clock64();
  long long spins = 0;
  while (clock64() - start < cycles) ++spins;
  if (spins < 0) *sink = 1;  // never true; keeps the loop from being optimised away
}

// One thread spins for `cycles`, then adds one to every element: a heavy op with a checkable result.
__global__ void busy_add_one_kernel(float* x, std::size_t n, long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
  for (std::size_t i = 0; i < n; ++i) x[i] += 1.0f;
}

}  // namespace

struct StreamOps::Impl {
  std::size_t n = 0;
  float* x = nullptr;
  double* acc = nullptr;
  int* sink = nullptr;
  cudaStream_t stream = nullptr;
  cudaStream_t other = nullptr;
  cudaEvent_t done = nullptr;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t graph_exec = nullptr;
  int clock_khz = 0;
  unsigned blocks() const { return static_cast<unsigned>((n + kThreadsPerBlock - 1) / kThreadsPerBlock); }
  void release() {
    if (graph_exec) cudaGraphExecDestroy(graph_exec);
    if (graph) cudaGraphDestroy(graph);
    if (done) cudaEventDestroy(done);
    if (other) cudaStreamDestroy(other);
    if (stream) cudaStreamDestroy(stream);
    if (sink) cudaFree(sink);
    if (acc) cudaFree(acc);
    if (x) cudaFree(x);
  }
};

StreamOps::StreamOps(std::size_t elements) : impl_(new Impl) {
  impl_->n = elements;
  try {
    if (elements == 0) throw std::invalid_argument("StreamOps: elements must be > 0");
    PB_CUDA(cudaMalloc(&impl_->x, elements * sizeof(float)));
    PB_CUDA(cudaMalloc(&impl_->acc, sizeof(double)));
    PB_CUDA(cudaMalloc(&impl_->sink, sizeof(int)));
    PB_CUDA(cudaStreamCreateWithFlags(&impl_->stream, cudaStreamNonBlocking));
    PB_CUDA(cudaStreamCreateWithFlags(&impl_->other, cudaStreamNonBlocking));
    PB_CUDA(cudaEventCreateWithFlags(&impl_->done, cudaEventDisableTiming));
    PB_CUDA(cudaDeviceGetAttribute(&impl_->clock_khz, cudaDevAttrClockRate, 0));
  } catch (...) {
    impl_->release();
    delete impl_;
    throw;
  }
}

StreamOps::~StreamOps() {
  cudaDeviceSynchronize();
  impl_->release();
  delete impl_;
}

std::size_t StreamOps::elements() const { return impl_->n; }

void StreamOps::fill(float value) {
  fill_kernel<<<impl_->blocks(), kThreadsPerBlock, 0, impl_->stream>>>(impl_->x, impl_->n, value);
  PB_LAUNCHED("fill_kernel");
  PB_CUDA(cudaStreamSynchronize(impl_->stream));
}

void StreamOps::add_one() {
  add_one_kernel<<<impl_->blocks(), kThreadsPerBlock, 0, impl_->stream>>>(impl_->x, impl_->n);
  PB_LAUNCHED("add_one_kernel");
}

void StreamOps::add_one_busy(std::int64_t busy_ns) {
  const long long cycles = static_cast<long long>(busy_ns) * impl_->clock_khz / 1'000'000;
  busy_add_one_kernel<<<1, 1, 0, impl_->stream>>>(impl_->x, impl_->n, cycles);
  PB_LAUNCHED("busy_add_one_kernel");
}

void StreamOps::sync_stream() { PB_CUDA(cudaStreamSynchronize(impl_->stream)); }

void StreamOps::sync_event() {
  PB_CUDA(cudaEventRecord(impl_->done, impl_->stream));
  PB_CUDA(cudaEventSynchronize(impl_->done));
}

void StreamOps::sync_device() { PB_CUDA(cudaDeviceSynchronize()); }

float StreamOps::read_scalar() {
  float value = 0;
  PB_CUDA(cudaMemcpyAsync(&value, impl_->x, sizeof(float), cudaMemcpyDeviceToHost, impl_->stream));
  PB_CUDA(cudaStreamSynchronize(impl_->stream));
  return value;
}

void StreamOps::read_all(std::span<float> out) {
  if (out.size() != impl_->n) throw std::invalid_argument("StreamOps::read_all: size mismatch");
  PB_CUDA(cudaMemcpyAsync(out.data(), impl_->x, impl_->n * sizeof(float), cudaMemcpyDeviceToHost, impl_->stream));
  PB_CUDA(cudaStreamSynchronize(impl_->stream));
}

void StreamOps::reset_accumulator() {
  PB_CUDA(cudaMemsetAsync(impl_->acc, 0, sizeof(double), impl_->stream));
  PB_CUDA(cudaStreamSynchronize(impl_->stream));
}

void StreamOps::accumulate() {
  accumulate_kernel<<<1, 1, 0, impl_->stream>>>(impl_->x, impl_->acc);
  PB_LAUNCHED("accumulate_kernel");
}

double StreamOps::read_accumulator() {
  double value = 0;
  PB_CUDA(cudaMemcpyAsync(&value, impl_->acc, sizeof(double), cudaMemcpyDeviceToHost, impl_->stream));
  PB_CUDA(cudaStreamSynchronize(impl_->stream));
  return value;
}

void StreamOps::capture_graph(int ops) {
  if (impl_->graph_exec) {
    PB_CUDA(cudaGraphExecDestroy(impl_->graph_exec));
    impl_->graph_exec = nullptr;
  }
  if (impl_->graph) {
    PB_CUDA(cudaGraphDestroy(impl_->graph));
    impl_->graph = nullptr;
  }
  PB_CUDA(cudaStreamBeginCapture(impl_->stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < ops; ++i) {
    add_one_kernel<<<impl_->blocks(), kThreadsPerBlock, 0, impl_->stream>>>(impl_->x, impl_->n);
  }
  const cudaError_t launched = cudaGetLastError();
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(impl_->stream, &graph);
  check(launched, "add_one_kernel (captured)");
  check(ended, "cudaStreamEndCapture");
  impl_->graph = graph;
  PB_CUDA(cudaGraphInstantiate(&impl_->graph_exec, impl_->graph, 0));
  PB_CUDA(cudaGraphUpload(impl_->graph_exec, impl_->stream));  // keeps upload out of the first replay
}

void StreamOps::replay_graph() {
  if (!impl_->graph_exec) throw std::logic_error("StreamOps::replay_graph: no graph captured");
  PB_CUDA(cudaGraphLaunch(impl_->graph_exec, impl_->stream));
}

void StreamOps::enqueue_unrelated(int kernels, std::int64_t busy_ns) {
  const long long cycles = static_cast<long long>(busy_ns) * impl_->clock_khz / 1'000'000;
  for (int i = 0; i < kernels; ++i) {
    busy_kernel<<<1, 1, 0, impl_->other>>>(cycles, impl_->sink);
    PB_LAUNCHED("busy_kernel");
  }
}

void StreamOps::sync_unrelated() { PB_CUDA(cudaStreamSynchronize(impl_->other)); }

}  // namespace pairbench::kernels::cuda
