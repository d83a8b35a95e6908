// copy.stores: one thread copying 4 KiB to 1 GiB with ordinary stores vs non-temporal (streaming)
// stores, in bytes read + written per second (STREAM's counting). It tests no claim (C6 is pinned
// vs pageable memory): it says which store this CPU copies fastest with, beside its memory limits.
#include <algorithm>

#include "bench/common/exec.h"
#include "bench/common/experiment.h"
#include "kernels/copy/host_buffer.h"
#include "kernels/copy/host_copy.h"
#include "kernels/copy/verify.h"

namespace pairbench::bench {
namespace {

namespace kc = kernels::copy;
using CopyFn = void (*)(void*, const void*, std::size_t);

// Small copies are batched so one timed region moves >= 8 MiB: clock reads stay far below 1 %.
int copies_per_iteration(std::int64_t bytes) {
  return static_cast<int>(std::clamp<std::int64_t>((std::int64_t{8} << 20) / bytes, 1, 1024));
}

void run(benchmark::State& state, const Point& p, CopyFn copy) {
  const auto bytes = static_cast<std::size_t>(p.get_int("bytes"));
  const int copies = copies_per_iteration(static_cast<std::int64_t>(bytes));
  kc::require_host_memory(2 * bytes, "a source and a destination");
  kc::HostBuffer src(bytes, kc::PageState::kPrefaulted);
  kc::HostBuffer dst(bytes, kc::PageState::kPrefaulted);
  const std::uint64_t seed = kc::fresh_seed();
  kc::fill_random(src.span(), seed);
  kc::poison(dst.span());
  copy(dst.data(), src.data(), bytes);
  if (const std::size_t at = kc::first_mismatch(dst.data(), src.data(), bytes); at != bytes) {
    return fail_verification(state, "destination differs from source at byte " + std::to_string(at));
  }
  mark_verified(state);
  kc::poison(dst.span());  // the spot check after timing must see the timed copies, not this one

  std::int64_t faults = 0, f0 = 0;
  const double moved = 2.0 * static_cast<double>(bytes) * copies;  // read + written
  exec(
      state, Work{.bytes = moved}, [&] { f0 = kc::minor_faults(); },
      [&] {
        for (int c = 0; c < copies; ++c) copy(dst.data(), src.data(), bytes);
      },
      [&] { faults += kc::minor_faults() - f0; });
  if (!kc::spot_check_random(dst.span(), seed, kc::fresh_seed())) {
    return fail_verification(state, "destination differs from source after timing");
  }
  const double iterations = static_cast<double>(state.iterations());
  state.counters["minor_faults_per_op"] = static_cast<double>(faults) / (iterations * copies);  // op: one copy
  state.counters["copies_per_iteration"] = copies;
}

ArmFn arm(CopyFn copy) {
  return [copy](benchmark::State& s, const Point& p) { run(s, p, copy); };
}

}  // namespace

// Expect: in cache (<= 1 MiB) plain stores win by 2x or more: streaming stores send every line
// to DRAM and the next copy cannot hit. Beyond the last-level cache nontemporal wins by up to
// 1.5x: plain stores first read each destination line (read-for-ownership), 3 bytes of traffic
// per byte copied instead of 2. glibc's memcpy streams only above x86_non_temporal_threshold
// (3/4 of its per-thread share of L3; 127 MiB on the development VM), so at 64 MiB one core's
// memcpy is no limit for nontemporal (which beat it by 42 % there): the limit is the best of
// every method the run measured, memcpy, STREAM copy and triad on one core and on all, and these
// two store arms; one thread should reach at most ~65 % of what all cores do on that VM.
PAIRBENCH_EXPERIMENT(stores) {
  std::vector<LimitRef> limits;
  for (const char* large : {"67108864", "268435456", "1073741824"}) {  // past every cache
    limits.push_back({.experiment = "limits.memory_bandwidth",
                      .arm = "",
                      .where = {},
                      .when = {{"bytes", large}},
                      .own_arms = true});
  }
  return Experiment{
      .name = "copy.stores",
      .question = "Do non-temporal stores copy large buffers faster than ordinary stores on this CPU?",
      .arms = {{.name = "plain", .run = arm(kc::copy_plain)},
               {.name = "nontemporal",
                .run = arm(kc::copy_nontemporal),
                .unavailable = [](const Point&) { return kc::nontemporal_unavailable_reason(); }}},
      .grid = {{.name = "bytes",
                .quick = {"4096", "1048576", "67108864"},
                .nightly = {"4096", "16384", "65536", "262144", "1048576", "4194304", "16777216", "67108864",
                            "268435456", "1073741824"}}},
      .timing = Timing::kWallClock,
      .metric = {.name = "bytes_per_second", .unit = "B/s", .better = Better::kHigher},
      .limits = limits,
      .secondary = {{.name = "minor_faults_per_op", .unit = "faults", .better = Better::kLower}},
      // Instruction counts gate this experiment too: single-thread stores: the same instructions every run.
      .instructions = cpu_point,
  };
}

}  // namespace pairbench::bench
