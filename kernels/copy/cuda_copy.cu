// CUDA copy workloads: transfers from pageable/pinned/registered memory, device-to-device copies,
// the chunked overlap pipeline, concurrent H2D + D2H, and cuRAND tensors made on host or device.
// Every CUDA and cuRAND status is checked; allocation failures become NotSupported.
#include "kernels/copy/cuda_copy.h"

#include "kernels/common/cuda_check.cuh"

#include <cuda_runtime.h>
#include <curand.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/copy/host_buffer.h"
#include "kernels/copy/verify.h"

namespace pairbench::kernels::copy::cuda {
namespace {

using kernels::check;

void check_curand(curandStatus_t status, const char* call) {
  if (status != CURAND_STATUS_SUCCESS)
    throw std::runtime_error(std::string(call) + ": curandStatus " + std::to_string(status));
}
#define PB_CURAND(call) check_curand((call), #call)

cudaStream_t as_stream(StreamRef s) { return static_cast<cudaStream_t>(s.handle); }

const char* kind_name(HostKind kind) {
  switch (kind) {
    case HostKind::kPageable:
      return "pageable";
    case HostKind::kPinned:
      return "pinned";
    case HostKind::kRegistered:
      return "registered";
  }
  return "?";
}

// What limits page-locked host memory, for NotSupported messages.
std::string pinning_limits() {
  return "MemAvailable " + format_bytes(mem_available_bytes()) +
         "; the driver pins physical pages, so pinned "
         "memory cannot exceed free RAM";
}

// Host memory of one kind, freed the matching way. Pageable and registered buffers are written
// once at allocation, so no timed copy ever takes their first-touch page faults.
class HostMem {
 public:
  HostMem(std::size_t bytes, HostKind kind) : kind_(kind), bytes_(bytes) {
    require_host_memory(bytes, std::string("a ") + kind_name(kind) + " host buffer");
    if (kind == HostKind::kPinned) {
      void* p = nullptr;
      const cudaError_t st = cudaMallocHost(&p, bytes);
      if (st != cudaSuccess) {
        cudaGetLastError();  // allocation errors are not sticky; clear them for the next call
        throw NotSupported("cudaMallocHost(" + format_bytes(bytes) + ") failed: " + cudaGetErrorName(st) + " (" +
                           pinning_limits() + ")");
      }
      data_ = static_cast<std::byte*>(p);
      return;
    }
    data_ = static_cast<std::byte*>(std::malloc(bytes));
    if (!data_)
      throw NotSupported("malloc(" + format_bytes(bytes) + ") failed (MemAvailable " +
                         format_bytes(mem_available_bytes()) + ")");
    std::memset(data_, 0, bytes);
    if (kind == HostKind::kRegistered) {
      const cudaError_t st = cudaHostRegister(data_, bytes, cudaHostRegisterDefault);
      if (st != cudaSuccess) {
        cudaGetLastError();
        std::free(data_);
        data_ = nullptr;
        throw NotSupported("cudaHostRegister(" + format_bytes(bytes) + ") failed: " + cudaGetErrorName(st) + " (" +
                           pinning_limits() + ")");
      }
    }
  }
  ~HostMem() {
    if (!data_) return;
    if (kind_ == HostKind::kPinned) {
      cudaFreeHost(data_);
      return;
    }
    if (kind_ == HostKind::kRegistered) cudaHostUnregister(data_);
    std::free(data_);
  }
  HostMem(const HostMem&) = delete;
  HostMem& operator=(const HostMem&) = delete;
  std::byte* data() const { return data_; }
  std::span<std::byte> span() const { return {data_, bytes_}; }

