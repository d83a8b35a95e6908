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

#include "harness/analysis/claims.h"
#include "harness/analysis/summary.h"
#include "harness/exec/catalogue.h"
#include "harness/exec/environment.h"
#include "harness/exec/runner.h"
#include "harness/store/run_file.h"
#include "harness/store/sample.h"

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
// instruction-counting processes (RunOptions::process_budget_s, instruction_budget_s). On the
// 2-vCPU VM (docs/gate.md, "Time budget"): a process over 0.22 s gets fewer than 9 processes, one
// over 0.5 s the minimum 4; a counting process over 1.3 s, 2 instead of 3.
inline constexpr double kNightlyProcessBudgetS = 2;
inline constexpr double kNightlyInstructionBudgetS = 4;
// The nightly's whole run, seconds of processes (the 15-minute goal less a minute for calibration
// drift, the gate and the report). At the budgets above the nightly projected 18.2 min on a 2-vCPU
// AMD EPYC Zen 3 VM (14.0 on a Zen 4 one): per-benchmark budgets alone do not fit every machine.
inline constexpr double kNightlyWallBudgetS = 840;

// The per-benchmark budgets lowered to fit a whole-run budget: the instruction budget first (counts
// follow the code, not the size: a costly point is then counted at its family's cheapest one), then
// the process budget, each to the largest value (within 2 %) whose projection fits; neither below
// the minimum that leaves every benchmark its minimum processes. `projected(process, instruction)`
// is the run's projected seconds at those budgets (plan_run); a budget of 0 (none) is left alone.
struct WallFit {
  double process_budget_s = 0, instruction_budget_s = 0;
  double projected_s = 0;
  bool lowered = false;  // a budget was lowered
  bool fits = true;      // the projection fits (false: even the minimums project more)
};
inline constexpr double kSmallestBudgetS = 1e-3;  // every benchmark at its minimum processes
WallFit fit_wall_budget(double process_budget_s, double instruction_budget_s, double wall_budget_s,
                        const std::function<double(double, double)>& projected);

// `machine_key` names the calibration cache when args.calibration is "auto".
RunOptions run_options(const RunArgs& args, const std::string& machine_key = "");

// A run file and the typed values its summary and claims were serialised from (once), which the
// terminal prints.
struct RunDocument {
  nlohmann::json doc;
  std::vector<ExperimentSummary> summary;
  std::vector<ClaimJudgement> claims;
};

// A run file from the samples of one side of a run: the experiment summary and the claims judged
// on it, laid out by run_document (store/run_file.h). With `calibration_limit` > 0 it also records
// the side's time per iteration against its calibration (`sampling.against_calibration`).
RunDocument build_run_document(const std::vector<ExperimentEntry>& experiments, const std::vector<Sample>& samples,
                               const RunOptions& options, const RunOutcome& outcome, const Environment& env,
                               const std::string& started, const std::string& command, int side = 0,
                               double calibration_limit = 0);
// build_run_document's run file alone.
nlohmann::json build_run_doc(const std::vector<ExperimentEntry>& experiments, const std::vector<Sample>& samples,
                             const RunOptions& options, const RunOutcome& outcome, const Environment& env,
                             const std::string& started, const std::string& command, int side = 0,
                             double calibration_limit = 0);

// Issue 23's rule: no benchmark's time per iteration in `ab` more than this many times its time
// alone (its calibration, which `run` uses). Above it, ab's regime, not the code, is measured.
inline constexpr double kAbCalibrationLimit = 1.5;

// One side's ratios against the calibration: the highest, and every one above `limit`, highest first.
RunRecord::CalibrationCheck calibration_check(const RunOutcome& outcome, int side, double limit);

// Both sides of an ab run as run files, marked as the two halves of one run (ab_run_id), and
// what the run's regime was: the benchmarks run one side at a time, each side against its calibration.
struct AbResult {
  nlohmann::json baseline, candidate;
  std::vector<SequentialInDuet> sequential_in_duet;
  std::vector<RunRecord::CalibrationCheck> against_calibration;  // per side
  std::vector<CalibrationRatio> ratios;  // every benchmark's, both sides: what the checks were made from
};
AbResult run_ab(const std::vector<Side>& sides, const std::vector<Environment>& envs, const RunOptions& options,
                const std::string& command);

// Appends a round's processes to the run file of its side: repetitions and duet pairs renumbered
// after those already there, so that every process keeps its own place and its pair.
void append_round(nlohmann::json& doc, const nlohmann::json& round);

// The benchmarks the planned duet processes showed out of their regime (regime_outliers), measured
// again one side at a time (`again`): their duet processes are dropped from both run files and
// replaced by `again`'s, they join sampling.sequential_in_duet, and each side's check against
// `run` (against_calibration, in the result and in the run file) is made again from the ratios,
// theirs from `again`.
void replace_processes(AbResult& r, const AbResult& again, const std::set<std::string>& names);

// The benchmarks that ran their two sides at once and of which either side's processes ran above
// the limit (and above their own runs' spread; calibration_check's `over`): the duet changed what
// they measure.
std::set<std::string> regime_outliers(const AbResult& r);

// Adds `pairbench.claims` to a run file written before the harness judged claims (true when it
// did): from its experiment summary read back (summary_from_json; errors name `source`), with the
// checks this build's bench binaries in `bench_dir` declare where the file carries none.
bool ensure_claims(nlohmann::json& doc, const std::string& source, const std::string& bench_dir);

}  // namespace pairbench::harness
