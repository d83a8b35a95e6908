// The self-test's studies that make runs (`pairbench selftest`): the same build's runs A1.. and a
// run Y of its planted sides, which gate_draws.h draws from; `ab` in both pairings with and without
// planted work (--pairing-study); whole runs at the profile's own plan gated pair by pair as the
// nightly gates (--nights). The command's face parses the options into a SelftestPlan.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/exec/catalogue.h"
#include "harness/exec/environment.h"
#include "harness/exec/runner.h"
#include "harness/gate/gate.h"

namespace pairbench::harness {

struct SelftestPlan {
  std::string profile = "quick", out;  // out: the result as JSON (optional)
  int baseline_runs = 4;               // runs of the same build (A1..)
  int instruction_processes = 2;       // per benchmark in those runs, at least 2
  int nights = 0;                      // --nights: this many runs
  std::uint64_t seed = 0;
  GateOptions gate;  // the gate's options as asked
};

// `ab` of a build against itself, and against itself with 5 % planted work, in both pairings:
// the noise of the comparison (median standard error of the log change), whole-gate A/A false
// regressions and the planted change's detection, per pairing.
int pairing_study(const SelftestPlan& plan, const std::vector<ExperimentEntry>& experiments, const RunOptions& profile,
                  const Environment& env);

// Runs A1..A<baseline_runs> of the same build, one after another as nights would be, then run Y:
// A' and the build with 5, 10 and 20 % planted, interleaved. Time: work worth L % of each region's
// time; instructions: L % of A1's count per iteration, as whole work loops of the known size.
// Returns 0, or the exit status of an interrupted run (kept, marked partial).
int measure_selftest_runs(const SelftestPlan& plan, const std::vector<ExperimentEntry>& experiments,
                          const RunOptions& profile, const Environment& env, const std::string& dir);

// --nights K: the gate as the nightly meets it, on whole runs rather than draws. K runs of the same
// build at the profile's own plan (its processes, time budget and counting cover, as `run
// --profile` does), then every pair of them gated as ci/nightly.sh gates a night: the earlier run
// as the baseline, the run-to-run noise from the history it would have (every run but the current
// one), unchanged at the larger of the threshold and the benchmark's resolution, --undecided fail.
// The gates share runs (K runs give K(K-1)/2 pairs), so they are not independent draws; each one is
// a complete nightly-shaped comparison of real processes.
int selftest_nights(const SelftestPlan& plan, const std::vector<ExperimentEntry>* experiments,
                    const RunOptions& profile, const Environment& env, const std::string& dir);

}  // namespace pairbench::harness