 private:
  HostKind kind_;
  std::size_t bytes_;
  std::byte* data_ = nullptr;
};

class DeviceMem {
 public:
  explicit DeviceMem(std::size_t bytes) {
    std::size_t free_bytes = 0, total_bytes = 0;
    PB_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
    const std::string limit = "cudaMemGetInfo: " + format_bytes(free_bytes) + " free of " + format_bytes(total_bytes);
    if (bytes > free_bytes) {
      throw NotSupported("a " + format_bytes(bytes) + " device buffer does not fit (" + limit + ")");
    }
    const cudaError_t st = cudaMalloc(&data_, std::max<std::size_t>(bytes, 1));
    if (st == cudaErrorMemoryAllocation) {
      cudaGetLastError();
      throw NotSupported("cudaMalloc(" + format_bytes(bytes) + ") failed: out of device memory (" + limit + ")");
    }
    check(st, "cudaMalloc");
  }
  ~DeviceMem() {
    if (data_) cudaFree(data_);
  }
  DeviceMem(const DeviceMem&) = delete;
  DeviceMem& operator=(const DeviceMem&) = delete;
  std::byte* data() const { return static_cast<std::byte*>(data_); }

 private:
  void* data_ = nullptr;
};

class Stream {
 public:
  Stream() { PB_CUDA(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  ~Stream() {
    if (s_) cudaStreamDestroy(s_);
  }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return s_; }
  void sync() const { PB_CUDA(cudaStreamSynchronize(s_)); }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  Event() { PB_CUDA(cudaEventCreateWithFlags(&e_, cudaEventDisableTiming)); }
  ~Event() {
    if (e_) cudaEventDestroy(e_);
  }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  cudaEvent_t get() const { return e_; }

 private:
  cudaEvent_t e_ = nullptr;
};

// `to` waits (on the GPU, not the host) for everything queued on `from` so far.
void stream_wait(cudaStream_t to, cudaStream_t from, const Event& e) {
  PB_CUDA(cudaEventRecord(e.get(), from));
  PB_CUDA(cudaStreamWaitEvent(to, e.get(), 0));
}

// Staging for verification only, bounded so that checking 1 GiB needs no second 1 GiB buffer.
constexpr std::size_t kStagingBytes = std::size_t{16} << 20;

void upload_random(std::byte* dev, std::size_t bytes, std::uint64_t seed) {
  std::vector<std::byte> staging(std::min(bytes, kStagingBytes));
  for (std::size_t off = 0; off < bytes; off += staging.size()) {
    const std::size_t len = std::min(staging.size(), bytes - off);
    fill_random({staging.data(), len}, seed, off);
    PB_CUDA(cudaMemcpy(dev + off, staging.data(), len, cudaMemcpyHostToDevice));
  }
}

std::size_t device_first_mismatch(const std::byte* dev, std::size_t bytes, std::uint64_t seed) {
  std::vector<std::byte> staging(std::min(bytes, kStagingBytes));
  for (std::size_t off = 0; off < bytes; off += staging.size()) {
    const std::size_t len = std::min(staging.size(), bytes - off);
    poison(staging);  // a failed download cannot leave the previous chunk's right bytes behind
    PB_CUDA(cudaMemcpy(staging.data(), dev + off, len, cudaMemcpyDeviceToHost));
    const std::size_t at = first_mismatch_random({staging.data(), len}, seed, off);
    if (at != len) return off + at;
  }
  return bytes;
}

bool device_spot_check(const std::byte* dev, std::size_t bytes, std::uint64_t seed, std::uint64_t pick_seed) {
  std::vector<std::byte> got(4096), want(4096);
  for (const auto& [off, len] : spot_ranges(bytes, pick_seed)) {
    PB_CUDA(cudaMemcpy(got.data(), dev + off, len, cudaMemcpyDeviceToHost));
    fill_random({want.data(), len}, seed, off);
    if (std::memcmp(got.data(), want.data(), len) != 0) return false;
  }
  return true;
}

void poison_device(std::byte* dev, std::size_t bytes) {
  PB_CUDA(cudaMemset(dev, static_cast<int>(kPoison), bytes));
  PB_CUDA(cudaDeviceSynchronize());
}

cudaMemcpyKind copy_kind(Direction d) {
  switch (d) {
    case Direction::kHostToDevice:
      return cudaMemcpyHostToDevice;
    case Direction::kDeviceToHost:
      return cudaMemcpyDeviceToHost;
    case Direction::kDeviceToDevice:
      return cudaMemcpyDeviceToDevice;
  }
  return cudaMemcpyDefault;
}

constexpr int kThreadsPerBlock = 256;
constexpr std::size_t kMaxBlocks = 65535;  // grid-stride beyond this

__global__ void lcg_kernel(const std::uint32_t* in, std::uint32_t* out, std::size_t n, int rounds) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    std::uint32_t x = in[i];
    for (int r = 0; r < rounds; ++r) x = 1664525u * x + 1013904223u;
    out[i] = x;
  }
}

unsigned blocks_for(std::size_t n) {
  return static_cast<unsigned>(std::clamp<std::size_t>((n + kThreadsPerBlock - 1) / kThreadsPerBlock, 1, kMaxBlocks));
}

}  // namespace

