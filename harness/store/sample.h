// One benchmark process's result: the row of a run file. exec produces it (harness/exec/runner.h),
// the run file stores it and reads it back (harness/store/run_file.h), the summary and the gate
// read it. It sits in store, with the run file's one reader and writer, so that everything above
// can use it without reaching up.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/store/vocabulary.h"

namespace pairbench::harness {

// The placement a time process ran with (harness/exec/layout.h draws it; docs/gate.md, "Layout"):
// which relinked variant of its bench binary, how many bytes of environment padding moved its stack,
// and the seed its buffers' page offsets and heap shift were drawn from. Absent (`drawn` false) where
// the run did not randomise layout, and for calibration and instruction-counting processes.
struct ProcessLayout {
  bool drawn = false;
  int variant = 0;   // 0 = the plain binary; k = bench_<area>.layout<k>
  int variants = 1;  // how many the binary had to pick from
  int env_pad_bytes = 0;
  std::uint64_t seed = 0;  // PAIRBENCH_LAYOUT_SEED, below 2^53 so that JSON readers keep it exact
};

// Where a callgrind-counted process's instructions went: the functions with the most self
// instructions (callgrind's event Ir, callees not included) per iteration, most first, and the rest
// summed. Self, not inclusive: self costs add up to the process's count, and a change shows at the
// function whose own code runs more, not along every caller above it. perf has no such breakdown.
struct FunctionShare {
  std::string function;  // demangled, as valgrind names it
  double instructions_per_iteration = 0;
};
struct FunctionBreakdown {
  std::vector<FunctionShare> top;  // most first
  double other_per_iteration = 0;  // every function not in `top`
  int functions = 0;               // functions with any instructions, listed or not
};

struct Sample {
  std::string benchmark;  // canonical name
  std::string experiment, arm;
  int repetition = 0;
  Verification verification = Verification::not_run;  // set by whoever ran (or skipped) the process
  std::string reason;                                 // for anything but passed
  double metric_value = 0;                            // the experiment's deciding metric, when the sample has timing
  bool has_value = false;
  nlohmann::json gbench;  // Google Benchmark's entry for this run, when there is one
  double process_wall_s = 0;
  int side = 0;                              // which build/environment, for `pairbench ab` and `selftest`
  Instrument instrument = Instrument::time;  // time: the deciding metric | instructions: per iteration
  std::int64_t iterations = 0;               // fixed by calibration (0: Google Benchmark's ramp decided)
  // In-process samples of the metric: consecutive batches of the process's iterations, each
  // turned into the metric through its time relation. Empty where the metric does not follow time.
  std::vector<double> batches;
  double measured_s = 0;   // time inside the timed regions
  double loop_wall_s = 0;  // the timed loop's wall time, untimed parts inside it included
  // The declared work of one iteration as the bench recorded it (a JSON object, compact; "" where
  // the arm declared none): tells an iteration that changed since its calibration.
  std::string work_per_iteration;
  // The rest of the benchmark's own span: before its first timed region (inputs, buffers, handles,
  // tuning, the check before timing) and after its last timed iteration (the check after timing,
  // clean-up). process_wall_s less the three is the process's start and exit (its share of them).
  double setup_s = 0, after_s = 0;
  // The part of setup_s up to the arm's check against its reference (mark_verified): inputs,
  // buffers and the check. 0 where the benchmark marked none before timing.
  double verify_s = 0;
  // Minor page faults in set-up: the pages it made resident (-1: not recorded, an older bench).
  std::int64_t setup_faults = -1;
  // Verification passed without a check in this process: its arm's check was not due here and
  // other processes of the run checked it (bench experiment.h, check_due).
  bool checked_elsewhere = false;
  int pair = -1;                 // duet: the pair this process ran in, beside the other side's process
  bool duet_lead = false;        // duet: launched first of its pair (as launched, launch.cpp launch_units)
  bool duet_start_gate = false;  // duet: both processes of its pair started timing together (start gate)
  int cpu = -1;                  // the CPU it was pinned to (duet), -1 = not pinned; the first of `cpus`
  std::vector<int> cpus;         // every CPU it was pinned to: a duet side running several threads has several
  // A shared process (RunOptions::share_processes): its id in the run, how many benchmarks it ran
  // (this one included) and this one's place in its order (0 = first); -1, 0, -1 = a process of its own.
  int shared_process = -1, shared_benchmarks = 0, shared_position = -1;
  // A GPU benchmark's SM clock right after it ran, and what slowed it ("thermal (hardware)"; ""
  // = not throttled); 0 = not read (no driver, or not a GPU benchmark).
  unsigned gpu_sm_mhz = 0, gpu_sm_max_mhz = 0;
  std::string gpu_throttling;
  int sequence = -1;   // position in the run's launch order (time order)
  double start_s = 0;  // when it started, seconds after the timed rounds began
  ProcessLayout layout;
  std::optional<FunctionBreakdown> functions;  // instruction processes counted by callgrind
};

// The value of one process for the gate and the summary: the median of its in-process samples
// where it has at least 3, else its overall metric.
double process_value(const Sample& s);
// The same for a run file's `benchmarks[]` row (metric_batches, metric_value), as written.
double process_value(const nlohmann::json& benchmark_row);

}  // namespace pairbench::harness
