// A run's time budgets: the whole-run budget's fit and what a plan says (harness/exec/budget.h).
#include "harness/exec/budget.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace pairbench::harness {

WallFit fit_wall_budget(double process_budget_s, double instruction_budget_s, double wall_budget_s,
                        const std::function<double(double, double)>& projected) {
  WallFit fit{process_budget_s, instruction_budget_s, projected(process_budget_s, instruction_budget_s), false, true};
  if (wall_budget_s <= 0 || fit.projected_s <= wall_budget_s) return fit;
  // The largest budget in [kSmallestBudgetS, from] whose projection fits, the other held: the
  // projection falls as a budget falls (fewer processes, never more), so bisection finds it.
  auto largest_fitting = [&](double from, auto at) {
    if (at(kSmallestBudgetS) > wall_budget_s) return kSmallestBudgetS;
    double lo = kSmallestBudgetS, hi = from;
    while (hi - lo > 0.02 * hi) {
      const double mid = 0.5 * (lo + hi);
      (at(mid) <= wall_budget_s ? lo : hi) = mid;
    }
    return lo;
  };
  if (instruction_budget_s > 0) {
    fit.instruction_budget_s =
        largest_fitting(instruction_budget_s, [&](double b) { return projected(process_budget_s, b); });
  }
  if (process_budget_s > 0 && projected(process_budget_s, fit.instruction_budget_s) > wall_budget_s) {
    fit.process_budget_s =
        largest_fitting(process_budget_s, [&](double b) { return projected(b, fit.instruction_budget_s); });
  }
  fit.projected_s = projected(fit.process_budget_s, fit.instruction_budget_s);
  fit.fits = fit.projected_s <= wall_budget_s;
  fit.lowered = fit.process_budget_s != process_budget_s || fit.instruction_budget_s != instruction_budget_s;
  return fit;
}

WallFit fit_run_to_wall(const std::vector<ExperimentEntry>& experiments, const RunOptions& options, double wall_s) {
  return fit_wall_budget(options.process_budget_s, options.instruction_budget_s, wall_s, [&](double p, double i) {
    RunOptions at = options;
    at.process_budget_s = p, at.instruction_budget_s = i;
    return plan_run(experiments, at).projected_wall_s;
  });
}

std::string wall_fit_line(const WallFit& fit, double wall_s, const RunOptions& before) {
  char line[400];
  if (!fit.lowered) {
    std::snprintf(line, sizeof line, "wall budget %.0f s: the per-benchmark budgets fit (projected %.1f min)", wall_s,
                  fit.projected_s / 60);
  } else {
    std::snprintf(
        line, sizeof line,
        "wall budget %.0f s: per-benchmark budgets lowered from %g s and %g s to %.2g s of time processes and "
        "%.2g s of counting processes, projected %.1f min%s",
        wall_s, before.process_budget_s, before.instruction_budget_s, fit.process_budget_s, fit.instruction_budget_s,
        fit.projected_s / 60, fit.fits ? "" : " (over it even so: every benchmark at its minimum processes)");
  }
  return line;
}

namespace {

// "12.3 min" above two minutes, else "95 s".
std::string wall_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s >= 120 ? "%.1f min" : "%.0f s", s >= 120 ? s / 60 : s);
  return buf;
}

}  // namespace

// The budget's one line: what it cut, and the projection (against what the run took, where it ran).
std::string budget_line(const RunPlan& p, double took_s) {
  char line[400];
  std::snprintf(line, sizeof line,
                "time budget %.2g s of time processes per benchmark (at least %d), %.2g s of instruction processes (at "
                "least %d): %d of %zu benchmarks planned fewer processes than the profile's; projected %s for %zu "
                "processes",
                p.process_budget_s, p.min_repetitions, p.instruction_budget_s, p.min_instruction_processes, p.cut,
                p.benchmarks.size(), wall_text(p.projected_wall_s).c_str(), p.processes);
  std::string out = line;
  if (p.unknown > 0) out += " (" + std::to_string(p.unknown) + " benchmarks without a known process wall not counted)";
  if (took_s > 0) out += ", took " + wall_text(took_s) + " (calibration included)";
  return out;
}

// `run --plan`: the processes the run would plan from this machine's calibration cache, and their
// projected wall; nothing runs.
std::string plan_text(const RunPlan& p, const RunOptions& options) {
  std::ostringstream out;
  out << "pairbench run --profile " << options.profile << " --plan: from "
      << (options.calibration_path.empty() ? std::string("no calibration cache") : options.calibration_path)
      << "; nothing run\n";
  std::vector<const BenchmarkPlan*> cut;
  for (const BenchmarkPlan& b : p.benchmarks) {
    if (b.cut()) cut.push_back(&b);
  }
  const auto cost = [](const BenchmarkPlan* b) {
    return b->processes * b->process_wall_s + b->instruction_processes * b->instruction_wall_s;
  };
  std::sort(cut.begin(), cut.end(), [&](const auto* a, const auto* b) { return cost(a) > cost(b); });
  for (const BenchmarkPlan* b : cut) out << "  " << b->benchmark << ": " << b->reason << "\n";
  if (p.budgeted) {
    out << budget_line(p, 0) << "\n";
  } else {
    out << "no time budget: " << options.repetitions << " processes per benchmark; projected "
        << wall_text(p.projected_wall_s) << " for " << p.processes << " processes";
    if (p.unknown > 0) out << " (" << p.unknown << " benchmarks without a known process wall not counted)";
    out << "\n";
  }
  out << "calibration of benchmarks not in the cache, process start-up between processes and the machine's "
         "load are not in the projection\n";
  return out.str();
}

}  // namespace pairbench::harness
