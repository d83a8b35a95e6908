// The experiment summary of a run: per experiment and grid point, each arm's median and
// verification, each treatment's ratio to the baseline with a confidence interval, and targets.
#pragma once

#include <nlohmann/json.hpp>
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
};

// Builds `pairbench.experiments` (shape in ARCHITECTURE.md). `confidence` for ratio intervals.
nlohmann::json summarise(const std::vector<ExperimentEntry>& experiments, const std::vector<Sample>& samples,
                         double confidence = 0.95);

// Prints the summary as a terminal table.
void print_summary(std::ostream& out, const nlohmann::json& summary);

// "1.23 us", "85.2 ns", "12.3 GB/s": a value in the metric's base unit, with an SI prefix.
std::string format_quantity(double value, const std::string& unit);

}  // namespace pairbench::harness
