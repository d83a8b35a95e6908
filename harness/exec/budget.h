// A run's time budgets beside its plan (runner.h, plan_run): the per-benchmark budgets lowered to
// fit a whole-run budget, and the lines that say what a plan holds and what its budget cut.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "harness/exec/catalogue.h"
#include "harness/exec/runner.h"

namespace pairbench::harness {

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

// fit_wall_budget for these experiments at these options' budgets (their projection: plan_run).
WallFit fit_run_to_wall(const std::vector<ExperimentEntry>& experiments, const RunOptions& options, double wall_s);
// What the fit did to the budgets `before` had: lowered them (to what, projected how long), or
// found that they fit.
std::string wall_fit_line(const WallFit& fit, double wall_s, const RunOptions& before);

// The budget's one line: what it cut, and the projection (against `took_s`, what the run took,
// where it ran; 0: not run).
std::string budget_line(const RunPlan& p, double took_s);
// `run --plan`: the processes the run would plan from this machine's calibration cache (the
// benchmarks the budget cut, costliest first) and their projected wall; nothing runs.
std::string plan_text(const RunPlan& p, const RunOptions& options);

}  // namespace pairbench::harness
