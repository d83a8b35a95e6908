// copy.d2h (C6): device-to-host copies of 4 KiB to 1 GiB into pageable (malloc), pinned
// (cudaMallocHost) and registered (cudaHostRegister of a malloc'd buffer) memory, in bytes per
// second on the GPU's clock (CUDA events).
#include "bench/copy/transfer_arms.h"

namespace pairbench::bench {

// Expect: as copy.h2d, mirrored: pinned and registered reach ~90 % of the link from ~1 MiB on;
// pageable stays at 30-60 % of pinned, because the DMA lands in the driver's pinned bounce
// buffer and the CPU then copies it into the pageable destination, piece by piece. The target
// (pinned >= 90 % of the best large pinned copy) is pinned's "% of limit" against
// limits.gpu_copy/d2h_pinned.
PAIRBENCH_EXPERIMENT(d2h) {
  return Experiment{
      .name = "copy.d2h",
      .claim = "C6",
      .question = "Is pinned host memory faster to copy GPU results into than pageable memory, and from what size?",
      .arms = copy_transfer::transfer_arms(kernels::copy::cuda::Direction::kDeviceToHost),
      .grid = {copy_transfer::transfer_bytes_axis()},
      .timing = Timing::kCudaEvents,
      .metric = {.name = "bytes_per_second", .unit = "B/s", .better = Better::kHigher},
      .limits = {{.experiment = "limits.gpu_copy", .arm = "d2h_pinned"}},
      .secondary = {{.name = "minor_faults_per_op", .unit = "faults", .better = Better::kLower}},
      .verdict = {{.test = VerdictCheck::Test::kBetter, .threshold = 1.0}},
  };
}

}  // namespace pairbench::bench
