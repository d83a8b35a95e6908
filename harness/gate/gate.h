// Comparing two runs benchmark by benchmark and deciding regressions (`pairbench compare`,
// `gate`, `ab`). Three outcomes: regression (exit 1), undecided (exit 4, or pass by policy) and
// pass. The decision procedure and why it was chosen are in docs/gate.md; in short, per
// benchmark and instrument:
//   time: one value per process (the median of its in-process samples), logs, a 20 % trimmed
//     mean per side (Yuen), the variance pooled with the benchmark's own process noise from
//     history where known, else moderated by an empirical-Bayes prior fitted over every
//     benchmark in the gate (limma), plus the run-to-run variance from history (Satterthwaite
//     degrees of freedom), a one-sided t test for "slower", Holm across every benchmark
//     compared (false regressions controlled for the whole gate), and a 90 % interval;
//     regression: significant and the interval reaches the threshold; unchanged: the interval
//     lies inside +-threshold; otherwise undecided, with why and what would decide it.
//     Duet runs of `ab` (both sides at once) are compared pair by pair.
//   instructions: counts are near-deterministic, so no test: unchanged / regression /
//     improvement by the threshold (1 % default), undecided when the processes of a side
//     disagree by more than half the threshold.
// compare_runs decides; the printers (harness/gate/print.h) only write what it decided.
#pragma once

#include <nlohmann/json.hpp>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "harness/gate/verdict.h"
#include "harness/stats/stats.h"