// ---- Transfer ----
struct Transfer::Impl {
  Impl(std::size_t n, Direction d, HostKind kind)
      : bytes(n),
        direction(d),
        host(d == Direction::kDeviceToDevice ? nullptr : std::make_unique<HostMem>(n, kind)),
        device(std::make_unique<DeviceMem>(n)),
        device2(d == Direction::kDeviceToDevice ? std::make_unique<DeviceMem>(n) : nullptr) {}
  std::size_t bytes;
  Direction direction;
  std::unique_ptr<HostMem> host;
  std::unique_ptr<DeviceMem> device;
  std::unique_ptr<DeviceMem> device2;  // D2D destination
  Stream stream;
  const std::byte* src() const { return direction == Direction::kHostToDevice ? host->data() : device->data(); }
  std::byte* dst() const {
    switch (direction) {
      case Direction::kHostToDevice:
        return device->data();
      case Direction::kDeviceToHost:
        return host->data();
      case Direction::kDeviceToDevice:
        return device2->data();
    }
    return nullptr;
  }
};

Transfer::Transfer(std::size_t bytes, Direction direction, HostKind host) : impl_(new Impl(bytes, direction, host)) {}
Transfer::~Transfer() { delete impl_; }
std::size_t Transfer::bytes() const { return impl_->bytes; }
StreamRef Transfer::stream() const { return {impl_->stream.get()}; }

void Transfer::fill_source(std::uint64_t seed) {
  impl_->stream.sync();  // no copy of the previous contents may still be in flight
  if (impl_->direction == Direction::kHostToDevice) {
    fill_random(impl_->host->span(), seed);
  } else {
    upload_random(impl_->device->data(), impl_->bytes, seed);
  }
}

void Transfer::poison_destination() {
  impl_->stream.sync();
  if (impl_->direction == Direction::kDeviceToHost) {
    poison(impl_->host->span());
  } else {
    poison_device(impl_->dst(), impl_->bytes);
  }
}

void Transfer::enqueue(int copies) {
  const cudaMemcpyKind kind = copy_kind(impl_->direction);
  for (int i = 0; i < copies; ++i) {
    PB_CUDA(cudaMemcpyAsync(impl_->dst(), impl_->src(), impl_->bytes, kind, impl_->stream.get()));
  }
}

void Transfer::synchronize() { impl_->stream.sync(); }

std::size_t Transfer::first_mismatch(std::uint64_t seed) {
  impl_->stream.sync();
  if (impl_->direction == Direction::kDeviceToHost) return first_mismatch_random(impl_->host->span(), seed);
  return device_first_mismatch(impl_->dst(), impl_->bytes, seed);
}

bool Transfer::spot_check(std::uint64_t seed, std::uint64_t pick_seed) {
  impl_->stream.sync();
  if (impl_->direction == Direction::kDeviceToHost) return spot_check_random(impl_->host->span(), seed, pick_seed);
  return device_spot_check(impl_->dst(), impl_->bytes, seed, pick_seed);
}

