// The GPU's clocks, power limit, ECC mode and driver as NVML reports them, read through the
// driver's own libnvidia-ml.so.1 loaded at run time (dlopen): nothing to link, and on a machine
// without the driver every field says why it is absent. The environment record takes the static
// ones; the bench main reads the SM clock and the clock-slowing reasons right after each GPU
// benchmark, so that a sample taken while the GPU throttled is named in its row (nvbench reads
// the SM clock per sample for the same reason). Device 0 in NVML's order: on a one-GPU host the
// CUDA device 0 the arms use.
#pragma once

#include <cstdint>
#include <string>

namespace pairbench::kernels::cuda {

struct GpuClocks {
  bool available = false;
  std::string reason;  // why not: no libnvidia-ml.so.1, or the NVML call that failed
  unsigned sm_mhz = 0, sm_max_mhz = 0, memory_mhz = 0;
  double power_limit_w = 0;            // 0: not reported
  int ecc = -1;                        // 1 on, 0 off, -1 not reported (consumer parts have none)
  std::string driver;                  // e.g. "580.65.06"
  std::uint64_t slowdown_reasons = 0;  // NVML's clock event reasons, bit mask
};

// Never throws.
GpuClocks read_gpu_clocks();

// The reasons in `mask` that hold the SM clock below what the work asks for, by name ("thermal
// (hardware), power cap"): hardware slowdown, software and hardware thermal, power cap, power
// brake. Not the idle state, the application clock setting, sync boost or the display clock,
// which are not throttling. "" when none.
std::string throttling(std::uint64_t mask);

}  // namespace pairbench::kernels::cuda
