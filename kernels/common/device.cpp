// The CUDA device query (device.h). The build with CUDA asks the runtime; the build without it
// answers kNotCompiledWithCudaReason: the one place the two builds differ for device queries.
#include "kernels/common/device.h"

#if PAIRBENCH_HAVE_CUDA
#include <cuda_runtime.h>
#endif

namespace pairbench::kernels::cuda {

DeviceInfo query_device() {
  DeviceInfo info;
#if PAIRBENCH_HAVE_CUDA
  cudaRuntimeGetVersion(&info.runtime_version);
  cudaDriverGetVersion(&info.driver_version);  // leaves 0 where no driver is installed
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess || count == 0) {
    info.reason = (status == cudaSuccess || status == cudaErrorNoDevice || status == cudaErrorInsufficientDriver)
                      ? std::string("no CUDA device")
                      : std::string("no CUDA device (") + cudaGetErrorName(status) + ")";
    cudaGetLastError();  // clear the error so later calls start clean
    return info;
  }
  info.device_count = count;
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
    cudaGetLastError();
    info.reason = "cudaGetDeviceProperties failed";
    return info;
  }
  info.available = true;
  info.name = prop.name;
  info.compute_capability_major = prop.major;
  info.compute_capability_minor = prop.minor;
#else
  info.reason = kNotCompiledWithCudaReason;
#endif
  return info;
}

std::string device_unavailable_reason() {
  const DeviceInfo info = query_device();
  return info.available ? std::string() : info.reason;
}

std::string devices_unavailable_reason(int count) {
  const DeviceInfo info = query_device();
  if (!info.available) return info.reason;
  if (info.device_count < count) {
    return "needs >= " + std::to_string(count) + " CUDA devices, found " + std::to_string(info.device_count);
  }
  return "";
}

}  // namespace pairbench::kernels::cuda
