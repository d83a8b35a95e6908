// Checking CUDA runtime calls: every failure becomes a std::runtime_error naming the call, the
// error's name and its description. Shared by every .cu file in kernels/.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace pairbench::kernels {

inline void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    throw std::runtime_error(std::string(call) + ": " + cudaGetErrorName(status) + ": " + cudaGetErrorString(status));
  }
}

}  // namespace pairbench::kernels

#define PB_CUDA(call) ::pairbench::kernels::check((call), #call)
// A launch reports configuration errors only through cudaGetLastError.
#define PB_LAUNCHED(what) ::pairbench::kernels::check(cudaGetLastError(), what)
