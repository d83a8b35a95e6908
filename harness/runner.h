// `pairbench run`: every arm of every grid point, in randomised interleaved order, each
// repetition in its own bench process, with a time limit per process and progress on stderr.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/catalogue.h"
#include "harness/summary.h"

namespace pairbench::harness {

struct RunOptions {
  std::string profile = "quick";
  int repetitions = 5;          // processes per benchmark
  double min_time_s = 0.05;     // Google Benchmark's --benchmark_min_time per process
  double timeout_s = 60;        // a process running longer is killed and reported failed
  std::uint64_t seed = 0;       // order shuffle; 0 = from the clock (recorded in the run file)
  bool progress_tty = false;    // one updating line instead of a line per process
};

struct RunOutcome {
  std::vector<Sample> samples;
  int failed_processes = 0;  // crashed, hung, incorrect or failed samples
  std::uint64_t seed = 0;
  double wall_s = 0;
};

RunOutcome run_experiments(const std::vector<ExperimentEntry>& experiments, const RunOptions& options);

// Several builds (or environments) in one run: every benchmark of every side, interleaved process
// by process in one randomised order, so drift over the run cannot read as a difference between
// sides. Samples carry their side's index. `extra_env` is added to every process of that side.
struct Side {
  std::string name;
  std::vector<ExperimentEntry> experiments;
  std::map<std::string, std::string> extra_env;
};
RunOutcome run_sides(const std::vector<Side>& sides, const RunOptions& options);

// Turns one bench process's Google Benchmark JSON into a sample for `benchmark`.
Sample sample_from_gbench(const nlohmann::json& gbench_output, const ExperimentEntry& e,
                          const BenchmarkEntry& b, int repetition);

}  // namespace pairbench::harness
