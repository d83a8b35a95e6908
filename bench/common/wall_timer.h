// Wall-clock timing of a synchronised region for manual-time benchmarks. The framework's loop
// (exec.h) uses it; arms whose loop is special (threads racing, barriers, traces) use it directly.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>

#include "bench/common/timed_region.h"
#include "bench/common/work.h"

namespace pairbench::bench {

// Times one region per iteration through the timed-region seam (timed_region.h: manual time,
// in-process batches, instruction counts, the self-test's injected work) and keeps the sum.
// Constructing one in an arm whose experiment declares another timing mode at this point fails
// the arm (allowed() false; Google Benchmark's loop then runs no iteration).
class WallTimer {
 public:
  explicit WallTimer(benchmark::State& state)
      : state_(state), allowed_(timing_matches_declaration(state, Timing::kWallClock)) {}
  WallTimer(const WallTimer&) = delete;
  WallTimer& operator=(const WallTimer&) = delete;
  bool allowed() const { return allowed_; }
  void start() {
    region_begin();
    start_ = Clock::now();
  }
  void stop() {
    auto end = Clock::now();
    if (work_injection_active()) {
      inject_work(std::chrono::duration<double, std::nano>(end - start_).count());
      end = Clock::now();
    }
    region_end();
    const double ns = std::chrono::duration<double, std::nano>(end - start_).count();
    total_ns_ += ns;
    record_iteration(state_, ns * 1e-9);
  }
  double total_ns() const { return total_ns_; }

 private:
  using Clock = std::chrono::steady_clock;
  benchmark::State& state_;
  bool allowed_;
  Clock::time_point start_{};
  double total_ns_ = 0;
};

}  // namespace pairbench::bench
