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

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "harness/gate/gate.h"
#include "harness/stats/stats.h"

namespace pairbench::harness {

// One benchmark's pairs so far.
struct SequentialState {
  std::string benchmark;
  double threshold = 0.05;  // its relative threshold (the experiment's gate_threshold, else the gate's)
  // One per observation: log(current) - log(baseline), oriented so that + is worse; a pair's, or
  // a block's mean over its pairs (add_block).
  std::vector<double> diffs;
  // Processes per side behind `diffs` (0: one per diff, as where diffs are filled directly).
  int pairs = 0;
  double seconds = 0;  // wall time of its processes so far, both sides (for the report)
  // Appends one pair of process values (finite, > 0; throws std::invalid_argument otherwise).
  void add_pair(double baseline_value, double current_value, bool lower_is_better = true);
  // Appends one observation, the mean log difference of a block's pairs (baseline, current):
  // `ab`'s crossover blocks, two pairs back to back with the sides' cores or order exchanged
  // (plan.cpp, timed_units), whose mean cancels the machine's drift that both pairs saw. The
  // mean is symmetric about the change as each pair is, so the robust sequence stays valid; its
  // cap and the pairs it reports count processes per side.
  void add_block(const std::vector<std::pair<double, double>>& values, bool lower_is_better = true);
  int processes_per_side() const { return pairs > 0 ? pairs : static_cast<int>(diffs.size()); }
  // Duet blocks whose two pairs had the sides' launch order (and placement) exchanged: per block,
  // half the difference between the pair with the candidate launched first and the one with the
  // baseline first, oriented as `diffs` (+: the side launched first looks worse). The block mean
  // cancels it; where its mean is as large as a change about to be decided, the order effect, not
  // the code, may be what was measured, and the row is held (decide_sequential).
  std::vector<double> order_effects;
  // Per entry of order_effects: +1 where the side launched first had the pool's first cores, -1
  // where the other cores, 0 unknown. In a block the launch order goes with the cores, so each
  // entry is the order's effect plus or minus the cores' own difference; the mean of the two
  // strata's means cancels the cores' part (decide_sequential), which a core 15 % slower than the
  // other would otherwise put into the estimate with a random sign per block.
  std::vector<int> order_strata;
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
  int pairs = 0;       // processes per side used
  double seconds = 0;  // their wall time, both sides
  double threshold = 0.05;
  // Relative change (+ = worse) and its always-valid interval at GateOptions::interval_level;
  // low = -1 / high = +inf while no bound is reached.
  double change = 0, low = -1, high = 0;
  double p_worse = 1, p_better = 1;  // always-valid one-sided p-values
  double p_adjusted = 1;             // p_worse after Holm/BH over the gate
  // The resolution reached: no change beyond +-resolution at the interval level (relative;
  // infinite while the interval is unbounded).
  double resolution = 0;
  // An estimate of the pairs that would decide it at the present noise and change (0 when
  // decided; above SequentialDesign::max_pairs: not within the cap).
  int pairs_needed = 0;
  bool within_cap = true;  // decided, or pairs_needed <= max_pairs
  std::string note;        // why undecided, with the resolution text
  // The mean order effect over the blocks (relative; SequentialState::order_effects), 0 without them.
  double order_effect = 0;
  bool first_look = false;  // decided by the planned look's fixed-sample gate (TwoStage), not the sequence
  // How many standard errors its estimate lies from no change: its observations' variance moderated
  // toward the median row's (decide_sequential), so that two blocks cannot make a noisy row look
  // sure. It only orders the rounds' suspects (decidable_first); no verdict reads it.
  double standard_errors = 0;
};

struct SequentialDecision {
  std::vector<SequentialRow> rows;  // in the order of the states
  int count(Verdict v) const;
  bool failed() const { return count(Verdict::regression) > 0; }
  // Rows still worth sampling: undecided, within the cap, cheapest (fewest pairs still needed) first.
  std::vector<std::size_t> to_sample() const;
};

// Whether an undecided row's estimate lies beyond its threshold: a change, if it is one, that a
// user acts on, so the rounds sample it first (decidable_first) and look at it again as soon as
// its part of a round has run.
bool sampling_suspect(const SequentialRow& row);

// The next round of a sampling loop (ab's, run --budget's): of the rows marked `eligible`, fewest
// pairs still needed first, as many as `budget_s` buys at `cost[i]` seconds each (one that does
// not fit is passed over for a cheaper one after it). Indices into `rows`.
std::vector<std::size_t> affordable_cheapest_first(const std::vector<SequentialRow>& rows,
                                                   const std::vector<bool>& eligible, const std::vector<double>& cost,
                                                   double budget_s);

// The next round, concentrated where the budget can finish the job: of the eligible rows whose
// estimate is within the cap, the suspects first (an estimate beyond the row's threshold: what a
// user acts on if it is real, and what needs the most pairs, so that cheaper quiet rows would
// otherwise take the budget before it), most standard errors from no change first, then the rest,
// cheapest to *decide* first (the pairs each still needs, at least `step`, times its seconds per
// pair), as many as the remaining budget can carry to their estimate. Suspects go by their evidence,
// not their cost: a noisy row whose estimate passed its threshold by chance is cheap to sample
// and, cheapest first, stays first round after round while its estimate wanders, and a real
// change of a costlier benchmark waits behind it until the budget is gone; by evidence, sampling
// it shrinks its standard errors and it falls behind;
// each gets `step` pairs this round. Spreading `step` over every affordable row instead leaves
// each at a few pairs, where the always-valid interval decides nothing (ab of 128 benchmarks in
// 180 s: 8 decided). Where no row can be carried to its estimate, the breadth rule above.
std::vector<std::size_t> decidable_first(const std::vector<SequentialRow>& rows, const std::vector<bool>& eligible,
                                         const std::vector<double>& seconds_per_pair, double budget_s, int step,
                                         int max_pairs);

// How many pairs each of a round's `chosen` rows gets: what its estimate still needs
// (pairs_needed - pairs), in whole steps, at least `step` and at most `round_cap`, so that a row the
// budget can carry to a decision gets there in a round or two rather than `step` pairs a round, each
// round paying for the slowest row in it; then, while the round would cost more than `budget_s` at
// each row's seconds per pair, the last rows that got more than `step` give steps back. A row
// whose estimate lies beyond the cap gets `step`. Aligned with `chosen`.
std::vector<int> round_pairs(const std::vector<SequentialRow>& rows, const std::vector<std::size_t>& chosen,
                             const std::vector<double>& seconds_per_pair, double budget_s, int step, int round_cap,
                             int max_pairs);

// What deciding the rest would cost, so that an undecided ending says what budget would decide it:
// of the undecided rows, those whose estimate is within `max_pairs`, the pairs per side they still
// need (the estimate at their present noise) and those pairs' seconds at each row's measured cost;
// the others cannot be decided within the cap at their noise. (Where the planned processes alone
// take the budget, this is the figure that tells its user to pass --budget or compare fewer
// experiments.)
struct BudgetProjection {
  int undecided = 0;         // undecided rows
  int within_cap = 0;        // of which the estimate is within max_pairs
  long long more_pairs = 0;  // pairs per side those still need, summed
  double seconds = 0;        // their wall time at seconds_per_pair
};
BudgetProjection project_budget(const std::vector<SequentialRow>& rows, const std::vector<double>& seconds_per_pair,
                                int max_pairs);

// One look: every benchmark of the gate decided on its pairs so far, with options.alpha,
// correction and interval_level (throws std::invalid_argument for a non-finite difference).
SequentialDecision decide_sequential(const std::vector<SequentialState>& states, const GateOptions& options,
                                     const SequentialDesign& design = {});

// Two stages, alpha spent by Bonferroni (valid at every look by the union bound):
//   1. the planned look: the fixed-sample gate (compare_runs) on the planned processes, at
//      `first_share` of alpha and of the interval's miss rate (resolution off: +-threshold only);
//      it has looked once, so its fixed-sample error control holds;
//   2. every look after it: the always-valid sequence at the rest.
// A benchmark decided at the planned look keeps that verdict and is not sampled further; the
// whole-gate false regressions are at most first_share*alpha + (1-first_share)*alpha = alpha.
// Why: the robust sequence cannot bound a change on the 4 planned pairs, so without stage 1 every
// benchmark needed rounds; on a GPU, where a process costs 0.3 s of CUDA start-up, an ab of 44
// benchmarks spent its 180 s on calibration and the planned processes and decided none, though
// most had 0.1-2 % noise (results/reference/gpu-nvidia-h100).
struct TwoStage {
  GateOptions first_look;  // compare_runs' options at the planned look
  GateOptions sequence;    // decide_sequential's options at every later look
};
TwoStage split_two_stage(const GateOptions& options, double first_share = 0.5);

// The sequential decision with every time row the planned look decided in place of the sequence's
// row for that benchmark: `unchanged` always; a regression or improvement only where its processes
// are enough that the ranks alone could show it at the planned look's alpha (rank_can_decide: 5
// and 5 processes at alpha 0.005, never 4 and 4). A t statistic on 4 processes per side cannot tell a real change from a
// benchmark whose processes land in two layout modes and split by chance, 4 slow on one side and 4
// fast on the other (A/A, comm.allreduce/ring at 4096 elements: "-83 %"); such a row goes to the
// rounds, whose robust always-valid sequence needs more pairs.
void merge_first_look(SequentialDecision& d, const GateReport& first_look);

// The same rule for a fixed design that is not followed by rounds (`ab --budget 0`): a time row's
// regression or improvement on fewer processes than the ranks alone could show at the gate's
// alpha becomes undecided, its note saying why. Returns how many rows it held.
int hold_changes_ranks_cannot_show(GateReport& report);

// The p-values adjusted over the gate: Holm (family-wise) or Benjamini-Hochberg (false discoveries).
std::vector<double> adjust_p_values(const std::vector<double>& p, Correction correction);

// Infinity, for the unbounded intervals of the sequential decisions.
inline constexpr double kInf = std::numeric_limits<double>::infinity();

// Whether a one-sided rank test on n1 and n2 processes can reach `level` at all: its smallest
// p-value, complete separation, is 1 / C(n1 + n2, n1) (1/70 at 4 and 4).
bool rank_can_decide(int n1, int n2, double level);

// A row's verdict from its interval [low, high] of the log change, whether its adjusted p-values
// say slower or faster, and the log of its threshold (both sequential rules, paired and unpaired).
Verdict sequential_verdict(bool slower, bool faster, double low, double high, double log_threshold);
// The low end of what a variance estimated from n values may turn out to be (at the 10 % quantile
// of its chi-square, Wilson-Hilferty): a handful of processes says little about their noise.
double low_end_variance(double variance, int n);

// "no change beyond ±7.3 % at 90 % (30 processes per side, 41 s)"; while unbounded,
// "no bound on the change yet at 90 % (3 processes per side, 2 s)".
std::string resolution_text(const SequentialRow& row, double interval_level = 0.90);

}  // namespace pairbench::harness
