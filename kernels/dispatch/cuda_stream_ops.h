// Host-side API of the CUDA dispatch workload: a tiny elementwise kernel on a stream with every
// way of waiting for it (stream, event, device), scalar read-back and CUDA-graph replay.
// No CUDA types here, so plain C++ bench code can use it; the .cu file implements it, and
// cuda_stream_ops_unavailable.cpp stands in where nvcc is absent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace pairbench::kernels::cuda {

struct DeviceInfo {
  bool available = false;  // a usable device 0
  std::string reason;      // why not, e.g. "no CUDA device", "not compiled with CUDA"
  std::string name;        // e.g. "NVIDIA H100 80GB HBM3"
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int device_count = 0;
  int driver_version = 0;   // e.g. 13000 for 13.0; 0 where no driver is installed
  int runtime_version = 0;  // cudart this binary was built with
};

// Never throws; safe to call on machines without a driver.
DeviceInfo query_device();

// The tiny op is x[i] += 1 over `elements` floats in device memory, on a stream the object owns.
// Every method throws std::runtime_error naming the failed CUDA call.
class StreamOps {
 public:
  explicit StreamOps(std::size_t elements);
  ~StreamOps();
  StreamOps(const StreamOps&) = delete;
  StreamOps& operator=(const StreamOps&) = delete;

  std::size_t elements() const;
  void fill(float value);          // blocks until x is filled
  void add_one();                  // enqueues one launch; returns at once
  // Enqueues one launch that keeps an SM busy for about `busy_ns`, then does x += 1 (a heavy op).
  void add_one_busy(std::int64_t busy_ns);
  void sync_stream();              // cudaStreamSynchronize on the op stream
  void sync_event();               // records an event after the last op and waits on it
  void sync_device();              // cudaDeviceSynchronize: waits for every stream
  float read_scalar();             // copies x[0] to the host: blocks (a hidden barrier, C7)
  void read_all(std::span<float> out);  // copies all of x to the host: blocks

  void reset_accumulator();        // blocks
  void accumulate();               // enqueues acc += x[0] (fp64, on the device); returns at once
  double read_accumulator();       // blocks

  void capture_graph(int ops);     // captures `ops` add_one launches as one CUDA graph
  void replay_graph();             // launches the captured graph; returns at once

  // Unrelated work on a second stream: `kernels` launches that each keep one SM busy for
  // about `busy_ns` nanoseconds. Returns at once.
  void enqueue_unrelated(int kernels, std::int64_t busy_ns);
  void sync_unrelated();           // waits for the second stream

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace pairbench::kernels::cuda
