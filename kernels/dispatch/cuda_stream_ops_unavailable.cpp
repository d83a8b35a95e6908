// Stand-in for cuda_stream_ops.cu where nvcc is absent: reports why, never pretends to run.
#include "kernels/dispatch/cuda_stream_ops.h"

#include <stdexcept>

namespace pairbench::kernels::cuda {

DeviceInfo query_device() {
  DeviceInfo info;
  info.reason = "not compiled with CUDA (nvcc not found at configure time)";
  return info;
}

struct StreamOps::Impl {};
static constexpr const char* kNoCuda = "not compiled with CUDA";
StreamOps::StreamOps(std::size_t) : impl_(nullptr) { throw std::runtime_error(kNoCuda); }
StreamOps::~StreamOps() = default;
std::size_t StreamOps::elements() const { return 0; }
void StreamOps::fill(float) { throw std::runtime_error(kNoCuda); }
void StreamOps::add_one() { throw std::runtime_error(kNoCuda); }
void StreamOps::add_one_busy(std::int64_t) { throw std::runtime_error(kNoCuda); }
void StreamOps::sync_stream() { throw std::runtime_error(kNoCuda); }
void StreamOps::sync_event() { throw std::runtime_error(kNoCuda); }
void StreamOps::sync_device() { throw std::runtime_error(kNoCuda); }
float StreamOps::read_scalar() { throw std::runtime_error(kNoCuda); }
void StreamOps::read_all(std::span<float>) { throw std::runtime_error(kNoCuda); }
void StreamOps::reset_accumulator() { throw std::runtime_error(kNoCuda); }
void StreamOps::accumulate() { throw std::runtime_error(kNoCuda); }
double StreamOps::read_accumulator() { throw std::runtime_error(kNoCuda); }
void StreamOps::capture_graph(int) { throw std::runtime_error(kNoCuda); }
void StreamOps::replay_graph() { throw std::runtime_error(kNoCuda); }
void StreamOps::enqueue_unrelated(int, std::int64_t) { throw std::runtime_error(kNoCuda); }
void StreamOps::sync_unrelated() { throw std::runtime_error(kNoCuda); }

}  // namespace pairbench::kernels::cuda
