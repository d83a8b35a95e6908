// Sampling until decided (issue 23): the decision the `ab` loop asks for after every round of
// added processes, valid however often it looks and whenever it stops. Re-running the
// fixed-sample test (compare_runs) after every round and stopping when it is significant inflates
// false regressions; this decides on an always-valid confidence sequence instead.
//
// Per benchmark the state is one log difference per pair of processes (a duet pair, or in
// sequential pairing the baseline and candidate processes of one round), + = worse. Each look:
//   - the 90 % always-valid interval of the log change, the running intersection over every look
//     so far: by default robust (stats::always_valid_location: bets on clipped deviations, valid
//     for differences symmetric about the change), else the mean's (stats::always_valid_mean:
//     Lai's t-mixture, exact for normal differences at every noise level);
//   - always-valid one-sided p-values for "slower" and "faster" (1 / the highest capital, or
//     mixture, reached against a change of 0);
//   - Holm (or BH) over every benchmark of the gate, decided or not;
//   - regression: significant after Holm and the interval reaches +threshold; improvement: the
//     mirror image; unchanged: the interval lies inside +-threshold; else undecided.
// The always-valid p-values only fall from look to look and Holm rejects more when p-values fall,
// so whatever any look rejects the last look rejects too, and Holm at the last look controls the
// whole-gate false regressions at alpha: the control holds over every look together.
// docs/gate.md ("Sampling until decided") says why this procedure and gives its simulated figures.
#pragma once

#include <string>
#include <vector>

#include "harness/gate/gate.h"
#include "harness/stats/stats.h"

namespace pairbench::harness {

// One benchmark's pairs so far.
struct SequentialState {
  std::string benchmark;
  double threshold = 0.05;    // its relative threshold (the experiment's gate_threshold, else the gate's)
  std::vector<double> diffs;  // per pair: log(current) - log(baseline), oriented so that + is worse
  double seconds = 0;         // wall time of its processes so far, both sides (for the report)
  // Appends one pair of process values (finite, > 0; throws std::invalid_argument otherwise).
  void add_pair(double baseline_value, double current_value, bool lower_is_better = true);
};

// Which confidence sequence decides. robust (the default): stats::always_valid_location, a bet
// against each candidate change with every pair's deviation clipped at a few robust standard
// deviations of the pairs before it; valid when a pair's difference is symmetric about the change
// (two exchangeable sides), and not widened by a noisy neighbour's bursts. mean: the mean log
// change's Lai t-mixture (stats::always_valid_mean), exact for normal differences; kept for
// comparison (gate_simulation --sequence mean; docs/gate.md has both measured).
enum class SequenceKind { robust, mean };

// What stays fixed across the looks of one sampling.
struct SequentialDesign {
  // Precision of the mixing normal on the standardised effect (stats::MixtureSpec): 1 mixes over
  // changes about as large as one pair's noise; the interval is then tightest at 10 to 60 pairs
  // at the levels the gate uses (docs/gate.md).
  double c2 = 1.0;
  int max_pairs = 30;  // the cap per benchmark (processes per side); the robust sequence's bets are sized for it
  SequenceKind kind = SequenceKind::robust;
  stats::LocationSpec location;  // the robust sequence's clip and bets (target_n: max_pairs)
  // No variance prior: Lai's scale-invariant mixture is exact for every noise level. The gate's
  // empirical-Bayes prior, frozen at the first look, let a benchmark noisier than the rest cross
  // under repeated looks (docs/gate.md), so the sequential decision does not borrow it.
  stats::MixtureSpec spec() const { return {c2, 0, 0}; }
};

struct SequentialRow {
  std::string benchmark;
  Verdict verdict = Verdict::undecided;
  int pairs = 0;          // processes per side used
  double seconds = 0;     // their wall time, both sides
  double threshold = 0.05;
  // Relative change (+ = worse) and its always-valid interval at GateOptions::interval_level;
  // low = -1 / high = +inf while no bound is reached.
  double change = 0, low = -1, high = 0;
  double p_worse = 1, p_better = 1;        // always-valid one-sided p-values
  double p_adjusted = 1;                   // p_worse after Holm/BH over the gate
  // The resolution reached: no change beyond +-resolution at the interval level (relative;
  // infinite while the interval is unbounded).
  double resolution = 0;
  // An estimate of the pairs that would decide it at the present noise and change (0 when
  // decided; above SequentialDesign::max_pairs: not within the cap).
  int pairs_needed = 0;
  bool within_cap = true;  // decided, or pairs_needed <= max_pairs
  std::string note;        // why undecided, with the resolution text
};

struct SequentialDecision {
  std::vector<SequentialRow> rows;  // in the order of the states
  int count(Verdict v) const;
  bool failed() const { return count(Verdict::regression) > 0; }
  // Rows still worth sampling: undecided, within the cap, cheapest (fewest pairs still needed) first.
  std::vector<std::size_t> to_sample() const;
};

// The next round of a sampling loop (ab's, run --budget's): of the rows marked `eligible`, fewest
// pairs still needed first, as many as `budget_s` buys at `cost[i]` seconds each (one that does
// not fit is passed over for a cheaper one after it). Indices into `rows`.
std::vector<std::size_t> affordable_cheapest_first(const std::vector<SequentialRow>& rows,
                                                   const std::vector<bool>& eligible, const std::vector<double>& cost,
                                                   double budget_s);

// One look: every benchmark of the gate decided on its pairs so far, with options.alpha,
// correction and interval_level (throws std::invalid_argument for a non-finite difference).
SequentialDecision decide_sequential(const std::vector<SequentialState>& states, const GateOptions& options,
                                     const SequentialDesign& design = {});

// "no change beyond ±7.3 % at 90 % (30 processes per side, 41 s)"; while unbounded,
// "no bound on the change yet at 90 % (3 processes per side, 2 s)".
std::string resolution_text(const SequentialRow& row, double interval_level = 0.90);

}  // namespace pairbench::harness
