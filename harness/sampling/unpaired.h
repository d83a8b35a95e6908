// The unpaired state of the until-decided loop (until_decided.h), for `pairbench run --baseline F
// --budget S`: after the planned processes, rounds of more processes of this build for the time
// benchmarks still undecided against the fixed baseline, cheapest first, within the budget and the
// cap, each look decided by always-valid intervals (gate/sequential_unpaired.h); then the gate's
// table with those verdicts.
#pragma once

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/exec/catalogue.h"
#include "harness/exec/runner.h"
#include "harness/gate/gate.h"
#include "harness/gate/sequential_unpaired.h"
#include "harness/sampling/until_decided.h"

namespace pairbench::harness {

struct UntilDecided {
  const nlohmann::json* baseline = nullptr;  // the baseline's run file
  double budget_s = 0;                       // wall time for the whole run, planned processes included
  int max_repetitions = 30;                  // the cap of processes per benchmark
  int step = 2;                              // processes added per round to each benchmark sampled
  GateOptions options;                       // threshold, alpha, correction, interval level, run variance
};

// One look's states: every benchmark with time processes in both (its experiment's direction and
// threshold; the current side's values in repetition order), run variance from options.
std::vector<UnpairedState> unpaired_states(const nlohmann::json& baseline, const nlohmann::json& current,
                                           const GateOptions& options);

// Adds a round's outcome to the run's: its samples renumbered after those already there (each
// process keeps its own repetition index and launch sequence), its counts and wall time added.
void merge_round(RunOutcome& run, const RunOutcome& round);

// The benchmarks to sample next: undecided, below the cap, fewest processes still needed first, as
// many as the remaining budget buys at `step` more processes each (a process's cost: its
// benchmark's mean so far).
std::vector<std::string> next_round(const SequentialDecision& d, const std::vector<UnpairedState>& states, int step,
                                    double remaining_s, int cap);

// `experiments` with only the benchmarks named.
std::vector<ExperimentEntry> only(const std::vector<ExperimentEntry>& experiments,
                                  const std::vector<std::string>& names);

// The sampling against the baseline: `look(outcome)` builds the current run file from the outcome
// so far; the loop's rounds run with `options` (step processes each, fewer where the cap is near,
// no instruction processes), each kept in `outcome`. Returns the last look's decision and the
// rounds run.
struct Sampled {
  SequentialDecision decision;
  std::vector<UnpairedState> states;
  int rounds = 0;
  int added_processes = 0;
  double stage_level = 0.95;  // each stage's interval level (TwoStage): what the notes state
};
Sampled sample_against_baseline(const UntilDecided& plan, const std::vector<ExperimentEntry>& experiments,
                                RunOptions options, RunOutcome& outcome,
                                const std::function<nlohmann::json(const RunOutcome&)>& look,
                                std::chrono::steady_clock::time_point start);

// The sampled benchmarks' time rows with the always-valid decision's verdicts and notes; every
// other row (instructions, broken, missing, new) as compare_runs has it.
void apply_unpaired(GateReport& report, const Sampled& sampled);

// What the run file records of the sampling (pairbench.sampling.until_decided).
nlohmann::json until_decided_json(const UntilDecided& plan, const Sampled& sampled, const std::string& baseline_label);

}  // namespace pairbench::harness
