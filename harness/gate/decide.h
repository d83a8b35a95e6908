// The steps of compare_runs (gate.cpp), for the gate's own files only: what the gate reads from a
// run file (read_runs.cpp), and the deciding of each instrument's rows (decide_time.cpp,
// decide_instructions.cpp).
#pragma once

#include <nlohmann/json.hpp>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "harness/gate/gate.h"

namespace pairbench::harness::gate_detail {

// One counting process's function breakdown (callgrind's; pairbench.instructions[].functions).
struct ProcessFunctions {
  std::map<std::string, double> per_iteration;  // the functions it listed
  double floor = 0;  // what a function it did not list had at most: its least listed (0 when it listed all)
};

// One side of one benchmark: a value per process (and its in-process samples).
struct Side {
  std::string experiment;
  std::set<std::int64_t> iterations;         // fixed iteration counts of its processes
  std::vector<double> values;                // process values
  std::vector<std::vector<double>> batches;  // in-process samples, per process (may be empty)
  std::vector<int> pairs;                    // duet pair ids, -1 where none
  std::vector<ProcessFunctions> functions;   // instruction sides: each process that recorded its functions
};
using Sides = std::map<std::string, Side>;  // by benchmark name

struct ExperimentInfo {
  std::string metric, unit, better, time_relation = "proportional";
  double threshold = 0, instructions_threshold = 0;  // 0: the gate's own
  bool is_limit = false;  // kind "limit": it measures the machine (limits.*), not code under test
};
using Experiments = std::map<std::string, ExperimentInfo>;  // by experiment name

// Each throws std::invalid_argument naming the benchmark for a value that is not finite and > 0.
Sides time_sides(const nlohmann::json& doc);         // `benchmarks`, one entry per process
Sides instruction_sides(const nlohmann::json& doc);  // `pairbench.instructions`, one per counting process
// Both runs' declarations; where both declare an experiment, the current run's wins.
Experiments experiments_of(const nlohmann::json& baseline, const nlohmann::json& current);
// Benchmarks of `instrument` that stopped working (failed or incorrect, pairbench.not_run): why.
std::map<std::string, std::string> broken_in(const nlohmann::json& doc, Instrument instrument);
// Benchmarks of `instrument` the run chose not to measure (not_supported, pairbench.not_run): why.
std::map<std::string, std::string> not_measured_in(const nlohmann::json& doc, Instrument instrument);
// "current run interrupted by SIGINT after 5 of 40 processes", for each run cut short.
std::vector<std::string> partial_runs(const nlohmann::json& baseline, const nlohmann::json& current);
// Whether the two runs are the halves of one `ab` run, where duet pairs mean something.
bool same_ab_run(const nlohmann::json& baseline, const nlohmann::json& current);

// A benchmark in both runs, to be decided: its row in the report and its two sides.
struct Matched {
  std::size_t row;
  const Side* base;
  const Side* cur;
};

// Time rows: the moderated trimmed t, Holm or BH across `matched`, the interval against the threshold.
void decide_time_rows(GateReport& report, const std::vector<Matched>& matched, const Experiments& info, bool try_pairs);
// Instruction rows: the threshold rule on near-deterministic counts.
void decide_instruction_rows(GateReport& report, const std::vector<Matched>& matched);

}  // namespace pairbench::harness::gate_detail
