// The paired state of the until-decided loop (until_decided.h), for `pairbench ab`: two builds'
// processes in crossover blocks (A B B A, or duet pairs), each block one observation of the change,
// decided on block means by always-valid intervals with Holm over the gate (gate/sequential.h:
// valid at every look). The caller runs the rounds (it owns the builds); this decides which.
#pragma once

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "harness/gate/gate.h"
#include "harness/gate/sequential.h"
#include "harness/sampling/until_decided.h"

namespace pairbench::harness {

struct PairedPlan {
  double budget_s = 180;      // wall time of the whole ab, the planned processes included
  int step = 2;               // pairs per block: a benchmark sampled gets whole blocks
  int max_repetitions = 100;  // the cap of processes per benchmark and side
  GateOptions gate;           // threshold, alpha, correction, interval level
  // At most this many pairs per benchmark in one round (round_pairs): about the robust sequence's
  // blocks at Holm's strictest level over a quick ab's 128 benchmarks (20 blocks), so that a
  // benchmark the budget can carry to its decision gets there in a round or two (a suspect its part
  // left undecided goes first in the next: run_round).
  int round_cap = 40;
};

// One part of a round: `pairs` more processes per side (whole blocks) of each benchmark in `chosen`,
// as the two run files of that part (already appended to the whole ab's by the caller);
// `interrupted`: a signal cut it short. A round runs one part per number of pairs its benchmarks
// get (round_pairs), cheapest to decide first, so that a cheap benchmark that needs many blocks
// runs them back to back rather than one per pass of every benchmark the round samples.
struct PairedRound {
  nlohmann::json baseline, candidate;
  bool interrupted = false;
};
using RunPairedRound = std::function<PairedRound(const std::set<std::string>& chosen, int part, int pairs)>;

// After the planned processes (`baseline`, `candidate`): rounds of more pairs for the benchmarks
// still undecided, cheapest first, until each is decided, reaches the cap, or the budget since
// `start` is spent; then one line on the launch order's effect and one on what deciding the rest
// would cost. Returns the last look's decision.
SequentialDecision sample_pairs(const PairedPlan& plan, const nlohmann::json& baseline, const nlohmann::json& candidate,
                                const RunPairedRound& run_round, std::chrono::steady_clock::time_point start);

// The verdicts of the sampled benchmarks' time rows replaced by the sequential decision's (valid
// however often it looked); every other row (instructions, broken, missing, new) as compare_runs has it.
// `stage_level`: the interval level of each stage (TwoStage: half the miss rate each, 95 % where the
// gate's is 90 %), which the notes state, since the table's header gives the gate's.
void apply_sequential(GateReport& report, const SequentialDecision& d, double stage_level);

}  // namespace pairbench::harness
