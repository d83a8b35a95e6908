// A tensor-like allocation trace: one training step of a layered model, as the allocation and
// free events a framework's allocator sees. Used by the GPU allocator arms and their tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace pairbench::kernels::alloc {

struct TraceEvent {
  enum class Kind : std::uint8_t { kAlloc, kFree };
  Kind kind;
  std::uint32_t tensor;  // 0 .. tensors-1; each is allocated once and freed once per step
  std::size_t bytes;     // the tensor's size (also on its free)
  int stream;            // 0 = compute, 1 = side stream; a tensor is used only on its own stream
};

struct TensorTrace {
  std::vector<TraceEvent> events;
  std::uint32_t tensors = 0;
  std::size_t peak_live_bytes = 0;
  std::int64_t allocations() const { return tensors; }
};

// One step of a `layers`-layer model. Forward: per layer an activation (log-uniform in
// [min_bytes, max_bytes], rounded to 4 bytes) and a short-lived workspace on the compute stream,
// plus a small statistics buffer on the side stream freed two layers later. Backward, last layer
// first: the gradient of each activation, then that activation is freed; a layer's gradient is
// freed once the next lower layer's gradient exists. Every tensor is freed by the end of the step.
TensorTrace make_training_step_trace(int layers, std::uint64_t seed, std::size_t min_bytes = std::size_t{256} << 10,
                                     std::size_t max_bytes = std::size_t{64} << 20);

}  // namespace pairbench::kernels::alloc
