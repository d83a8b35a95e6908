// What one iteration of an arm does, declared once, and the one place rates are derived from it:
// the arm says how many bytes, flop, elements, ops or other items an iteration covers; the
// framework's timed loops (exec.h) turn them and the measured time into the rate counters the
// run files carry (bytes_per_second, flop_per_second, elements_per_second, ns_per_op,
// <item>_per_second), with the names experiments have always used.
#pragma once

#include <benchmark/benchmark.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "bench/common/experiment.h"

namespace pairbench::bench {

// Work per iteration (per timed region). A zero field reports no counter.
struct Work {
  // Bytes as the experiment's bandwidth counts them: a copy of N bytes across a link is N; a
  // STREAM-like kernel counts what it reads plus what it writes (no write-allocate). Reported as
  // bytes_per_second.
  double bytes = 0;
  double flop = 0;      // floating-point operations (an FMA is 2): flop_per_second
  double elements = 0;  // array elements produced: elements_per_second
  double ops = 0;       // the experiment's unit operation: ns_per_op (time per op)
  // Other countables, each reported as "<name>_per_second": {"rows", n}, {"pixels", n}, {"ops", n}.
  std::vector<std::pair<std::string, double>> per_second;
};

// The declared work of one iteration, field by field (its non-zero counts: "bytes", "flop",
// "elements", "ops", and each per_second name): what the record's work_per_iteration carries, so
// that the harness can tell a benchmark whose iteration changed since it was calibrated.
std::map<std::string, double> work_fields(const Work& work);

// Every rate counter `work` yields after `iterations` iterations measured `seconds` in all.
// Empty when nothing was measured (no iterations, or a time that is not > 0).
std::map<std::string, double> rate_counters(const Work& work, double iterations, double seconds);
// Sets rate_counters(work, state.iterations(), measured_s) on the state: the one place arms'
// rates come from, for the framework's loops and for the arms that keep their own loop.
void set_rate_counters(benchmark::State& state, const Work& work, double measured_s);

// The timing mode the running arm's experiment declares at its grid point (Experiment::timing,
// resolved with timing_at). Set by the shared bench main before each arm runs.
void declare_timing(Timing declared);
// Clears it: arms run outside the bench main (tests) are not checked.
void forget_declared_timing();
// Whether the arm may time with `used`. When the experiment declares another mode, the arm is
// failed ("failed: ... timed with cuda_events but ... declares wall_clock") and false returned:
// a run file must say what was measured.
bool timing_matches_declaration(benchmark::State& state, Timing used);

}  // namespace pairbench::bench
