// NVML through dlopen (gpu_clocks.h). The few types and constants used are NVML's stable C ABI
// (nvml.h of the CUDA toolkit; not installed with Debian's toolkit packages, so declared here).
#include "kernels/common/gpu_clocks.h"

#include <dlfcn.h>

#include <utility>
#include <vector>

namespace pairbench::kernels::cuda {
namespace {

using Return = int;                            // nvmlReturn_t: 0 = NVML_SUCCESS
using Device = void*;                          // nvmlDevice_t
constexpr int kClockSm = 1, kClockMemory = 2;  // nvmlClockType_t

// nvmlClocksEventReasons / ThrottleReasons bits.
constexpr std::uint64_t kSwPowerCap = 0x4, kHwSlowdown = 0x8, kSwThermal = 0x20, kHwThermal = 0x40,
                        kHwPowerBrake = 0x80;

template <class F>
F symbol(void* lib, const char* name) {
  return reinterpret_cast<F>(dlsym(lib, name));
}

}  // namespace

std::string throttling(std::uint64_t mask) {
  const std::vector<std::pair<std::uint64_t, const char*>> names = {{kHwSlowdown, "hardware slowdown"},
                                                                    {kHwThermal, "thermal (hardware)"},
                                                                    {kSwThermal, "thermal (software)"},
                                                                    {kSwPowerCap, "power cap"},
                                                                    {kHwPowerBrake, "power brake"}};
  std::string out;
  for (const auto& [bit, name] : names) {
    if (mask & bit) out += (out.empty() ? "" : ", ") + std::string(name);
  }
  return out;
}

GpuClocks read_gpu_clocks() {
  GpuClocks c;
  // Loaded once per process and kept: a bench process asks after every GPU benchmark.
  static void* const lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    c.reason = "libnvidia-ml.so.1 not found (no NVIDIA driver here)";
    return c;
  }
  const auto init = symbol<Return (*)()>(lib, "nvmlInit_v2");
  const auto handle = symbol<Return (*)(unsigned, Device*)>(lib, "nvmlDeviceGetHandleByIndex_v2");
  const auto clock = symbol<Return (*)(Device, int, unsigned*)>(lib, "nvmlDeviceGetClockInfo");
  const auto max_clock = symbol<Return (*)(Device, int, unsigned*)>(lib, "nvmlDeviceGetMaxClockInfo");
  const auto power_limit = symbol<Return (*)(Device, unsigned*)>(lib, "nvmlDeviceGetPowerManagementLimit");
  const auto ecc = symbol<Return (*)(Device, int*, int*)>(lib, "nvmlDeviceGetEccMode");
  const auto driver = symbol<Return (*)(char*, unsigned)>(lib, "nvmlSystemGetDriverVersion");
  auto reasons = symbol<Return (*)(Device, unsigned long long*)>(lib, "nvmlDeviceGetCurrentClocksEventReasons");
  if (!reasons)
    reasons = symbol<Return (*)(Device, unsigned long long*)>(lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
  if (!init || !handle || !clock) {
    c.reason = "libnvidia-ml.so.1 lacks nvmlInit_v2, nvmlDeviceGetHandleByIndex_v2 or nvmlDeviceGetClockInfo";
    return c;
  }
  // nvmlInit counts its callers; this process keeps its one reference for its life.
  static const Return initialised = init();
  if (initialised != 0) {
    c.reason = "nvmlInit_v2 failed (" + std::to_string(initialised) + ")";
    return c;
  }
  Device dev = nullptr;
  if (const Return r = handle(0, &dev); r != 0) {
    c.reason = "nvmlDeviceGetHandleByIndex_v2(0) failed (" + std::to_string(r) + ")";
    return c;
  }
  if (const Return r = clock(dev, kClockSm, &c.sm_mhz); r != 0) {
    c.reason = "nvmlDeviceGetClockInfo(SM) failed (" + std::to_string(r) + ")";
    return c;
  }
  c.available = true;
  clock(dev, kClockMemory, &c.memory_mhz);
  if (max_clock) max_clock(dev, kClockSm, &c.sm_max_mhz);
  unsigned milliwatts = 0;
  if (power_limit && power_limit(dev, &milliwatts) == 0) c.power_limit_w = milliwatts / 1000.0;
  int current = 0, pending = 0;
  if (ecc && ecc(dev, &current, &pending) == 0) c.ecc = current ? 1 : 0;
  char version[96] = {};
  if (driver && driver(version, sizeof version) == 0) c.driver = version;
  unsigned long long mask = 0;
  if (reasons && reasons(dev, &mask) == 0) c.slowdown_reasons = mask;
  return c;
}

}  // namespace pairbench::kernels::cuda
