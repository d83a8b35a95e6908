// GPU all-reduce arms: gather_broadcast (cudaMemcpyPeerAsync of each GPU's buffer to GPU 0, a sum
// kernel on GPU 0, cudaMemcpyPeerAsync of the result back to each GPU) and ring (NCCL's
// ncclAllReduce, one call per GPU inside ncclGroupStart/End). Every CUDA and NCCL status is checked.
// NCCL is linked (PAIRBENCH_HAVE_NCCL, set by kernels/CMakeLists.txt when libnccl and nccl.h are
// found): it adds ~10-20 ms to a bench_comm start on the development VM, cheap enough not to dlopen.
#include <cuda_runtime.h>
#if PAIRBENCH_HAVE_NCCL
#include <nccl.h>
#endif

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/collective/gpu_allreduce.h"
#include "kernels/common/cuda_check.cuh"

namespace pairbench::kernels::collective::gpu {
namespace {

using kernels::check;

#if PAIRBENCH_HAVE_NCCL
void check_nccl(ncclResult_t status, const char* call) {
  if (status != ncclSuccess) throw std::runtime_error(std::string(call) + ": " + ncclGetErrorString(status));
}
#define PB_NCCL(call) check_nccl((call), #call)
#endif

// root[i] += staged[0][i] + ... + staged[others-1][i], in that order (exact for the tests' small integers).
__global__ void sum_kernel(float* __restrict__ root, const float* __restrict__ staged, int others, std::size_t n) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    float s = root[i];
    for (int k = 0; k < others; ++k) s += staged[static_cast<std::size_t>(k) * n + i];
    root[i] = s;
  }
}

constexpr int kThreads = 256;

}  // namespace

std::string nccl_unavailable_reason() {
#if PAIRBENCH_HAVE_NCCL
  return "";
#else
  return "NCCL not found at build time";
#endif
}

struct GpuAllReduce::Impl {
  int p = 0;
  std::size_t n = 0;
  std::vector<float*> buf;                  // buf[d] on device d
  float* staging = nullptr;                 // (p - 1) x n on device 0
  std::vector<cudaStream_t> stream;         // stream[d] on device d
  std::vector<cudaEvent_t> gathered, done;  // per device, recorded on stream[d]; no timing
  cudaEvent_t summed = nullptr;             // device 0, no timing
  cudaEvent_t fork = nullptr;               // device 0, no timing: where the other GPUs' streams start
  unsigned blocks = 1;
#if PAIRBENCH_HAVE_NCCL
  std::vector<ncclComm_t> comms;
#endif

  std::size_t bytes() const { return n * sizeof(float); }

  // Best effort: called from the destructor and after a failed constructor; errors are ignored.
  void release() {
    for (int d = 0; d < p; ++d) {
      cudaSetDevice(d);
      if (d < static_cast<int>(stream.size()) && stream[d]) cudaStreamSynchronize(stream[d]);
    }
#if PAIRBENCH_HAVE_NCCL
    for (ncclComm_t c : comms) {
      if (c) ncclCommDestroy(c);
    }
    comms.clear();
#endif
    for (int d = 0; d < p; ++d) {
      cudaSetDevice(d);
      if (d < static_cast<int>(done.size()) && done[d]) cudaEventDestroy(done[d]);
      if (d < static_cast<int>(gathered.size()) && gathered[d]) cudaEventDestroy(gathered[d]);
      if (d < static_cast<int>(stream.size()) && stream[d]) cudaStreamDestroy(stream[d]);
      if (d < static_cast<int>(buf.size()) && buf[d]) cudaFree(buf[d]);
    }
    cudaSetDevice(0);
    if (summed) cudaEventDestroy(summed);
    if (fork) cudaEventDestroy(fork);
    if (staging) cudaFree(staging);
    cudaGetLastError();
  }

  void enable_peer_access() {
    for (int d = 1; d < p; ++d) {
      for (auto [from, to] : {std::pair{0, d}, std::pair{d, 0}}) {
        int can = 0;
        PB_CUDA(cudaDeviceCanAccessPeer(&can, from, to));
        if (!can) continue;  // cudaMemcpyPeerAsync then stages through host memory, as DataParallel would
        PB_CUDA(cudaSetDevice(from));
        const cudaError_t st = cudaDeviceEnablePeerAccess(to, 0);
        if (st == cudaErrorPeerAccessAlreadyEnabled)
          cudaGetLastError();
        else
          check(st, "cudaDeviceEnablePeerAccess");
      }
    }
  }

