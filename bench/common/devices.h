// Which device an arm needs and whether this machine has it, for Arm::applies / Arm::unavailable.
#pragma once

#include <string>

#include "bench/common/experiment.h"

namespace pairbench::bench {

// "" when a CUDA device is usable here, else the reason ("no CUDA device", "not compiled with CUDA"):
// kernels/common/device.h's one device query, asked once per process.
const std::string& cuda_unavailable_reason();
// For Arm::unavailable of an arm that needs a CUDA device at every point.
inline std::string needs_cuda(const Point&) { return cuda_unavailable_reason(); }

// For experiments with a `device` axis ("cpu" | "cuda"): the CUDA points need a device.
inline std::string unavailable_for_device(const Point& p) {
  return p.get("device") == "cuda" ? cuda_unavailable_reason() : std::string();
}
inline bool on_device(const Point& p, const char* device) { return p.get("device") == device; }

}  // namespace pairbench::bench
