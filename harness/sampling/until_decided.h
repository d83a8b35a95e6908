// The one until-decided loop (docs/gate.md, "Sampling until decided"), for `ab` (paired: two
// builds, A B B A blocks; paired.h) and `run --baseline` (unpaired: this build against a fixed
// baseline; unpaired.h). After the planned processes, rounds of more processes for the benchmarks
// still undecided, cheapest to decide first, until each is decided or at its cap, the budget is
// spent or a signal came. A round cut short by a signal is kept and not looked at.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "harness/exec/runner.h"
#include "harness/gate/sequential.h"

namespace pairbench::harness {

// What differs between the paired and the unpaired sampling: how a round is chosen, run and looked at.
class Rounds {
 public:
  virtual ~Rounds() = default;
  // The benchmarks the next round samples within `remaining_s` (empty: nothing left to do).
  virtual std::vector<std::string> choose(double remaining_s) const = 0;
  // Runs round `round` (from 1) over `chosen`, `spent_s` of `budget_s` gone; false when a signal
  // cut it short.
  virtual bool run_round(const std::vector<std::string>& chosen, int round, double spent_s, double budget_s) = 0;
  // Decides again on everything measured so far (every look valid: always-valid intervals).
  virtual void look() = 0;
  virtual const SequentialDecision& decision() const = 0;
};

// Runs rounds until one of the stops above (the budget counts from `start`: the planned processes
// are in it); returns how many rounds ran.
int sample_until_decided(Rounds& rounds, double budget_s, std::chrono::steady_clock::time_point start);

// Said before the planned processes start, since the budget counts them and their calibration:
// what they are projected to take here (`projected_s`, from this machine's calibration cache), where
// `unknown` of its `benchmarks` have not run here yet and are not counted in it, at the normal level,
// or as a warning where that alone overruns `budget_s`. `command` names the caller ("ab", "run").
void say_planned_look(const std::string& command, std::size_t processes, double projected_s, int unknown,
                      int benchmarks, double budget_s);

// Before a budget's clock starts (`ab --budget`, `run --baseline --budget`): the selected
// benchmarks this machine's calibration cache has neither a calibration nor a failure for are
// calibrated (RunOptions::calibrate_only), said before it starts (how many, and that it is outside
// the budget) and when it ends (what it took), so that a budget is the wall of the processes that
// measure. Returns how many were missing (0: nothing run, nothing said; also without a cache to keep
// the calibration in, which the run then makes inside itself). `command` as above.
int calibrate_first(const std::string& command, const std::vector<Side>& sides, RunOptions options, double budget_s);

}  // namespace pairbench::harness
