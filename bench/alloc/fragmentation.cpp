// alloc.fragmentation (C16): a trace with interleaved lifetimes (sizes grow 4x per phase, a quarter
// of each phase's objects live until the next phase ends, the rest die within 1000 allocations);
// decided on the process's peak RSS over its first timed iteration (a fixed number of replays),
// beside the peak live bytes.
#include <array>
#include <map>

#include "bench/alloc/allocator_arms.h"
#include "bench/common/exec.h"
#include "kernels/alloc/host_workloads.h"

namespace pairbench::bench::alloc {
namespace {

constexpr std::uint64_t kTimedSeed = 0xF4A6;
// One timed iteration is this many replays, and the peak is taken over the process's first one, so
// that it does not depend on how many iterations the harness runs (jemalloc's RSS keeps growing
// from replay to replay). The replays that make the deciding metric are the timed work.
constexpr int kPeakReplays = 3;

std::string check_replay(const ka::FragmentationStats& s, const ka::FragmentationTrace& trace) {
  const auto n = static_cast<std::int64_t>(trace.allocations());
  if (s.bad_objects != 0) return std::to_string(s.bad_objects) + " objects were overwritten while live";
  if (s.allocations != n || s.frees != n) {
    return std::to_string(s.allocations) + " allocations, " + std::to_string(s.frees) + " frees, trace has " +
           std::to_string(n);
  }
  if (s.peak_live_bytes != trace.peak_live_bytes()) return "replayed peak live bytes differ from the trace's";
  return "";
}

struct PeakMeasurement {
  benchmark::UserCounters counters;
  std::string label;
};

void fragmentation(benchmark::State& state, const Point& p, std::string& label) {
  const auto phase_bytes = static_cast<std::size_t>(p.get_int("phase_bytes"));
  {
    ka::FragmentationTrace check({.phase_bytes = phase_bytes / 16, .seed = fresh_seed()});
    if (const std::string why = check_replay(check.replay(), check); !why.empty()) return fail_verification(state, why);
  }
  mark_verified(state);
  ka::FragmentationTrace trace({.phase_bytes = phase_bytes, .seed = kTimedSeed});
  // Google Benchmark may call this function several times in one process (a calibration ramp): the
  // first iteration of the first call measures the peak, and every later call reports that one.
  static std::map<std::size_t, PeakMeasurement> measured;
  auto peak = measured.find(phase_bytes);
  MemoryCounters memory;
  memory.start();
  std::string wrong;
  std::array<ka::FragmentationStats, kPeakReplays> s;
  exec(
      state, Work{.ops = static_cast<double>(trace.allocations()) * kPeakReplays}, [] {},
      [&] {
        for (auto& replay : s) replay = trace.replay();
      },
      [&] {
        for (const auto& replay : s) {
          if (wrong.empty()) wrong = check_replay(replay, trace);
        }
        if (peak != measured.end()) return;
        memory.finish(state, static_cast<double>(trace.allocations()) * kPeakReplays, label,
                      "the first timed iteration (" + std::to_string(kPeakReplays) + " replays)");
        const double peak_live = static_cast<double>(trace.peak_live_bytes());
        state.counters["peak_live_bytes"] = peak_live;
        state.counters["rss_over_live"] = state.counters["peak_rss_bytes"].value / peak_live;
        peak = measured.emplace(phase_bytes, PeakMeasurement{state.counters, label}).first;
      });
  if (!wrong.empty()) return fail_verification(state, "timed: " + wrong);
  for (const auto& [name, counter] : peak->second.counters) state.counters[name] = counter;
  state.SetLabel(peak->second.label);
}

std::string jemalloc_decay_is_zero() {
  for (const char* option : {"opt.dirty_decay_ms", "opt.muzzy_decay_ms"}) {
    const auto ms = ka::jemalloc_ssize_option(option);
    if (!ms) return std::string(option) + " unreadable";
    if (*ms != 0) return std::string(option) + " = " + std::to_string(*ms);
  }
  return "";
}

}  // namespace

// Expect (C16's claim): jemalloc and mimalloc hold a lower peak RSS than glibc, because they
// segregate sizes into classes and return whole free pages. The first runs on the 2-core VM said
// otherwise, and we expect that to repeat: glibc lowest (~57 MB peak for 37 MB live), mimalloc
// within 20 %, tcmalloc and jemalloc 1.5-2x higher, jemalloc rising by ~12 MB with every further
// replay. Why: jemalloc keeps freed dirty pages for dirty_decay_ms (10 s) and this trace lasts well
// under a second; with MALLOC_CONF=dirty_decay_ms:0,muzzy_decay_ms:0 (arm jemalloc_nodecay) it
// purges at once and should land within 10 % of glibc, at some cost in time. The fragmentation C16
// means comes from many threads with glibc's per-thread arenas, which this one-thread trace does
// not exercise. Peak RSS includes the process's fixed footprint (binary, libraries, the ~13 MB
// trace); rss_over_live (peak RSS / peak live requested bytes) shows the overhead.
PAIRBENCH_EXPERIMENT(alloc_fragmentation) {
  std::vector<Arm> arms = allocator_arms(fragmentation);
  arms.push_back(tuned_allocator_arm("jemalloc_nodecay", ka::Allocator::kJemalloc,
                                     {{"MALLOC_CONF", "dirty_decay_ms:0,muzzy_decay_ms:0"}}, jemalloc_decay_is_zero,
                                     fragmentation));
  return Experiment{
      .name = "alloc.fragmentation",
      .claim = "C16",
      .question =
          "With interleaved object lifetimes, does another allocator hold a lower peak RSS than glibc for the same "
          "live bytes?",
      .arms = std::move(arms),
      .grid = {{.name = "phase_bytes", .quick = {"67108864"}, .nightly = {"67108864", "268435456"}}},
      .timing = Timing::kWallClock,
      .metric = {.name = "peak_rss_bytes", .unit = "bytes", .better = Better::kLower},
      .secondary = {{.name = "rss_over_live", .unit = "x", .better = Better::kLower},
                    {.name = "minor_faults_per_op", .unit = "faults", .better = Better::kLower}},
      // Its own process per benchmark: the allocator's heap and the peak RSS are the process's history.
      .own_process = true,
      .verdict = {{.test = VerdictCheck::Test::kBetter,
                   .treatments = {"jemalloc", "tcmalloc"},
                   .threshold = 1.0,
                   .why = "the claim names jemalloc and tcmalloc; mimalloc and the GPU allocators are shown in the "
                          "figures but do not decide it"}},
  };
}

}  // namespace pairbench::bench::alloc