namespace pairbench::harness {

struct GateOptions {
  double threshold = 0.05;               // relative slowdown that counts (time); experiments may set their own
  double instructions_threshold = 0.01;  // relative increase in instructions per iteration that counts
  double alpha = 0.01;                   // whole-gate false-regression level (Holm) or FDR (BH)
  Correction correction = Correction::holm;
  double interval_level = 0.90;                       // of the change intervals: "unchanged" is two one-sided 5 % tests
  bool force = false;                                 // compare runs from different machines or builds anyway
  UndecidedPolicy undecided = UndecidedPolicy::fail;  // what an undecided gate exits with
  Moderation moderation = Moderation::eb;             // eb: quiet benchmarks exempt from the prior
  // Run-to-run variance of each benchmark's log value (what moves a whole run's level: the
  // machine's state that day), from this machine's history; two runs' difference carries it twice.
  // Not applied to the two halves of one `ab` run. Benchmarks absent: unknown, taken as 0.
  std::map<std::string, double> run_variance;
  // How many runs each estimate came from: its degrees of freedom are runs - 1, and the change's
  // degrees of freedom combine both variance parts (Welch-Satterthwaite). A benchmark absent here
  // has its run variance taken as exact.
  std::map<std::string, int> run_variance_runs;
  // Each benchmark's process-to-process variance of the log value within a run, pooled over the
  // same history (Yuen's scale, and its degrees of freedom): four processes cannot see that a
  // benchmark is bimodal across processes, thirty runs of them can. Where known, it is the prior
  // of that benchmark's variance in place of the gate-wide one. Not for `ab`'s duet pairs.
  std::map<std::string, std::pair<double, double>> process_variance_history;
  std::string run_variance_source;  // e.g. "results/history.sqlite, last 30 runs"
  double trim = 0.2;                // Yuen's trimming fraction per side
  // Between two runs (not `ab`'s halves of one run): a benchmark whose interval lies inside
  // +-max(threshold, resolution) is unchanged, where its resolution is the smallest change this
  // comparison can tell from its noise (process and run to run) at the gate's alpha
  // (docs/gate.md, "Resolution"). Regressions are decided as without it. Off: "unchanged" only
  // inside +-threshold, the rest undecided (before issue 24).
  bool resolution = true;
};

// One function's change in self instructions per iteration (callgrind's event Ir, callees not
// included), baseline against current: the median over each side's counting processes.
struct FunctionChange {
  std::string function;
  double baseline = 0, current = 0;
  // Not among that side's recorded top functions (in some process): the value is the least that
  // side did list, an upper bound of the function's own.
  bool baseline_bound = false, current_bound = false;
  double change() const { return current - baseline; }
};

// How many functions a regression or improvement lists: those that added (removed) the most.
inline constexpr int kFunctionDiffRows = 5;

struct BenchmarkVerdict {
  std::string benchmark, experiment, metric, unit, better;
  Instrument instrument = Instrument::time;
  int baseline_samples = 0, current_samples = 0;  // processes
  double baseline_median = 0, current_median = 0;
  // Relative change of current vs baseline, oriented so that + is worse (time up, throughput
  // down, more instructions), with its interval.
  double slowdown = 0, slowdown_low = 0, slowdown_high = 0;
  double t = 0, df = 0;                // moderated trimmed t and its degrees of freedom
  double se = 0;                       // standard error of the log change
  double p_value = 1, p_adjusted = 1;  // one-sided, for "slower"
  double noise_cv = 0;                 // process-to-process robust CV, the larger side
  double inprocess_cv = 0;             // median robust CV of the in-process samples, 0 when none
  double threshold = 0.05;
  bool paired = false;            // duet pairs compared pair by pair
  double run_noise = -1;          // run-to-run SD of the log value used, -1 = unknown
  bool run_noise_pooled = false;  // run_noise is the gate-wide estimate (no history of its own)
  // The smallest change this comparison can tell from its noise (relative; 0 = not computed) and
  // what "unchanged" was decided against: max(threshold, resolution) between two runs with
  // GateOptions::resolution, else the threshold.
  double resolution = 0, gated_at = 0;
  int processes_needed = 0;              // per side, for undecided rows: an estimate of what would decide it
  Verdict verdict = Verdict::undecided;  // every row is decided before compare_runs returns
  std::string note;
  // Regressions and improvements only (attach_function_diffs): where the instructions per iteration
  // changed, the functions that added (for an improvement: removed) the most, largest first, with
  // the benchmark's whole change in instructions per iteration; else why there is no such diff.
  std::vector<FunctionChange> functions;
  double functions_total_change = 0;
  std::string functions_note;
};

// A whole run that moved: most time rows, the machine's own yardsticks (the limits experiments)
// among them, changed in the same direction between two runs. That is the machine's state that
// day (another tenant, a slower host, a different clock), not the code: such a gate holds every
// regression (improvement) in the run's direction as undecided, a suspect for the nightly's
// confirmation on one runner (`pairbench confirm`), instead of deciding it. Not for `ab`, whose
// two sides run interleaved in one run. docs/gate.md, "A whole run that moved".
struct RunShift {
  bool moved = false;
  int rows = 0;             // time rows with both sides measured
  int with_median = 0;      // of those, how many changed in the median's direction
  double median = 0;        // median relative change (+ = worse) over those rows
  int limit_rows = 0;       // of those, rows of limits experiments (the machine's yardsticks)
  double limit_median = 0;  // their median relative change
  int held = 0;             // decided changes in the run's direction held undecided
  // "the whole run moved: median +M % over R time rows, W of them worse, the limits experiments +L %
  // (N rows): the machine, not necessarily the code; H regressions held undecided as suspects";
  // "" when it did not move.
  std::string text() const;
};

// The rule: at least kRunShiftMinRows time rows, at least kRunShiftMajority of them changed in
// the direction of their median, that median at least half the gate's threshold, and the limits
// experiments' rows (at least one) moved the same way by at least half of it. Without a limits
// row nothing says the machine moved, so nothing is held: a change to shared code or to the
// build's flags can slow every benchmark, and that is a regression.
inline constexpr int kRunShiftMinRows = 8;
inline constexpr double kRunShiftMajority = 0.75;
// `limit_experiments`: the experiments that measure the machine rather than the code.
RunShift detect_run_shift(const std::vector<BenchmarkVerdict>& rows, const std::set<std::string>& limit_experiments,
                          double threshold);

// Which run a side of the gate was: what `regressions record` needs to place a regression (its
// machine and commit range) from the gate's JSON alone. Empty strings where a run file lacks them.
struct GateRun {
  std::string run_id, machine_key, git_sha, started_at;  // pairbench.run_id, environment's key and SHA, start
};

struct GateReport {
  std::vector<BenchmarkVerdict> rows;
  GateRun baseline_run, current_run;
  std::vector<std::string> fingerprint_differences;  // "cpu_model: 'A' vs 'B'"
  bool forced = false;
  // Runs cut short by SIGINT/SIGTERM (`pairbench.interrupted`): "current run interrupted by
  // SIGINT after 5 of 40 processes". A partial run cannot pass: the gate is at best undecided.
  std::vector<std::string> partial_runs;
  GateOptions options;
  std::string baseline_label, current_label;
  // Each run's build: "<git sha>" or "<git sha>-dirty" (a tree with uncommitted changes), "" where
  // the run file does not say; the nightly's confirmation finds the baseline's binaries by it.
  std::string baseline_build, current_build;
  stats::VariancePrior prior;  // the time instrument's prior, over every time-following metric
  // The gate-wide run-to-run variance of the log value estimated from this comparison, for the
  // benchmarks without a history of their own; -1 where not estimated.
  double pooled_run_variance = -1;
  int pooled_run_benchmarks = 0;  // how many benchmarks it was estimated from
  RunShift run_shift;             // between two runs: whether the whole run moved (held rows say so)
  int count(Verdict verdict) const;
  bool failed() const;  // a row fails the gate (fails_gate)
  bool undecided() const { return count(Verdict::undecided) > 0 || !partial_runs.empty(); }
  GateOutcome outcome() const;
  // 0 pass; 1 regression or broken; 4 undecided under --undecided fail.
  int exit_status() const;
  // `N regressions, M undecided, K unchanged (+ I improvements, B broken, W new, X missing)`;
  // every output opens with it (defined with the printers' shared text, text.cpp).
  std::string headline() const;
  // ", 110 not gated here (resolution wider than +-25 % or no history of their own)"; "" when none.
  std::string not_gated_text() const;
};

inline constexpr int kGateExitUndecided = 4;

// Differences the run files' fingerprints do not show (`ab`'s two builds as their bench binaries
// report them) added to report.fingerprint_differences where not there yet, as a forced comparison's.
void list_differences(GateReport& report, const std::vector<std::string>& differences);

// Where report.run_shift says the whole run moved: every time row decided in the run's direction
// becomes undecided with that note, and run_shift.held counts them. compare_runs calls it; call it
// again after changing verdicts between two runs (`run --baseline --budget`'s sampling).
void hold_run_shift(GateReport& report);

// The run-to-run variance of a benchmark's log value from its history, one vector of process
// values per run: the variance of the runs' trimmed means beyond what their own process noise
// explains (method of moments, floored at 0). Needs 3 runs; returns -1 with fewer.
double run_level_variance(const std::vector<std::vector<double>>& runs);

// What a history says about one benchmark's noise, from one vector of process values per run.
struct HistoryNoise {
  double run_variance = -1;      // run_level_variance(); -1 with fewer than 3 runs
  int runs = 0;                  // runs with at least 2 processes
  double process_variance = -1;  // pooled within-run variance of the logs (Yuen's scale); -1 = unknown
  double process_df = 0;         // its degrees of freedom
};
HistoryNoise history_noise(const std::vector<std::vector<double>>& runs, double trim = 0.2);

// The resolution (docs/gate.md, "Resolution") a gate between two runs of `processes` processes
// each would have for a benchmark with this history, among `family` benchmarks: what the history
// export draws over time. -1 where the history cannot say (fewer than 3 runs).
double resolution_from_history(const HistoryNoise& h, int processes, int family, const GateOptions& options = {});

// Fills options.run_variance, run_variance_runs and process_variance_history for one benchmark.
void add_history_noise(GateOptions& options, const std::string& benchmark,
                       const std::vector<std::vector<double>>& runs);

// A row worth re-measuring on the same runner (the nightly's confirmation, docs/gate.md): a
// regression, an undecided row, or a time row unchanged only at a resolution wider than its
// threshold whose estimate is a slowdown beyond the threshold.
bool is_suspect(const BenchmarkVerdict& v);

// Gives every regression and improvement row its per-function diff of instructions per iteration
// from the two runs' callgrind breakdowns (pairbench.instructions[].functions), or the reason there
// is none (a time-only experiment, counted with perf, a run without counts, an older run file); clears
// it from every other row. compare_runs calls it; call it again after changing verdicts (`ab`'s and
// `run --budget`'s sampling until decided).
void attach_function_diffs(GateReport& report, const nlohmann::json& baseline, const nlohmann::json& current);

// A benchmark's relative threshold: its experiment's declared one (gate_threshold,
// instructions_gate_threshold; 0 = none declared), else the gate's. The one place this rule lives:
// the gate's rows and both until-decided samplings (harness/sampling/) take it from here.
double threshold_for(double declared, double gate_threshold);

// Per experiment declared in these run files (a later file's declaration wins): whether lower is
// better, and its time threshold by threshold_for.
struct ExperimentDirection {
  bool lower_is_better = true;
  double threshold = 0.05;
};
std::map<std::string, ExperimentDirection> experiment_directions(const std::vector<const nlohmann::json*>& run_files,
                                                                 double gate_threshold);

// Throws std::invalid_argument (exit 2) when fingerprints differ and !options.force, and for a
// metric value that is not finite and > 0 (naming the benchmark).
GateReport compare_runs(const nlohmann::json& baseline, const nlohmann::json& current, const GateOptions& options,
                        const std::string& baseline_label, const std::string& current_label);

}  // namespace pairbench::harness
