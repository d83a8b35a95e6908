// copy.bidirectional (C12): an H2D and a D2H copy of the same size, both pinned, one after the
// other on one stream vs at once on two streams. Bytes moved (both directions) per second.
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

void run(benchmark::State& state, const Point& p, bool concurrent) {
  const auto bytes = static_cast<std::size_t>(p.get_int("bytes"));
  kc::cuda::Duplex d(bytes);
  auto run_once = [&] { concurrent ? d.enqueue_concurrent() : d.enqueue_sequential(); };
  const std::uint64_t seed = kc::fresh_seed();
  d.fill_sources(seed);
  d.poison_destinations();
  run_once();  // also the warm-up
  if (const std::string why = d.first_mismatch(seed); !why.empty()) return fail_verification(state, why);
  mark_verified(state);
  d.poison_destinations();

  std::int64_t faults = 0, f0 = 0;
  exec_cuda(
      state, Work{.bytes = 2.0 * static_cast<double>(bytes)}, d.stream(), [&] { f0 = kc::minor_faults(); }, run_once,
      [&] { faults += kc::minor_faults() - f0; });  // bytes: one H2D and one D2H
  if (!d.spot_check(seed, kc::fresh_seed())) return fail_verification(state, "a destination differs after timing");
  state.counters["minor_faults_per_op"] =
      static_cast<double>(faults) / static_cast<double>(state.iterations());  // op: one pair
}

ArmFn arm(bool concurrent) {
  return [concurrent](benchmark::State& s, const Point& p) { run(s, p, concurrent); };
}

}  // namespace

// Expect: concurrent ~1.7-2x sequential from ~1 MiB on: PCIe is full duplex and data-centre
// GPUs have separate copy engines per direction, so the two copies share nothing but the host's
// memory bandwidth. At 1 MiB the copies are short enough that launch gaps eat part of the gain.
// The limit is one-direction pinned H2D, so concurrent may show up to ~200 % of it.
PAIRBENCH_EXPERIMENT(bidirectional) {
  return Experiment{
      .name = "copy.bidirectional",
      .claim = "C12",
      .question = "Do an H2D and a D2H copy from pinned memory run concurrently on two streams?",
      .arms = {{.name = "sequential", .run = arm(false), .unavailable = needs_cuda},
               {.name = "concurrent", .run = arm(true), .unavailable = needs_cuda}},
      .grid = {{.name = "bytes", .quick = {"67108864"}, .nightly = {"1048576", "16777216", "268435456"}}},
      .timing = Timing::kCudaEvents,
      .metric = {.name = "bytes_per_second", .unit = "B/s", .better = Better::kHigher},
      .limits = {{.experiment = "limits.gpu_copy", .arm = "h2d_pinned"}},
      .secondary = {{.name = "minor_faults_per_op", .unit = "faults", .better = Better::kLower}},
      .verdict = {{.test = VerdictCheck::Test::kBetter, .threshold = 1.0}},
  };
}

}  // namespace pairbench::bench