// ---- Duplex ----
struct Duplex::Impl {
  explicit Impl(std::size_t n)
      : bytes(n), up_src(n, HostKind::kPinned), up_dst(n), down_src(n), down_dst(n, HostKind::kPinned) {}
  std::size_t bytes;
  HostMem up_src;
  DeviceMem up_dst;
  DeviceMem down_src;
  HostMem down_dst;
  Stream main, side;
  Event fork, join;
};

Duplex::Duplex(std::size_t bytes) : impl_(new Impl(bytes)) {}
Duplex::~Duplex() { delete impl_; }
StreamRef Duplex::stream() const { return {impl_->main.get()}; }

void Duplex::fill_sources(std::uint64_t seed) {
  synchronize();
  fill_random(impl_->up_src.span(), seed);
  upload_random(impl_->down_src.data(), impl_->bytes, seed + 1);
}

void Duplex::poison_destinations() {
  synchronize();
  poison_device(impl_->up_dst.data(), impl_->bytes);
  poison(impl_->down_dst.span());
}

void Duplex::enqueue_sequential() {
  Impl& m = *impl_;
  PB_CUDA(cudaMemcpyAsync(m.up_dst.data(), m.up_src.data(), m.bytes, cudaMemcpyHostToDevice, m.main.get()));
  PB_CUDA(cudaMemcpyAsync(m.down_dst.data(), m.down_src.data(), m.bytes, cudaMemcpyDeviceToHost, m.main.get()));
}

void Duplex::enqueue_concurrent() {
  Impl& m = *impl_;
  stream_wait(m.side.get(), m.main.get(), m.fork);
  PB_CUDA(cudaMemcpyAsync(m.up_dst.data(), m.up_src.data(), m.bytes, cudaMemcpyHostToDevice, m.main.get()));
  PB_CUDA(cudaMemcpyAsync(m.down_dst.data(), m.down_src.data(), m.bytes, cudaMemcpyDeviceToHost, m.side.get()));
  stream_wait(m.main.get(), m.side.get(), m.join);
}

void Duplex::synchronize() { impl_->main.sync(); }

std::string Duplex::first_mismatch(std::uint64_t seed) {
  synchronize();
  const std::size_t up = device_first_mismatch(impl_->up_dst.data(), impl_->bytes, seed);
  if (up != impl_->bytes) return "H2D destination differs at byte " + std::to_string(up);
  const std::size_t down = first_mismatch_random(impl_->down_dst.span(), seed + 1);
  if (down != impl_->bytes) return "D2H destination differs at byte " + std::to_string(down);
  return "";
}

bool Duplex::spot_check(std::uint64_t seed, std::uint64_t pick_seed) {
  synchronize();
  return device_spot_check(impl_->up_dst.data(), impl_->bytes, seed, pick_seed) &&
         spot_check_random(impl_->down_dst.span(), seed + 1, pick_seed);
}

