// The one CUDA device query: whether device 0 is usable here and, if not, why. Every "is there a
// CUDA device" check (bench arms' applicability, GPU tests' skips, the environment record, the
// GPU families' own checks) asks this. Plain C++ in both builds; never throws.
#pragma once

#include <string>

namespace pairbench::kernels::cuda {

// What a build without nvcc says instead of any device: reports key on "not compiled with CUDA".
inline constexpr const char* kNotCompiledWithCudaReason = "not compiled with CUDA (nvcc not found at configure time)";

struct DeviceInfo {
  bool available = false;  // a usable device 0
  std::string reason;      // why not: "no CUDA device" (with the runtime's error name when it was
                           // not plainly "no device"), or kNotCompiledWithCudaReason
  std::string name;        // e.g. "NVIDIA H100 80GB HBM3"
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int device_count = 0;
  int driver_version = 0;   // e.g. 13000 for 13.0; 0 where no driver is installed
  int runtime_version = 0;  // cudart this binary was built with
};

// Never throws; safe to call on machines without a driver.
DeviceInfo query_device();

// "" when device 0 is usable, else DeviceInfo::reason.
std::string device_unavailable_reason();
// "" when `count` devices are usable, else the reason, or "needs >= 2 CUDA devices, found 1".
std::string devices_unavailable_reason(int count);

}  // namespace pairbench::kernels::cuda
