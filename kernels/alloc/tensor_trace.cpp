// The training-step trace generator.
#include "kernels/alloc/tensor_trace.h"

#include "kernels/common/rng.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace pairbench::kernels::alloc {
TensorTrace make_training_step_trace(int layers, std::uint64_t seed, std::size_t min_bytes, std::size_t max_bytes) {
  if (layers < 1 || min_bytes < 4 || max_bytes < min_bytes) {
    throw std::invalid_argument("make_training_step_trace: layers >= 1, 4 <= min_bytes <= max_bytes");
  }
  TensorTrace trace;
  std::uint64_t rng = seed;
  auto log_uniform = [&](std::size_t lo, std::size_t hi) {
    const double u = unit_double(splitmix64_next(rng));
    const double v = std::exp(std::log(static_cast<double>(lo)) + u * std::log(static_cast<double>(hi) / lo));
    return std::clamp<std::size_t>(static_cast<std::size_t>(v) / 4 * 4, lo / 4 * 4, hi);
  };
  std::size_t live = 0;
  auto alloc = [&](std::size_t bytes, int stream) {
    const std::uint32_t id = trace.tensors++;
    trace.events.push_back({TraceEvent::Kind::kAlloc, id, bytes, stream});
    live += bytes;
    trace.peak_live_bytes = std::max(trace.peak_live_bytes, live);
    return id;
  };
  auto release = [&](std::uint32_t id) {
    for (std::size_t i = 0; i < trace.events.size(); ++i) {
      const TraceEvent allocated = trace.events[i];  // a copy: push_back below may reallocate
      if (allocated.kind == TraceEvent::Kind::kAlloc && allocated.tensor == id) {
        trace.events.push_back({TraceEvent::Kind::kFree, id, allocated.bytes, allocated.stream});
        live -= allocated.bytes;
        return;
      }
    }
  };

  std::vector<std::uint32_t> activations, stats;
  std::vector<std::size_t> activation_bytes;
  for (int l = 0; l < layers; ++l) {
    const std::size_t bytes = log_uniform(min_bytes, max_bytes);
    activation_bytes.push_back(bytes);
    const std::uint32_t workspace = alloc(log_uniform(min_bytes / 4 * 4, std::max(min_bytes, bytes / 2)), 0);
    activations.push_back(alloc(bytes, 0));
    release(workspace);
    stats.push_back(alloc(log_uniform(4, 4096), 1));
    if (stats.size() > 2) {
      release(stats.front());
      stats.erase(stats.begin());
    }
  }
  for (std::uint32_t s : stats) release(s);
  std::uint32_t upper_gradient = 0;
  bool have_upper = false;
  for (int l = layers - 1; l >= 0; --l) {
    const std::uint32_t gradient = alloc(activation_bytes[static_cast<std::size_t>(l)], 0);
    release(activations[static_cast<std::size_t>(l)]);
    if (have_upper) release(upper_gradient);
    upper_gradient = gradient;
    have_upper = true;
  }
  release(upper_gradient);
  return trace;
}

}  // namespace pairbench::kernels::alloc