// ---- OverlapPipeline ----
struct OverlapPipeline::Impl {
  Impl(std::size_t bytes, int chunks_, int streams_, int rounds_, HostKind kind)
      : n(bytes / sizeof(std::uint32_t)),
        chunks(chunks_),
        rounds(rounds_),
        host_in(n * sizeof(std::uint32_t), kind),
        host_out(n * sizeof(std::uint32_t), kind),
        dev_in(n * sizeof(std::uint32_t)),
        dev_out(n * sizeof(std::uint32_t)),
        streams(static_cast<std::size_t>(streams_)),
        joins(static_cast<std::size_t>(streams_)) {}
  std::size_t n;  // elements
  int chunks;
  int rounds;
  HostMem host_in, host_out;
  DeviceMem dev_in, dev_out;
  std::vector<Stream> streams;  // [0] is the main stream
  Event fork;
  std::vector<Event> joins;
  std::uint32_t* hin() const { return reinterpret_cast<std::uint32_t*>(host_in.data()); }
  std::uint32_t* hout() const { return reinterpret_cast<std::uint32_t*>(host_out.data()); }
  std::uint32_t* din() const { return reinterpret_cast<std::uint32_t*>(dev_in.data()); }
  std::uint32_t* dout() const { return reinterpret_cast<std::uint32_t*>(dev_out.data()); }
  std::pair<std::size_t, std::size_t> chunk(int c) const {
    const auto k = static_cast<std::size_t>(chunks);
    return {n * static_cast<std::size_t>(c) / k, n * static_cast<std::size_t>(c + 1) / k};
  }
  void enqueue_chunk(int c, cudaStream_t s) const {
    const auto [b, e] = chunk(c);
    const std::size_t len = e - b;
    if (len == 0) return;
    PB_CUDA(cudaMemcpyAsync(din() + b, hin() + b, len * sizeof(std::uint32_t), cudaMemcpyHostToDevice, s));
    lcg_kernel<<<blocks_for(len), kThreadsPerBlock, 0, s>>>(din() + b, dout() + b, len, rounds);
    PB_LAUNCHED("lcg_kernel");
    PB_CUDA(cudaMemcpyAsync(hout() + b, dout() + b, len * sizeof(std::uint32_t), cudaMemcpyDeviceToHost, s));
  }
};

OverlapPipeline::OverlapPipeline(std::size_t bytes, int chunks, int streams, int rounds, HostKind host) {
  if (chunks < 1 || streams < 1 || rounds < 0)
    throw std::invalid_argument("OverlapPipeline: chunks, streams >= 1, rounds >= 0");
  impl_ = new Impl(bytes, chunks, streams, rounds, host);
}
OverlapPipeline::~OverlapPipeline() { delete impl_; }
std::span<std::uint32_t> OverlapPipeline::input() { return {impl_->hin(), impl_->n}; }
std::span<std::uint32_t> OverlapPipeline::output() { return {impl_->hout(), impl_->n}; }
StreamRef OverlapPipeline::stream() const { return {impl_->streams[0].get()}; }

void OverlapPipeline::run_serial() {
  Impl& m = *impl_;
  const cudaStream_t s = m.streams[0].get();
  for (int c = 0; c < m.chunks; ++c) {
    const auto [b, e] = m.chunk(c);
    const std::size_t len = e - b;
    if (len == 0) continue;
    PB_CUDA(cudaMemcpyAsync(m.din() + b, m.hin() + b, len * sizeof(std::uint32_t), cudaMemcpyHostToDevice, s));
    m.streams[0].sync();
    lcg_kernel<<<blocks_for(len), kThreadsPerBlock, 0, s>>>(m.din() + b, m.dout() + b, len, m.rounds);
    PB_LAUNCHED("lcg_kernel");
    m.streams[0].sync();
    PB_CUDA(cudaMemcpyAsync(m.hout() + b, m.dout() + b, len * sizeof(std::uint32_t), cudaMemcpyDeviceToHost, s));
    m.streams[0].sync();
  }
}

void OverlapPipeline::enqueue_pipelined() {
  Impl& m = *impl_;
  const cudaStream_t main = m.streams[0].get();
  PB_CUDA(cudaEventRecord(m.fork.get(), main));
  for (std::size_t i = 1; i < m.streams.size(); ++i) PB_CUDA(cudaStreamWaitEvent(m.streams[i].get(), m.fork.get(), 0));
  for (int c = 0; c < m.chunks; ++c)
    m.enqueue_chunk(c, m.streams[static_cast<std::size_t>(c) % m.streams.size()].get());
  for (std::size_t i = 1; i < m.streams.size(); ++i) stream_wait(main, m.streams[i].get(), m.joins[i]);
}

void OverlapPipeline::synchronize() { impl_->streams[0].sync(); }

