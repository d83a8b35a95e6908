// copy.h2d (C6): host-to-device copies of 4 KiB to 1 GiB from pageable (malloc), pinned
// (cudaMallocHost) and registered (cudaHostRegister of a malloc'd buffer) memory, in bytes per
// second on the GPU's clock (CUDA events).
#include "bench/copy/transfer_arms.h"

namespace pairbench::bench {

// Expect: pinned and registered reach ~90 % of the host link from ~1 MiB on
// (~25 GB/s on PCIe 4, ~50 GB/s on PCIe 5); pageable stays at 30-60 % of pinned at every size,
// because the driver copies each piece into its own pinned bounce buffer with the CPU before the
// DMA, and that memcpy (~10 GB/s) is the bottleneck. At 4 KiB all arms are latency-bound
// (~2-5 us per copy) and within ~2x of each other. The pageable/pinned ratio per size is the
// ratio column; the target (pinned >= 90 % of the best large pinned copy) is pinned's
// "% of limit" against limits.gpu_copy/h2d_pinned.
PAIRBENCH_EXPERIMENT(h2d) {
  return Experiment{
      .name = "copy.h2d",
      .claim = "C6",
      .question = "Is pinned host memory faster to copy to the GPU than pageable memory, and from what size?",
      .arms = copy_transfer::transfer_arms(kernels::copy::cuda::Direction::kHostToDevice),
      .grid = {copy_transfer::transfer_bytes_axis()},
      .timing = Timing::kCudaEvents,
      .metric = {.name = "bytes_per_second", .unit = "B/s", .better = Better::kHigher},
      .limits = {{.experiment = "limits.gpu_copy", .arm = "h2d_pinned"}},
      .secondary = {{.name = "minor_faults_per_op", .unit = "faults", .better = Better::kLower}},
      .verdict = {{.test = VerdictCheck::Test::kBetter, .threshold = 1.0}},
  };
}

}  // namespace pairbench::bench
