// Host API of the CUDA copy workloads: host<->device copies from pageable, pinned and registered
// memory, device-to-device copies, a chunked copy-in/compute/copy-out pipeline (serial, or on
// several streams), an H2D and a D2H copy one after the other or at once, and random tensors made
// on the host or by cuRAND on the device. No CUDA types here, so plain C++ bench code can use it;
// cuda_copy.cu implements it; without CUDA every entry point throws NotSupported (cuda_seam.h).
// A failed CUDA call throws std::runtime_error naming it; what this machine cannot provide
// (device memory, pinned memory) throws NotSupported naming the limit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "kernels/common/cuda_events.h"
#include "kernels/common/cuda_seam.h"
#include "kernels/common/not_supported.h"

namespace pairbench::kernels::copy::cuda {

// Where host memory comes from: it decides whether the copy engine can DMA from it directly.
enum class HostKind {
  kPageable,    // malloc: the driver stages every copy through its own pinned bounce buffer
  kPinned,      // cudaMallocHost: page-locked and mapped for DMA
  kRegistered,  // an existing malloc'd buffer page-locked in place with cudaHostRegister
};
enum class Direction { kHostToDevice, kDeviceToHost, kDeviceToDevice };

// A stream owned by a workload, for the one CUDA-event timing loop (bench/common/exec.h).
using StreamRef = kernels::cuda::StreamRef;

// Whole-buffer copies of `bytes` in one direction. For kDeviceToDevice `host` is ignored (two
// device buffers). Sources hold the random stream `seed` (verify.h); destinations are compared
// against it, so no second full-size reference buffer is needed.
class Transfer {
 public:
  Transfer(std::size_t bytes, Direction direction, HostKind host) PAIRBENCH_CUDA_ENTRY;
  ~Transfer() PAIRBENCH_CUDA_ELSE();
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;

  std::size_t bytes() const PAIRBENCH_CUDA_ENTRY;
  StreamRef stream() const PAIRBENCH_CUDA_ENTRY;
  void fill_source(std::uint64_t seed) PAIRBENCH_CUDA_ENTRY;  // blocks
  void poison_destination() PAIRBENCH_CUDA_ENTRY;             // blocks
  // Queues `copies` copies of the whole buffer on stream(). Pinned and device memory: returns at
  // once. Pageable: cudaMemcpyAsync stages through the driver's bounce buffer and returns only
  // when the last piece is staged (H2D) or has arrived (D2H).
  void enqueue(int copies) PAIRBENCH_CUDA_ENTRY;
  void synchronize() PAIRBENCH_CUDA_ENTRY;
  std::size_t first_mismatch(std::uint64_t seed) PAIRBENCH_CUDA_ENTRY;  // blocks; bytes() when the destination is right
  bool spot_check(std::uint64_t seed, std::uint64_t pick_seed) PAIRBENCH_CUDA_ENTRY;  // blocks

 private:
  struct Impl;
  Impl* impl_ = nullptr;  // owned
};

// An H2D and a D2H copy of `bytes` each, both between pinned host memory and device memory.
// The H2D source holds stream `seed`, the D2H source stream `seed + 1`.
class Duplex {
 public:
  explicit Duplex(std::size_t bytes) PAIRBENCH_CUDA_ENTRY;
  ~Duplex() PAIRBENCH_CUDA_ELSE();
  Duplex(const Duplex&) = delete;
  Duplex& operator=(const Duplex&) = delete;

  StreamRef stream() const PAIRBENCH_CUDA_ENTRY;
  void fill_sources(std::uint64_t seed) PAIRBENCH_CUDA_ENTRY;  // blocks
  void poison_destinations() PAIRBENCH_CUDA_ENTRY;             // blocks
  void enqueue_sequential() PAIRBENCH_CUDA_ENTRY;  // both on stream(), the D2H after the H2D; returns at once
  // H2D on stream(), D2H on a second stream forked from stream() and joined back into it, so an
  // event queued on stream() afterwards waits for both. Returns at once.
  void enqueue_concurrent() PAIRBENCH_CUDA_ENTRY;
  void synchronize() PAIRBENCH_CUDA_ENTRY;
  std::string first_mismatch(std::uint64_t seed) PAIRBENCH_CUDA_ENTRY;  // "" when both are right, else which and where
  bool spot_check(std::uint64_t seed, std::uint64_t pick_seed) PAIRBENCH_CUDA_ENTRY;

