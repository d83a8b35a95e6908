// The experiment summary of a run: per experiment and grid point, each arm's median and
// verification, each treatment's ratio to the baseline with a confidence interval, and targets.
#pragma once

#include <nlohmann/json.hpp>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "harness/catalogue.h"

namespace pairbench::harness {

// One benchmark process's result.
struct Sample {
  std::string benchmark;  // canonical name
  std::string experiment, arm;
  int repetition = 0;
  // passed | incorrect | not_verified | not_supported | failed (CUTLASS profiler's vocabulary)
  std::string verification;
  std::string reason;       // for anything but passed
  double metric_value = 0;  // the experiment's deciding metric, when the sample has timing
  bool has_value = false;
  nlohmann::json gbench;    // Google Benchmark's entry for this run, when there is one
  double process_wall_s = 0;
  int side = 0;  // which build/environment, for `pairbench ab` and `selftest`
  std::string instrument = "time";  // time: the deciding metric | instructions: per iteration
  std::int64_t iterations = 0;      // fixed by calibration (0: Google Benchmark's ramp decided)
  // In-process samples of the metric: consecutive batches of the process's iterations, each
  // turned into the metric through its time relation. Empty where the metric does not follow time.
  std::vector<double> batches;
  double measured_s = 0;  // time inside the timed regions
  int pair = -1;          // duet: the pair this process ran in, beside the other side's process
  int cpu = -1;           // the CPU it was pinned to (duet), -1 = not pinned
  int sequence = -1;      // position in the run's launch order (time order)
  double start_s = 0;     // when it started, seconds after the timed rounds began
};

// The value of one process for the gate and the summary: the median of its in-process samples
// where it has at least 3, else its overall metric.
double process_value(const Sample& s);

// How far above its limit a median may be before the summary flags a measurement defect
// (`limit_defect`): 5 % on the medians, above a bandwidth median's run-to-run noise.
inline constexpr double kLimitDefectMargin = 0.05;

// Builds `pairbench.experiments` (shape in ARCHITECTURE.md). `confidence` for ratio intervals.
nlohmann::json summarise(const std::vector<ExperimentEntry>& experiments, const std::vector<Sample>& samples,
                         double confidence = 0.95);

// Prints the summary as a terminal table.
void print_summary(std::ostream& out, const nlohmann::json& summary);

// "1.23 us", "85.2 ns", "12.3 GB/s": a value in the metric's base unit, with an SI prefix.
std::string format_quantity(double value, const std::string& unit);

}  // namespace pairbench::harness
