// The framework-owned timed loops (nvbench's state.exec): the arm hands over one iteration's work
// and declares what it covers (work.h); the loop owns the timed-region seam (timed_region.h:
// manual time, in-process batches, instruction counts, injected work), checks the arm times the
// way its experiment declares, and derives every rate counter from the declared work. exec times
// on the host clock, exec_cuda with the one CUDA event pair (kernels/common/cuda_events.h).
#pragma once

#include <benchmark/benchmark.h>

#include <type_traits>
#include <utility>

#include "bench/common/timed_region.h"
#include "bench/common/wall_timer.h"
#include "bench/common/work.h"
#include "kernels/common/cuda_events.h"

namespace pairbench::bench {

namespace detail {
// `untimed_after` may take the iteration's measured seconds (a best-of, a histogram) or nothing.
template <class After>
void call_after(After& after, double seconds) {
  if constexpr (std::is_invocable_v<After&, double>) {
    after(seconds);
  } else {
    after();
  }
}
}  // namespace detail

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
  note_iteration_work(work_fields(work));
  for (auto _ : state) {
    untimed_before();
    const double before_ns = timer.total_ns();  // read outside the region: adds no instruction to it
    timer.start();
    body();
    timer.stop();
    detail::call_after(untimed_after, (timer.total_ns() - before_ns) * 1e-9);
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
  return exec(
      state, work, [] {}, std::forward<Body>(body), [] {});
}

// The CUDA-event loop, the one copy of it: per iteration `untimed_before()`, then an event pair
// on `stream` around `enqueue()` (which queues GPU work on `stream`, or on streams joined back
// into it, and may block, as a pageable copy does), the host waiting for the end event, then
// `untimed_after()` (optionally given the iteration's seconds). The GPU's clock is handed to
// Google Benchmark and the in-process batches; the region seam brackets the host side (instruction
// counts are not meaningful for GPU work, and the self-test's injected host work would not show on
// the GPU's clock, so it is not planted here). Sets the rate counters of `work` per iteration and
// returns the measured seconds (0 when the experiment does not declare CUDA events here: the arm
// is then failed and nothing ran). Without CUDA the event pair throws "not compiled with CUDA".
template <class UntimedBefore, class Enqueue, class UntimedAfter>
double exec_cuda(benchmark::State& state, const Work& work, kernels::cuda::StreamRef stream,
                 UntimedBefore&& untimed_before, Enqueue&& enqueue, UntimedAfter&& untimed_after) {
  if (!timing_matches_declaration(state, Timing::kCudaEvents)) return 0;
  note_iteration_work(work_fields(work));
  kernels::cuda::EventSpan span;
  double measured_s = 0;
  for (auto _ : state) {
    untimed_before();
    region_begin();
    span.begin(stream);
    enqueue();
    span.end(stream);
    const double seconds = span.elapsed_s();
    region_end();
    record_iteration(state, seconds);
    measured_s += seconds;
    detail::call_after(untimed_after, seconds);
  }
  set_rate_counters(state, work, measured_s);
  return measured_s;
}

template <class Enqueue>
double exec_cuda(benchmark::State& state, const Work& work, kernels::cuda::StreamRef stream, Enqueue&& enqueue) {
  return exec_cuda(
      state, work, stream, [] {}, std::forward<Enqueue>(enqueue), [] {});
}

}  // namespace pairbench::bench