 private:
  struct Impl;
  Impl* impl_ = nullptr;  // owned
};

// The pipeline's transform, out = f^rounds(in) with f(x) = 1664525 x + 1013904223 (mod 2^32):
// integer work a GPU does at full rate, with an O(1)-per-element host reference (f^rounds is
// again affine).
struct Affine32 {
  std::uint32_t mul = 1;
  std::uint32_t add = 0;
  std::uint32_t operator()(std::uint32_t x) const { return mul * x + add; }
};
inline Affine32 lcg_power(int rounds) {
  Affine32 g;
  for (int r = 0; r < rounds; ++r) g = {1664525u * g.mul, 1664525u * g.add + 1013904223u};
  return g;
}

// C12: `bytes` of uint32 split into `chunks`; each chunk is copied in, transformed, copied out.
// Host input and output are of kind `host`; device buffers are separate per direction, so
// chunks on different streams never share memory.
class OverlapPipeline {
 public:
  OverlapPipeline(std::size_t bytes, int chunks, int streams, int rounds, HostKind host) PAIRBENCH_CUDA_ENTRY;
  ~OverlapPipeline() PAIRBENCH_CUDA_ELSE();
  OverlapPipeline(const OverlapPipeline&) = delete;
  OverlapPipeline& operator=(const OverlapPipeline&) = delete;

  std::span<std::uint32_t> input() PAIRBENCH_CUDA_ENTRY;
  std::span<std::uint32_t> output() PAIRBENCH_CUDA_ENTRY;
  StreamRef stream() const PAIRBENCH_CUDA_ENTRY;  // the pipeline's main stream
  // Every step of every chunk waited for before the next one starts (blocks), on stream().
  void run_serial() PAIRBENCH_CUDA_ENTRY;
  // Chunk c on stream c % streams: copy in, transform, copy out, all queued with no wait. The
  // streams fork from stream() and join back into it. Returns at once (pinned host memory).
  void enqueue_pipelined() PAIRBENCH_CUDA_ENTRY;
  void synchronize() PAIRBENCH_CUDA_ENTRY;

 private:
  struct Impl;
  Impl* impl_ = nullptr;  // owned
};

// C8: a tensor of `count` (even) standard-normal floats from Philox4x32-10. Host and device
// generators with the same seed and offset give the same sequence (cuRAND host API), so one
// checks the other.
class RandomTensor {
 public:
  explicit RandomTensor(std::size_t count) PAIRBENCH_CUDA_ENTRY;
  ~RandomTensor() PAIRBENCH_CUDA_ELSE();
  RandomTensor(const RandomTensor&) = delete;
  RandomTensor& operator=(const RandomTensor&) = delete;

  std::size_t count() const PAIRBENCH_CUDA_ENTRY;
  StreamRef stream() const PAIRBENCH_CUDA_ENTRY;
  void reseed(std::uint64_t seed) PAIRBENCH_CUDA_ENTRY;  // both generators, offset 0
  void generate_on_host() PAIRBENCH_CUDA_ENTRY;          // into the pageable host buffer only; blocks
  // generate_on_host(), then a copy to the device tensor that returns once it is staged:
  // torch.randn(n).cuda().
  void make_on_host_and_copy() PAIRBENCH_CUDA_ENTRY;
  // Queues generation straight into the device tensor; returns at once: torch.randn(n, device=...).
  void make_on_device() PAIRBENCH_CUDA_ENTRY;
  std::span<const float> host_values() const PAIRBENCH_CUDA_ENTRY;  // the last values made on the host
  void download(std::span<float> out) PAIRBENCH_CUDA_ENTRY;         // the device tensor; blocks
  void poison_device() PAIRBENCH_CUDA_ENTRY;                        // 0xFF bytes (NaN); blocks
  void synchronize() PAIRBENCH_CUDA_ENTRY;

 private:
  struct Impl;
  Impl* impl_ = nullptr;  // owned
};

}  // namespace pairbench::kernels::copy::cuda
