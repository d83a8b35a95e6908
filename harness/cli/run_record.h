// What `run`, `ab` and `selftest` share: the profile's sampling, a run file from one side's
// samples (laid out by store/run_file's writer), and the claims of a run file written before the
// harness judged them (`summarise`, `report`).
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "harness/analysis/run_document.h"
#include "harness/exec/catalogue.h"
#include "harness/exec/environment.h"
#include "harness/exec/runner.h"
#include "harness/store/run_file.h"
#include "harness/store/sample.h"
#include "harness/sampling/ab_runs.h"

namespace pairbench::harness {

// Profile defaults (processes per benchmark, in-process samples and their length, instruction
// processes, time limit), then overrides.
struct RunArgs {
  std::string profile = "quick", experiments, arms, out, bench_dir;
  std::string history = "results/history.sqlite";  // "" = do not record
  int repetitions = 0, batches = 0, instruction_processes = -1;
  double min_time_s = 0, timeout_s = 0;  // min_time_s: measured seconds per process
  // The time budget per benchmark (RunOptions::process_budget_s), seconds; -1 = the profile's
  // (nightly's; none where --repetitions or --instruction-processes forces a count).
  double process_budget_s = -1, instruction_budget_s = -1;
  // The whole run's processes, seconds (projected from this machine's cache; -1 = the profile's,
  // nightly kNightlyWallBudgetS; 0 = none): where the per-benchmark budgets project more, they are
  // lowered until it fits (fit_wall_budget).
  double wall_budget_s = -1;
  bool plan_only = false;  // --plan: print what would run and its projected wall, run nothing
  std::uint64_t seed = 0;
  std::string instruction_counter;   // perf | callgrind | none | "" = detect
  std::string calibration = "auto";  // the iteration cache: auto = results/calibration/<machine_key>.json
  bool recalibrate = false;
  std::string pairing = "duet";  // for two sides (ab): duet | sequential
  std::string process_sharing =
      "experiment";  // experiment: benchmarks that may share a process do (RunOptions::share_processes) | none
};
// The nightly profile's time budget per benchmark, seconds: of time processes, and of
// instruction-counting processes (RunOptions::process_budget_s, instruction_budget_s): what they
// cut on a machine is in docs/gate.md, "Time budget".
inline constexpr double kNightlyProcessBudgetS = 2;
inline constexpr double kNightlyInstructionBudgetS = 4;
// The nightly's whole run, seconds of processes (the 15-minute goal less a minute for calibration
// drift, the gate and the report): per-benchmark budgets alone do not fit every machine (docs/gate.md,
// "Time budget").
inline constexpr double kNightlyWallBudgetS = 840;

// `machine_key` names the calibration cache when args.calibration is "auto".
RunOptions run_options(const RunArgs& args, const std::string& machine_key = "");

}  // namespace pairbench::harness
