// Wall-clock timing of a synchronised region for manual-time benchmarks (dispatch experiments).
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdlib>

namespace pairbench::bench {

// The gate's self-test knob: PAIRBENCH_INJECT_SLOWDOWN_PCT=X makes every timed region X % longer
// by spinning for X % of its measured time inside the region (calibrated extra work). Unset: 0.
inline double injected_slowdown_fraction() {
  static const double fraction = [] {
    const char* v = std::getenv("PAIRBENCH_INJECT_SLOWDOWN_PCT");
    return v ? std::atof(v) / 100.0 : 0.0;
  }();
  return fraction;
}

// Times one region per iteration, hands it to Google Benchmark (UseManualTime) and keeps the sum.
class WallTimer {
 public:
  explicit WallTimer(benchmark::State& state) : state_(state) {}
  // Records that the self-test slowdown was applied, so the gate's selftest counts this benchmark.
  ~WallTimer() {
    if (injected_slowdown_fraction() > 0) state_.counters["injected_slowdown_pct"] = 100 * injected_slowdown_fraction();
  }
  WallTimer(const WallTimer&) = delete;
  WallTimer& operator=(const WallTimer&) = delete;
  void start() { start_ = Clock::now(); }
  void stop() {
    double ns = std::chrono::duration<double, std::nano>(Clock::now() - start_).count();
    if (const double extra = injected_slowdown_fraction(); extra > 0) {
      const auto until = Clock::now() + std::chrono::nanoseconds(static_cast<long long>(ns * extra));
      while (Clock::now() < until) {
      }
      ns = std::chrono::duration<double, std::nano>(Clock::now() - start_).count();
    }
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
