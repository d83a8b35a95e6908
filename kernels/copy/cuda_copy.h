// Host API of the CUDA copy workloads: host<->device copies from pageable, pinned and registered
// memory, device-to-device copies, a chunked copy-in/compute/copy-out pipeline (serial, or on
// several streams), an H2D and a D2H copy one after the other or at once, and random tensors made
// on the host or by cuRAND on the device. No CUDA types here, so plain C++ bench code can use it;
// cuda_copy.cu implements it, cuda_copy_unavailable.cpp stands in where nvcc is absent.
// A failed CUDA call throws std::runtime_error naming it; what this machine cannot provide
// (device memory, pinned memory) throws NotSupported naming the limit.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "kernels/common/not_supported.h"

namespace pairbench::kernels::copy::cuda {

// "" when device 0 can be used; else why not ("no CUDA device", "not compiled with CUDA").
std::string device_unavailable_reason();

// Where host memory comes from: it decides whether the copy engine can DMA from it directly.
enum class HostKind {
  kPageable,    // malloc: the driver stages every copy through its own pinned bounce buffer
  kPinned,      // cudaMallocHost: page-locked and mapped for DMA
  kRegistered,  // an existing malloc'd buffer page-locked in place with cudaHostRegister
};
enum class Direction { kHostToDevice, kDeviceToHost, kDeviceToDevice };

// A stream owned by a workload; only EventSpan looks inside.
struct StreamRef {
  void* handle = nullptr;
};

// Two CUDA events queued around GPU work on one stream: the GPU's clock between them.
class EventSpan {
 public:
  EventSpan();
  ~EventSpan();
  EventSpan(const EventSpan&) = delete;
  EventSpan& operator=(const EventSpan&) = delete;
  void begin(StreamRef stream);  // queued; returns at once
  void end(StreamRef stream);    // queued; returns at once
  double elapsed_s();            // blocks until the end event is reached

 private:
  void* begin_ = nullptr;
  void* end_ = nullptr;
};

// Whole-buffer copies of `bytes` in one direction. For kDeviceToDevice `host` is ignored (two
// device buffers). Sources hold the random stream `seed` (verify.h); destinations are compared
// against it, so no second full-size reference buffer is needed.
class Transfer {
 public:
  Transfer(std::size_t bytes, Direction direction, HostKind host);
  ~Transfer();
  Transfer(const Transfer&) = delete;
  Transfer& operator=(const Transfer&) = delete;

  std::size_t bytes() const;
  StreamRef stream() const;
  void fill_source(std::uint64_t seed);  // blocks
  void poison_destination();             // blocks
  // Queues `copies` copies of the whole buffer on stream(). Pinned and device memory: returns at
  // once. Pageable: cudaMemcpyAsync stages through the driver's bounce buffer and returns only
  // when the last piece is staged (H2D) or has arrived (D2H).
  void enqueue(int copies);
  void synchronize();
  std::size_t first_mismatch(std::uint64_t seed);  // blocks; bytes() when the destination is right
  bool spot_check(std::uint64_t seed, std::uint64_t pick_seed);  // blocks

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// An H2D and a D2H copy of `bytes` each, both between pinned host memory and device memory.
// The H2D source holds stream `seed`, the D2H source stream `seed + 1`.
class Duplex {
 public:
  explicit Duplex(std::size_t bytes);
  ~Duplex();
  Duplex(const Duplex&) = delete;
  Duplex& operator=(const Duplex&) = delete;

  StreamRef stream() const;
  void fill_sources(std::uint64_t seed);  // blocks
  void poison_destinations();             // blocks
  void enqueue_sequential();  // both on stream(), the D2H after the H2D; returns at once
  // H2D on stream(), D2H on a second stream forked from stream() and joined back into it, so an
  // event queued on stream() afterwards waits for both. Returns at once.
  void enqueue_concurrent();
  void synchronize();
  std::string first_mismatch(std::uint64_t seed);  // "" when both are right, else which and where
  bool spot_check(std::uint64_t seed, std::uint64_t pick_seed);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
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
  OverlapPipeline(std::size_t bytes, int chunks, int streams, int rounds, HostKind host);
  ~OverlapPipeline();
  OverlapPipeline(const OverlapPipeline&) = delete;
  OverlapPipeline& operator=(const OverlapPipeline&) = delete;

  std::span<std::uint32_t> input();
  std::span<std::uint32_t> output();
  StreamRef stream() const;  // the pipeline's main stream
  // Every step of every chunk waited for before the next one starts (blocks), on stream().
  void run_serial();
  // Chunk c on stream c % streams: copy in, transform, copy out, all queued with no wait. The
  // streams fork from stream() and join back into it. Returns at once (pinned host memory).
  void enqueue_pipelined();
  void synchronize();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// C8: a tensor of `count` (even) standard-normal floats from Philox4x32-10. Host and device
// generators with the same seed and offset give the same sequence (cuRAND host API), so one
// checks the other.
class RandomTensor {
 public:
  explicit RandomTensor(std::size_t count);
  ~RandomTensor();
  RandomTensor(const RandomTensor&) = delete;
  RandomTensor& operator=(const RandomTensor&) = delete;

  std::size_t count() const;
  StreamRef stream() const;
  void reseed(std::uint64_t seed);  // both generators, offset 0
  void generate_on_host();           // into the pageable host buffer only; blocks
  // generate_on_host(), then a copy to the device tensor that returns once it is staged:
  // torch.randn(n).cuda().
  void make_on_host_and_copy();
  // Queues generation straight into the device tensor; returns at once: torch.randn(n, device=...).
  void make_on_device();
  std::span<const float> host_values() const;  // the last values made on the host
  void download(std::span<float> out);          // the device tensor; blocks
  void poison_device();                         // 0xFF bytes (NaN); blocks
  void synchronize();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pairbench::kernels::copy::cuda
