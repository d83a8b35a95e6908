// EventSpan (cuda_events.h): two cudaEvent_t with timing, recorded on the caller's stream.
#include "kernels/common/cuda_events.h"

#include <cuda_runtime.h>

#include "kernels/common/cuda_check.cuh"

namespace pairbench::kernels::cuda {
namespace {
cudaStream_t as_stream(StreamRef s) { return static_cast<cudaStream_t>(s.handle); }
cudaEvent_t as_event(void* e) { return static_cast<cudaEvent_t>(e); }
}  // namespace

EventSpan::EventSpan() {
  cudaEvent_t b = nullptr, e = nullptr;
  PB_CUDA(cudaEventCreate(&b));
  const cudaError_t st = cudaEventCreate(&e);
  if (st != cudaSuccess) cudaEventDestroy(b);
  check(st, "cudaEventCreate");
  begin_ = b;
  end_ = e;
}

EventSpan::~EventSpan() {
  if (begin_) cudaEventDestroy(as_event(begin_));
  if (end_) cudaEventDestroy(as_event(end_));
}

void EventSpan::begin(StreamRef s) { PB_CUDA(cudaEventRecord(as_event(begin_), as_stream(s))); }
void EventSpan::end(StreamRef s) { PB_CUDA(cudaEventRecord(as_event(end_), as_stream(s))); }

double EventSpan::elapsed_s() {
  PB_CUDA(cudaEventSynchronize(as_event(end_)));
  float ms = 0;
  PB_CUDA(cudaEventElapsedTime(&ms, as_event(begin_), as_event(end_)));
  return static_cast<double>(ms) * 1e-3;
}

}  // namespace pairbench::kernels::cuda
