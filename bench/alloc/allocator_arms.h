// The environment arms shared by the CPU allocator experiments (C16): glibc without a preload
// (the baseline), then jemalloc, tcmalloc and mimalloc by LD_PRELOAD; the in-process check that
// the arm's allocator answers malloc and operator new; per-process memory counters.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "bench/common/experiment.h"
#include "kernels/alloc/allocator_probe.h"
#include "kernels/common/rng.h"
#include "kernels/alloc/process_memory.h"

namespace pairbench::bench::alloc {

namespace ka = kernels::alloc;

// Runs inside the arm's process before anything is timed. True when `expected` answers malloc and
// operator new; `label` then holds the allocator, its version and the settings in force. Else the
// state says why: not_supported when the arm's preload is absent (the binary was run directly,
// not by the harness), incorrect when another allocator answers.
inline bool allocator_in_effect(benchmark::State& state, ka::Allocator expected, const std::string& preload,
                                std::string& label) {
  if (!preload.empty()) {
    const char* env = std::getenv("LD_PRELOAD");
    if (env == nullptr || std::string_view(env).find(preload) == std::string_view::npos) {
      state.SkipWithError(("not_supported: run through the harness: needs LD_PRELOAD=" + preload).c_str());
      return false;
    }
  }
  const ka::AllocatorProbe probe = ka::probe_allocator();
  label = probe.describe();
  if (!probe.in_effect(expected)) {
    fail_verification(state, std::string(ka::allocator_name(expected)) + " is not in effect: " + label);
    return false;
  }
  state.SetLabel(label);
  return true;
}

// The workload of one experiment: runs after the allocator check, with the label to extend.
using AllocatorWorkload = void (*)(benchmark::State&, const Point&, std::string& label);

// glibc (baseline), jemalloc, tcmalloc, mimalloc, all running `workload`.
inline std::vector<Arm> allocator_arms(AllocatorWorkload workload) {
  std::vector<Arm> arms;
  arms.push_back({.name = "glibc", .run = [workload](benchmark::State& s, const Point& p) {
                    std::string label;
                    if (allocator_in_effect(s, ka::Allocator::kGlibc, "", label)) workload(s, p, label);
                  }});
  for (const ka::AllocatorLibrary& lib : ka::preloadable_allocators()) {
    arms.push_back({.name = ka::allocator_name(lib.which),
                    .run =
                        [workload, lib](benchmark::State& s, const Point& p) {
                          std::string label;
                          if (allocator_in_effect(s, lib.which, lib.path, label)) workload(s, p, label);
                        },
                    .unavailable =
                        [lib](const Point&) {
                          std::error_code ec;
                          return std::filesystem::exists(lib.path, ec) ? std::string()
                                                                       : "not available: install " + lib.package;
                        },
                    .env = {{"LD_PRELOAD", lib.path}}});
  }
  return arms;
}

// An environment arm that preloads `which` with allocator options (e.g. MALLOC_CONF) and checks
// in-process, after the allocator check, that the options took effect: `options_in_effect`
// returns "" or why not.
inline Arm tuned_allocator_arm(std::string name, ka::Allocator which, std::map<std::string, std::string> options,
                               std::string (*options_in_effect)(), AllocatorWorkload workload) {
  ka::AllocatorLibrary lib{};
  for (const ka::AllocatorLibrary& l : ka::preloadable_allocators()) {
    if (l.which == which) lib = l;
  }
  std::map<std::string, std::string> env = std::move(options);
  env["LD_PRELOAD"] = lib.path;
  return {.name = std::move(name),
          .run =
              [workload, lib, options_in_effect](benchmark::State& s, const Point& p) {
                std::string label;
                if (!allocator_in_effect(s, lib.which, lib.path, label)) return;
                if (const std::string why = options_in_effect(); !why.empty()) {
                  return fail_verification(s, "allocator options not in effect: " + why + "; " + label);
                }
                workload(s, p, label);
              },
          .unavailable =
              [lib](const Point&) {
                std::error_code ec;
                return std::filesystem::exists(lib.path, ec) ? std::string() : "not available: install " + lib.package;
              },
          .env = env};
}

// Page faults and peak RSS of this process over a region (the timed loop unless said otherwise):
// start() just before it, finish() just after. The peak is VmHWM reset by start() where
// /proc/self/clear_refs allows it.
class MemoryCounters {
 public:
  void start() {
    reset_ = ka::reset_peak_rss();
    before_ = ka::read_process_memory();
  }
  // Sets peak_rss_bytes, rss_before_bytes, minor_faults, major_faults (totals over the loop) and
  // minor_faults_per_op; says in the label what the peak covers.
  void finish(benchmark::State& state, double ops, std::string& label,
              const std::string& region = "the timed loop") const {
    const ka::ProcessMemory after = ka::read_process_memory();
    const double minor = static_cast<double>(after.minor_faults - before_.minor_faults);
    state.counters["peak_rss_bytes"] = static_cast<double>(after.peak_rss_bytes);
    state.counters["rss_before_bytes"] = static_cast<double>(before_.rss_bytes);
    state.counters["minor_faults"] = minor;
    state.counters["major_faults"] = static_cast<double>(after.major_faults - before_.major_faults);
    if (ops > 0) state.counters["minor_faults_per_op"] = minor / ops;
    label += reset_ && after.peak_source == "VmHWM"
                 ? "; peak_rss=VmHWM over " + region
                 : "; peak_rss=" + after.peak_source + " since process start (clear_refs not permitted)";
    state.SetLabel(label);
  }

 private:
  bool reset_ = false;
  ka::ProcessMemory before_;
};

// Fresh seeds for verification inputs; timed runs use fixed seeds so every arm sees one workload.
using ::pairbench::kernels::fresh_seed;

}  // namespace pairbench::bench::alloc
