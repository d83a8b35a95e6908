// The framework-owned timed loop (nvbench's state.exec): the arm hands over one iteration's work
// and declares what it covers (work.h); the loop owns the timed-region seam (timed_region.h:
// manual time, in-process batches, instruction counts, injected work), checks the arm times the
// way its experiment declares, and derives every rate counter from the declared work.
#pragma once

#include <benchmark/benchmark.h>

#include <utility>

#include "bench/common/wall_timer.h"
#include "bench/common/work.h"

namespace pairbench::bench {

// Times `body()` on the host clock once per iteration, with `untimed_before()` and
// `untimed_after()` around each timed region (resetting what the body consumes, reading fault
// counters, freeing what it made); then sets the rate counters of `work`, the work of one
// iteration. Returns the measured seconds in all (0 when the arm's declaration forbids the host
// clock: the arm is then failed and nothing ran).
template <class UntimedBefore, class Body, class UntimedAfter>
double exec(benchmark::State& state, const Work& work, UntimedBefore&& untimed_before, Body&& body,
            UntimedAfter&& untimed_after) {
  WallTimer timer(state);
  if (!timer.allowed()) return 0;
  for (auto _ : state) {
    untimed_before();
    timer.start();
    body();
    timer.stop();
    untimed_after();
  }
  const double measured_s = timer.total_ns() * 1e-9;
  set_rate_counters(state, work, measured_s);
  return measured_s;
}

template <class UntimedBefore, class Body>
double exec(benchmark::State& state, const Work& work, UntimedBefore&& untimed_before, Body&& body) {
  return exec(state, work, std::forward<UntimedBefore>(untimed_before), std::forward<Body>(body), [] {});
}

template <class Body>
double exec(benchmark::State& state, const Work& work, Body&& body) {
  return exec(state, work, [] {}, std::forward<Body>(body), [] {});
}

}  // namespace pairbench::bench
