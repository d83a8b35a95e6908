// Host-side API of the CUDA dispatch workload: a tiny elementwise kernel on a stream with every
// way of waiting for it (stream, event, device), scalar read-back and CUDA-graph replay.
// No CUDA types here, so plain C++ bench code can use it; the .cu file implements it; without
// CUDA every entry point throws NotSupported (kernels/common/cuda_seam.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "kernels/common/cuda_seam.h"

namespace pairbench::kernels::cuda {

// The tiny op is x[i] += 1 over `elements` floats in device memory, on a stream the object owns.
// Every method throws std::runtime_error naming the failed CUDA call.
class StreamOps {
 public:
  explicit StreamOps(std::size_t elements) PAIRBENCH_CUDA_ENTRY;
  ~StreamOps() PAIRBENCH_CUDA_ELSE();
  StreamOps(const StreamOps&) = delete;
  StreamOps& operator=(const StreamOps&) = delete;

  std::size_t elements() const PAIRBENCH_CUDA_ENTRY;
  void fill(float value) PAIRBENCH_CUDA_ENTRY;  // blocks until x is filled
  void add_one() PAIRBENCH_CUDA_ENTRY;          // enqueues one launch; returns at once
  // Enqueues one launch that keeps an SM busy for about `busy_ns`, then does x += 1 (a heavy op).
  void add_one_busy(std::int64_t busy_ns) PAIRBENCH_CUDA_ENTRY;
  void sync_stream() PAIRBENCH_CUDA_ENTRY;                   // cudaStreamSynchronize on the op stream
  void sync_event() PAIRBENCH_CUDA_ENTRY;                    // records an event after the last op and waits on it
  void sync_device() PAIRBENCH_CUDA_ENTRY;                   // cudaDeviceSynchronize: waits for every stream
  float read_scalar() PAIRBENCH_CUDA_ENTRY;                  // copies x[0] to the host: blocks (a hidden barrier, C7)
  void read_all(std::span<float> out) PAIRBENCH_CUDA_ENTRY;  // copies all of x to the host: blocks

  void reset_accumulator() PAIRBENCH_CUDA_ENTRY;   // blocks
  void accumulate() PAIRBENCH_CUDA_ENTRY;          // enqueues acc += x[0] (fp64, on the device); returns at once
  double read_accumulator() PAIRBENCH_CUDA_ENTRY;  // blocks

  void capture_graph(int ops) PAIRBENCH_CUDA_ENTRY;  // captures `ops` add_one launches as one CUDA graph
  void replay_graph() PAIRBENCH_CUDA_ENTRY;          // launches the captured graph; returns at once

  // Unrelated work on a second stream: `kernels` launches that each keep one SM busy for
  // about `busy_ns` nanoseconds. Returns at once.
  void enqueue_unrelated(int kernels, std::int64_t busy_ns) PAIRBENCH_CUDA_ENTRY;
  void sync_unrelated() PAIRBENCH_CUDA_ENTRY;  // waits for the second stream

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace pairbench::kernels::cuda
