// limits.gpu_copy: this GPU's device-to-device copy bandwidth (bytes read + written, as CUDA's
// bandwidthTest counts them) and its best large pinned H2D and D2H copies (bytes moved), on the
// GPU's clock. The yardstick for copy.* GPU arms.
#include <algorithm>
#include <string>

#include "bench/common/devices.h"
#include "bench/common/exec.h"
#include "bench/common/experiment.h"
#include "kernels/copy/cuda_copy.h"
#include "kernels/copy/host_buffer.h"
#include "kernels/copy/verify.h"

namespace pairbench::bench {
namespace {

namespace kc = kernels::copy;
using kc::cuda::Direction;

// Large enough that every link and HBM is at its plateau; small enough for any data-centre GPU.
constexpr std::size_t kBytes = std::size_t{256} << 20;

void run(benchmark::State& state, const Point&, Direction direction) {
  kc::cuda::Transfer t(kBytes, direction, kc::cuda::HostKind::kPinned);
  const std::uint64_t seed = kc::fresh_seed();
  t.fill_source(seed);
  t.poison_destination();
  t.enqueue(1);  // also the warm-up
  if (const std::size_t at = t.first_mismatch(seed); at != kBytes) {
    return fail_verification(state, "destination differs from source at byte " + std::to_string(at));
  }
  mark_verified(state);
  t.poison_destination();

  // A device-to-device copy reads and writes device memory: both count, as in STREAM.
  const double per_copy = (direction == Direction::kDeviceToDevice ? 2.0 : 1.0) * static_cast<double>(kBytes);
  double best_s = 1e300;
  exec_cuda(
      state, Work{.bytes = per_copy}, t.stream(), [] {}, [&] { t.enqueue(1); },
      [&](double s) { best_s = std::min(best_s, s); });
  if (!t.spot_check(seed, kc::fresh_seed())) return fail_verification(state, "destination differs after timing");
  state.counters["best_bytes_per_second"] = per_copy / best_s;  // STREAM's convention, for reference
}

ArmFn arm(Direction direction) {
  return [direction](benchmark::State& s, const Point& p) { run(s, p, direction); };
}

}  // namespace

// Expect: d2d at 80-90 % of HBM peak (H100 SXM ~2.6-3 TB/s of 3.35); pinned H2D and D2H at
// ~85-90 % of the link (PCIe 5 x16 ~50-55 GB/s, PCIe 4 ~25 GB/s).
PAIRBENCH_EXPERIMENT(gpu_copy) {
  return Experiment{
      .name = "limits.gpu_copy",
      .question = "How fast can this GPU copy within its memory, and to and from pinned host memory?",
      .arms = {{.name = "d2d", .run = arm(Direction::kDeviceToDevice), .unavailable = needs_cuda},
               {.name = "h2d_pinned", .run = arm(Direction::kHostToDevice), .unavailable = needs_cuda},
               {.name = "d2h_pinned", .run = arm(Direction::kDeviceToHost), .unavailable = needs_cuda}},
      .timing = Timing::kCudaEvents,
      .metric = {.name = "bytes_per_second", .unit = "B/s", .better = Better::kHigher},
      .is_limit = true,
  };
}

}  // namespace pairbench::bench
