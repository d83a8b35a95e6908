// `ab`'s runs of two sides (docs/gate.md, "Duet pairing"): one run of both builds as two run
// files marked as halves of one run, its rounds appended in their own places, and the duet's
// regime: the probe before the processes that count, the second look at the planned ones, and
// what the run says of both.
#pragma once

#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "harness/analysis/run_document.h"
#include "harness/exec/calibration.h"
#include "harness/exec/environment.h"
#include "harness/exec/runner.h"
#include "harness/store/run_file.h"

namespace pairbench::harness {

// Issue 23's rule: no benchmark's time per iteration in `ab` more than this many times its time
// alone (its calibration, which `run` uses). Above it, ab's regime, not the code, is measured.
inline constexpr double kAbCalibrationLimit = 1.5;

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

// `sides` with only the benchmarks named.
std::vector<Side> only(const std::vector<Side>& sides, const std::set<std::string>& benchmarks);

// One line naming the benchmarks whose sides ran one at a time in the duet, and why; then every
// benchmark and side above the calibration limit (the rule that ab measures code, not its regime).
void report_regime(const AbResult& r, const std::vector<Side>& sides);

// What the regime probe still has to find out on this machine: of the benchmarks a duet pairs,
// those without a probe here younger than kDuetProbeDays (`to_probe`), and the regime the others
// were found in: apart (their sides one at a time, with why) or together.
struct DuetProbePlan {
  std::set<std::string> to_probe;
  std::map<std::string, std::string> known_apart;
  std::set<std::string> known_together;
};
DuetProbePlan plan_duet_probe(const std::set<std::string>& pairable, const CalibrationCache& cache, std::time_t now);
// The same for `ab`'s sides and options (the benchmarks a duet pairs, the machine's cache).
DuetProbePlan plan_duet_probe(const std::vector<Side>& sides, const RunOptions& options);

// Why the regime probe is skipped in an `ab --budget`, or "" to run it. `with_probe`: the planned
// look's plan with the probe's pairs (plan_run's `probed`), `probed` of them. Skipped where what it
// costs cannot be known (a benchmark has not run here) or the probe and the planned look would pass
// the budget together: the second look (recheck_regime) finds the same regime on the planned
// processes themselves, and its finding is kept as a probe's is.
std::string probe_skip_reason(const RunPlan& with_probe, std::size_t probed, double budget_s);

// The benchmarks whose two sides ran at once in `r` (a ratio on each side, not one side at a
// time): what the second look knows the regime of.
std::set<std::string> ran_together(const AbResult& r);

// One pair of every benchmark in duet before the processes that count, thrown away: a benchmark
// either side of which ran above the calibration limit (`run`'s time per iteration,
// kAbCalibrationLimit) with another process beside it shares something the declared threads do not
// say (two memory-bound processes, one memory bus): its sides then run one at a time, as `run`
// runs it. Returns those benchmarks with why (RunOptions::one_side_at_a_time). Only benchmarks that
// a duet run would pair are probed: one whose two sides need more cores than the pool has, or that
// uses the CUDA device, runs one side at a time whatever a probe showed (round_units_of).
// What a probe finds is kept in the machine's calibration cache (ProcessWalls::duet_probe) and
// taken by the next `ab` here for kDuetProbeDays instead of probing again (plan_duet_probe).
// `skip` (probe_skip_reason): the probe is not run, said with why; the known regimes still apply.
std::map<std::string, std::string> duet_regime_probe(const std::vector<Side>& all_sides,
                                                     const std::vector<Environment>& envs, RunOptions options,
                                                     const std::string& command_line, const std::string& skip = "");

// The second look at the regime, on the planned processes. The probe is one pair, and a short
// benchmark's two timed regions overlap only by chance (each side's set-up takes its own time), so
// a benchmark that slows beside the other side can pass it. Such a benchmark is measured again one
// side at a time, its duet processes dropped, so that the gate sees only processes of its own
// regime; the sampling rounds keep it one side at a time (`counted`). What it found of every
// benchmark that ran together is kept in the calibration cache as a probe's finding (apart for
// those measured again, together for the rest), so the next ab here need not probe them.
void recheck_regime(AbResult& r, const std::vector<Side>& sides, const std::vector<Environment>& envs,
                    RunOptions& counted, const std::string& command_line);

}  // namespace pairbench::harness
