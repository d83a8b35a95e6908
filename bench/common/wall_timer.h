// Wall-clock timing of a synchronised region for manual-time benchmarks (dispatch experiments).
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>

namespace pairbench::bench {

// Times one region per iteration, hands it to Google Benchmark (UseManualTime) and keeps the sum.
class WallTimer {
 public:
  explicit WallTimer(benchmark::State& state) : state_(state) {}
  void start() { start_ = Clock::now(); }
  void stop() {
    const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start_).count();
    total_ns_ += ns;
    state_.SetIterationTime(ns * 1e-9);
  }
  double total_ns() const { return total_ns_; }

 private:
  using Clock = std::chrono::steady_clock;
  benchmark::State& state_;
  Clock::time_point start_{};
  double total_ns_ = 0;
};

}  // namespace pairbench::bench