// ---- RandomTensor ----
namespace {
// Philox4x32-10 on the host (cuRAND's CPU implementation) or on the device; same ordering.
class Generator {
 public:
  explicit Generator(bool on_host) {
    PB_CURAND(on_host ? curandCreateGeneratorHost(&g_, CURAND_RNG_PSEUDO_PHILOX4_32_10)
                      : curandCreateGenerator(&g_, CURAND_RNG_PSEUDO_PHILOX4_32_10));
    PB_CURAND(curandSetGeneratorOrdering(g_, CURAND_ORDERING_PSEUDO_DEFAULT));
  }
  ~Generator() {
    if (g_) curandDestroyGenerator(g_);
  }
  Generator(const Generator&) = delete;
  Generator& operator=(const Generator&) = delete;
  curandGenerator_t get() const { return g_; }

 private:
  curandGenerator_t g_ = nullptr;
};
}  // namespace

struct RandomTensor::Impl {
  explicit Impl(std::size_t n)
      : count(n),
        host(n * sizeof(float), HostKind::kPageable),
        device(n * sizeof(float)),
        on_host(true),
        on_device(false) {
    PB_CURAND(curandSetStream(on_device.get(), stream.get()));
  }
  std::size_t count;
  HostMem host;
  DeviceMem device;
  Stream stream;
  Generator on_host;
  Generator on_device;
  float* host_f() const { return reinterpret_cast<float*>(host.data()); }
  float* device_f() const { return reinterpret_cast<float*>(device.data()); }
};

RandomTensor::RandomTensor(std::size_t count) {
  if (count == 0 || count % 2 != 0)
    throw std::invalid_argument("RandomTensor: count must be even and > 0 (cuRAND normal pairs)");
  impl_ = new Impl(count);
}
RandomTensor::~RandomTensor() { delete impl_; }
std::size_t RandomTensor::count() const { return impl_->count; }
StreamRef RandomTensor::stream() const { return {impl_->stream.get()}; }

void RandomTensor::reseed(std::uint64_t seed) {
  impl_->stream.sync();
  for (curandGenerator_t g : {impl_->on_host.get(), impl_->on_device.get()}) {
    PB_CURAND(curandSetPseudoRandomGeneratorSeed(g, seed));
    PB_CURAND(curandSetGeneratorOffset(g, 0));
  }
}

void RandomTensor::generate_on_host() {
  Impl& m = *impl_;
  PB_CURAND(curandGenerateNormal(m.on_host.get(), m.host_f(), m.count, /*mean=*/0.0f, /*stddev=*/1.0f));
}

void RandomTensor::make_on_host_and_copy() {
  Impl& m = *impl_;
  generate_on_host();
  PB_CUDA(cudaMemcpyAsync(m.device_f(), m.host_f(), m.count * sizeof(float), cudaMemcpyHostToDevice, m.stream.get()));
}

void RandomTensor::make_on_device() {
  Impl& m = *impl_;
  PB_CURAND(curandGenerateNormal(m.on_device.get(), m.device_f(), m.count, /*mean=*/0.0f, /*stddev=*/1.0f));
}

std::span<const float> RandomTensor::host_values() const { return {impl_->host_f(), impl_->count}; }

void RandomTensor::download(std::span<float> out) {
  if (out.size() != impl_->count) throw std::invalid_argument("RandomTensor::download: size mismatch");
  impl_->stream.sync();
  PB_CUDA(cudaMemcpy(out.data(), impl_->device_f(), impl_->count * sizeof(float), cudaMemcpyDeviceToHost));
}

void RandomTensor::poison_device() {
  impl_->stream.sync();
  PB_CUDA(cudaMemset(impl_->device_f(), 0xFF, impl_->count * sizeof(float)));
  PB_CUDA(cudaDeviceSynchronize());
}

void RandomTensor::synchronize() { impl_->stream.sync(); }

}  // namespace pairbench::kernels::copy::cuda
