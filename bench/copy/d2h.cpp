// copy.d2h (C6): device-to-host copies of 4 KiB to 1 GiB into pageable (malloc), pinned
// (cudaMallocHost) and registered (cudaHostRegister of a malloc'd buffer) memory, in bytes per
// second on the GPU's clock (CUDA events).
#include <algorithm>
#include <string>
#include <vector>

#include "bench/common/devices.h"
#include "bench/common/experiment.h"
#include "kernels/copy/cuda_copy.h"
#include "kernels/copy/host_buffer.h"
#include "kernels/copy/verify.h"

namespace pairbench::bench {
namespace {

namespace kc = kernels::copy;
using kc::cuda::HostKind;

// Small copies are queued back to back, >= 8 MiB per timed region, so the event pair's own
// resolution (~0.5 us) stays small against the region.
int copies_per_iteration(std::int64_t bytes) {
  return static_cast<int>(std::clamp<std::int64_t>((std::int64_t{8} << 20) / bytes, 1, 1024));
}

void run(benchmark::State& state, const Point& p, HostKind host) {
  const auto bytes = static_cast<std::size_t>(p.get_int("bytes"));
  const int copies = copies_per_iteration(static_cast<std::int64_t>(bytes));
  kc::cuda::Transfer t(bytes, kc::cuda::Direction::kDeviceToHost, host);
  const std::uint64_t seed = kc::fresh_seed();
  t.fill_source(seed);
  t.poison_destination();
  t.enqueue(1);  // also the warm-up: first-use costs stay out of the timing
  if (const std::size_t at = t.first_mismatch(seed); at != bytes) {
    return fail_verification(state, "host copy differs from device source at byte " + std::to_string(at));
  }
  mark_verified(state);
  t.poison_destination();

  kc::cuda::EventSpan span;
  double total_s = 0;
  std::int64_t faults = 0;
  for (auto _ : state) {
    const std::int64_t f0 = kc::minor_faults();
    span.begin(t.stream());
    t.enqueue(copies);
    span.end(t.stream());
    const double s = span.elapsed_s();
    faults += kc::minor_faults() - f0;
    state.SetIterationTime(s);
    total_s += s;
  }
  if (!t.spot_check(seed, kc::fresh_seed())) return fail_verification(state, "host copy differs after timing");
  const double iterations = static_cast<double>(state.iterations());
  state.counters["bytes_per_second"] = static_cast<double>(bytes) * copies * iterations / total_s;
  state.counters["minor_faults_per_op"] = static_cast<double>(faults) / (iterations * copies);  // op: one copy
  state.counters["copies_per_iteration"] = copies;
}

ArmFn arm(HostKind host) {
  return [host](benchmark::State& s, const Point& p) {
    try {
      run(s, p, host);
    } catch (const kc::NotSupported& e) {  // beyond free host/device memory, or pinning refused
      s.SkipWithError((std::string("not_supported: ") + e.what()).c_str());
    }
  };
}

std::string needs_cuda(const Point&) { return cuda_unavailable_reason(); }

}  // namespace

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
      .arms = {{.name = "pageable", .run = arm(HostKind::kPageable), .unavailable = needs_cuda},
               {.name = "pinned", .run = arm(HostKind::kPinned), .unavailable = needs_cuda},
               {.name = "registered", .run = arm(HostKind::kRegistered), .unavailable = needs_cuda}},
      .grid = {{.name = "bytes",
                .quick = {"4096", "1048576", "67108864"},
                .nightly = {"4096", "16384", "65536", "262144", "1048576", "4194304", "16777216", "67108864",
                            "268435456", "1073741824"}}},
      .timing = Timing::kCudaEvents,
      .metric = {.name = "bytes_per_second", .unit = "B/s", .better = Better::kHigher},
      .limits = {{.experiment = "limits.gpu_copy", .arm = "d2h_pinned"}},
      .secondary = {{.name = "minor_faults_per_op", .unit = "faults", .better = Better::kLower}},
  };
}

}  // namespace pairbench::bench