  void enqueue_gather_broadcast() {
    // Gather: each GPU pushes its buffer into its slot of GPU 0's staging area on its own stream,
    // so the P-1 copies run concurrently over their links.
    for (int d = 1; d < p; ++d) {
      PB_CUDA(cudaSetDevice(d));
      PB_CUDA(cudaMemcpyPeerAsync(staging + static_cast<std::size_t>(d - 1) * n, 0, buf[d], d, bytes(), stream[d]));
      PB_CUDA(cudaEventRecord(gathered[d], stream[d]));
    }
    PB_CUDA(cudaSetDevice(0));
    for (int d = 1; d < p; ++d) PB_CUDA(cudaStreamWaitEvent(stream[0], gathered[d], 0));
    sum_kernel<<<blocks, kThreads, 0, stream[0]>>>(buf[0], staging, p - 1, n);
    PB_LAUNCHED("sum_kernel");
    PB_CUDA(cudaEventRecord(summed, stream[0]));
    // Broadcast: each GPU pulls the sum on its own stream once GPU 0 has it. The next gather on
    // stream[d] follows this copy, so the staging area is never overwritten while it is summed.
    for (int d = 1; d < p; ++d) {
      PB_CUDA(cudaSetDevice(d));
      PB_CUDA(cudaStreamWaitEvent(stream[d], summed, 0));
      PB_CUDA(cudaMemcpyPeerAsync(buf[d], d, buf[0], 0, bytes(), stream[d]));
    }
    PB_CUDA(cudaSetDevice(0));
  }

  void enqueue_ring() {
#if PAIRBENCH_HAVE_NCCL
    if (comms.empty()) {
      std::vector<int> devices(static_cast<std::size_t>(p));
      for (int d = 0; d < p; ++d) devices[static_cast<std::size_t>(d)] = d;
      std::vector<ncclComm_t> created(static_cast<std::size_t>(p), nullptr);
      PB_NCCL(ncclCommInitAll(created.data(), p, devices.data()));
      comms = std::move(created);
    }
    PB_NCCL(ncclGroupStart());
    for (int d = 0; d < p; ++d) {
      const ncclResult_t st = ncclAllReduce(buf[d], buf[d], n, ncclFloat, ncclSum, comms[d], stream[d]);
      if (st != ncclSuccess) {
        ncclGroupEnd();  // close the group before reporting
        check_nccl(st, "ncclAllReduce");
      }
    }
    PB_NCCL(ncclGroupEnd());
    PB_CUDA(cudaSetDevice(0));
#else
    throw std::runtime_error("NCCL not found at build time");
#endif
  }
};

GpuAllReduce::GpuAllReduce(int participants, std::size_t elements) : impl_(new Impl) {
  try {
    if (participants < 1) throw std::invalid_argument("GpuAllReduce: participants must be >= 1");
    if (elements < 1) throw std::invalid_argument("GpuAllReduce: elements must be >= 1");
    if (const std::string why = kernels::cuda::devices_unavailable_reason(participants); !why.empty())
      throw NotSupported(why);
    impl_->p = participants;
    impl_->n = elements;
    impl_->buf.assign(static_cast<std::size_t>(participants), nullptr);
    impl_->stream.assign(static_cast<std::size_t>(participants), nullptr);
    impl_->gathered.assign(static_cast<std::size_t>(participants), nullptr);
    impl_->done.assign(static_cast<std::size_t>(participants), nullptr);
    for (int d = 0; d < participants; ++d) {
      PB_CUDA(cudaSetDevice(d));
      PB_CUDA(cudaMalloc(reinterpret_cast<void**>(&impl_->buf[d]), impl_->bytes()));
      PB_CUDA(cudaStreamCreateWithFlags(&impl_->stream[d], cudaStreamNonBlocking));
      PB_CUDA(cudaEventCreateWithFlags(&impl_->gathered[d], cudaEventDisableTiming));
      PB_CUDA(cudaEventCreateWithFlags(&impl_->done[d], cudaEventDisableTiming));
    }
    PB_CUDA(cudaSetDevice(0));
    if (participants > 1) {
      PB_CUDA(cudaMalloc(reinterpret_cast<void**>(&impl_->staging),
                         static_cast<std::size_t>(participants - 1) * impl_->bytes()));
    }
    PB_CUDA(cudaEventCreateWithFlags(&impl_->summed, cudaEventDisableTiming));
    PB_CUDA(cudaEventCreateWithFlags(&impl_->fork, cudaEventDisableTiming));
    int sms = 1;
    PB_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    const std::size_t wanted = (elements + kThreads - 1) / kThreads;
    impl_->blocks = static_cast<unsigned>(std::min<std::size_t>(wanted, static_cast<std::size_t>(sms) * 8));
    impl_->enable_peer_access();
    PB_CUDA(cudaSetDevice(0));
  } catch (...) {
    impl_->release();
    delete impl_;
    throw;
  }
}

