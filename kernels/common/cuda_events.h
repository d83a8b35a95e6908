// The one pair of CUDA events every GPU-timed region uses (bench/common/exec.h's exec_cuda, and
// the GEMM autotuner), and the stream handle workloads hand out for it. No CUDA types here, so
// plain C++ bench code can use it; cuda_events.cu implements it, and without CUDA every entry
// point throws NotSupported("not compiled with CUDA") (cuda_seam.h).
#pragma once

#include "kernels/common/cuda_seam.h"

namespace pairbench::kernels::cuda {

// A cudaStream_t owned by a workload; only EventSpan looks inside.
struct StreamRef {
  void* handle = nullptr;
};

// Two CUDA events queued around GPU work on one stream: the GPU's clock between them. Created on
// the device current at construction; a stream passed to begin/end must belong to that device.
// Every failed call throws std::runtime_error naming it.
class EventSpan {
 public:
  EventSpan() PAIRBENCH_CUDA_ENTRY;
  ~EventSpan() PAIRBENCH_CUDA_ELSE();
  EventSpan(const EventSpan&) = delete;
  EventSpan& operator=(const EventSpan&) = delete;
  void begin(StreamRef stream) PAIRBENCH_CUDA_ENTRY;  // queued; returns at once
  void end(StreamRef stream) PAIRBENCH_CUDA_ENTRY;    // queued; returns at once
  double elapsed_s() PAIRBENCH_CUDA_ENTRY;            // blocks until the end event is reached

 private:
  void* begin_ = nullptr;
  void* end_ = nullptr;
};

}  // namespace pairbench::kernels::cuda
