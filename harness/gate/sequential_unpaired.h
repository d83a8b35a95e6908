// Sampling until decided against a fixed baseline (issue 23, `pairbench run --baseline --budget`):
// the decision asked for after every round of more processes of the current build, valid however
// often it looks. Unlike `ab` (sequential.h) there are no pairs: the baseline's processes were
// measured in another run and stay as they are (n_b of them); only the current side grows.
//
// Per benchmark, on the log process values (oriented so that + is worse), at a level a split as
// a_c = s a for the current side and a_b = (1 - s) a for the baseline (s = current_share):
//   - the current side's always-valid confidence sequence for its mean log value
//     (stats::always_valid_mean at a_c: Lai's t-mixture, the running intersection over every look);
//   - a fixed-sample t interval for the baseline's mean log value at a_b, its variance the
//     baseline's processes' (pooled with the benchmark's process variance from history where
//     known) plus twice the run-to-run variance from history where known (two runs' days;
//     Welch-Satterthwaite degrees of freedom, as the fixed gate);
//   - by the union bound both cover at every look at once with probability >= 1 - a, so
//     [cur_low - base_high, cur_high - base_low] covers the change at every look at once.
// The always-valid p-value for "slower" is the smallest a at which that interval excludes 0 from
// below (one-sided baseline bound; bisection over a). For a fixed a the current side's lower bound
// is a running maximum over the looks and the baseline's bound does not move, so the p-value only
// falls from look to look; claiming "slower" at p <= a is wrong with probability <= a. Holm (or
// BH) over every benchmark of the gate, then the verdicts of sequential.h: regression =
// significant after Holm and the interval (at interval_level) reaches +threshold; improvement the
// mirror image; unchanged = the interval inside +-threshold; else undecided. As in sequential.h,
// falling p-values make Holm at the last look reject whatever any earlier look rejected, so the
// whole-gate false-regression rate over every look together is at most alpha.
// docs/gate.md ("Sampling until decided against a baseline") gives the simulated figures.
#pragma once

#include <string>
#include <vector>

#include "harness/gate/gate.h"
#include "harness/gate/sequential.h"
#include "harness/stats/stats.h"

namespace pairbench::harness {

// One benchmark: the baseline's processes (fixed) and the current run's so far, in the order they
// ran (each prefix is a look; the order must not depend on the values).
struct UnpairedState {
  std::string benchmark;
  double threshold = 0.05;       // its relative threshold (the experiment's gate_threshold, else the gate's)
  std::vector<double> baseline;  // log process values, + = worse
  std::vector<double> current;   // log process values, + = worse, in the order they ran
  // Run-to-run variance of the log value (from history; < 0 unknown: taken as 0) and the runs it
  // came from (< 2: taken as exact).
  double run_variance = -1;
  int run_variance_runs = 0;
  // The benchmark's process variance pooled over its history on this machine, and its degrees of
  // freedom (GateOptions::process_variance_history; df 0: none): pooled with the baseline's own
  // processes for the baseline's interval, as the fixed gate does.
  double history_variance = 0, history_df = 0;
  double seconds = 0;  // wall time of the current side's processes so far
  // Appends a process value (finite, > 0; throws std::invalid_argument otherwise).
  void add_baseline(double value, bool lower_is_better = true);
  void add_current(double value, bool lower_is_better = true);
};

struct UnpairedDesign {
  double c2 = 1.0;             // the mixture's precision (SequentialDesign::c2)
  int max_processes = 30;      // the cap of the current side's processes per benchmark
  double current_share = 0.5;  // s: the share of every level given to the current side's sequence
  stats::MixtureSpec spec() const { return {c2, 0, 0}; }
};

// One look. Rows as sequential.h's: `pairs` is the current side's processes; `within_cap` false
// where no number of current processes up to the cap would decide it (notably where the
// baseline's interval alone is wider than the room left). Throws std::invalid_argument for a
// benchmark with fewer than 2 baseline processes or a non-finite value.
SequentialDecision decide_sequential_unpaired(const std::vector<UnpairedState>& states, const GateOptions& options,
                                              const UnpairedDesign& design = {});

// The smallest total level at which the combined interval excludes 0 from below (`worse`) or from
// above; 1 where none does. Exposed for the tests (monotone over looks).
double unpaired_p_value(const UnpairedState& s, bool worse, const UnpairedDesign& design = {});

// "no change beyond ±7.3 % at 90 % (30 processes against the baseline's 9, 41 s)".
std::string unpaired_resolution_text(const SequentialRow& row, int baseline_processes, double interval_level = 0.90);

}  // namespace pairbench::harness