GpuAllReduce::~GpuAllReduce() {
  impl_->release();
  delete impl_;
}

int GpuAllReduce::participants() const { return impl_->p; }

void GpuAllReduce::upload(int participant, std::span<const float> values) {
  if (participant < 0 || participant >= impl_->p) throw std::out_of_range("GpuAllReduce::upload: participant");
  if (values.size() != impl_->n) throw std::invalid_argument("GpuAllReduce::upload: size mismatch");
  PB_CUDA(cudaSetDevice(participant));
  PB_CUDA(cudaMemcpyAsync(impl_->buf[participant], values.data(), impl_->bytes(), cudaMemcpyHostToDevice,
                          impl_->stream[participant]));
  PB_CUDA(cudaStreamSynchronize(impl_->stream[participant]));
  PB_CUDA(cudaSetDevice(0));
}

void GpuAllReduce::download(int participant, std::span<float> values) {
  if (participant < 0 || participant >= impl_->p) throw std::out_of_range("GpuAllReduce::download: participant");
  if (values.size() != impl_->n) throw std::invalid_argument("GpuAllReduce::download: size mismatch");
  PB_CUDA(cudaSetDevice(participant));
  PB_CUDA(cudaMemcpyAsync(values.data(), impl_->buf[participant], impl_->bytes(), cudaMemcpyDeviceToHost,
                          impl_->stream[participant]));
  PB_CUDA(cudaStreamSynchronize(impl_->stream[participant]));
  PB_CUDA(cudaSetDevice(0));
}

void GpuAllReduce::poison_staging() {
  if (!impl_->staging) return;
  PB_CUDA(cudaSetDevice(0));
  PB_CUDA(cudaMemsetAsync(impl_->staging, 0xFF, static_cast<std::size_t>(impl_->p - 1) * impl_->bytes(),
                          impl_->stream[0]));  // all-ones bytes: a NaN
  PB_CUDA(cudaStreamSynchronize(impl_->stream[0]));
}

void GpuAllReduce::enqueue(Algorithm algorithm) {
  Impl& m = *impl_;
  PB_CUDA(cudaSetDevice(0));
  PB_CUDA(cudaEventRecord(m.fork, m.stream[0]));
  for (int d = 1; d < m.p; ++d) {
    PB_CUDA(cudaSetDevice(d));
    PB_CUDA(cudaStreamWaitEvent(m.stream[d], m.fork, 0));
  }
  if (algorithm == Algorithm::kRing)
    m.enqueue_ring();
  else
    m.enqueue_gather_broadcast();
  for (int d = 1; d < m.p; ++d) {
    PB_CUDA(cudaSetDevice(d));
    PB_CUDA(cudaEventRecord(m.done[d], m.stream[d]));
  }
  PB_CUDA(cudaSetDevice(0));
  for (int d = 1; d < m.p; ++d) PB_CUDA(cudaStreamWaitEvent(m.stream[0], m.done[d], 0));
}

kernels::cuda::StreamRef GpuAllReduce::stream() const { return {impl_->stream[0]}; }

void GpuAllReduce::synchronize() {
  PB_CUDA(cudaSetDevice(0));
  PB_CUDA(cudaStreamSynchronize(impl_->stream[0]));
}

}  // namespace pairbench::kernels::collective::gpu
