#include "harness/sampling/until_decided.h"

#include "harness/exec/calibration.h"
#include "harness/exec/interrupt.h"
#include "harness/exec/say.h"

namespace pairbench::harness {

int sample_until_decided(Rounds& rounds, double budget_s, std::chrono::steady_clock::time_point start) {
  int round = 0;
  while (budget_s > 0 && !interrupt_signal()) {
    const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::vector<std::string> chosen = rounds.choose(budget_s - spent);
    if (chosen.empty() || !rounds.run_round(chosen, ++round, spent, budget_s)) break;
    rounds.look();
  }
  return round;
}

void say_planned_look(const std::string& command, std::size_t processes, double projected_s, int unknown,
                      int benchmarks, double budget_s) {
  if (benchmarks > 0 && unknown >= benchmarks) {
    sayf(Verbosity::normal,
         "%s: the planned look (%zu processes): what it takes is not known yet, none of its %d benchmarks has run "
         "here (the planned look runs whole, so a first run here may pass the %.0f s budget, and the next one says "
         "what it will take)\n",
         command.c_str(), processes, benchmarks, budget_s);
    return;
  }
  const std::string more = unknown > 0
                               ? ", and more: " + std::to_string(unknown) + " of its " + std::to_string(benchmarks) +
                                     " benchmarks have not run here yet (not counted)"
                               : "";
  const int decimals = projected_s < 10 ? 1 : 0;
  if (projected_s > budget_s) {
    sayf(Verbosity::quiet,
         "%s: warning: the planned look (%zu processes) is projected to take %.*f s%s, past the %.0f s budget: it "
         "runs whole and no round follows it (a larger --budget, fewer --experiments or --repetitions)\n",
         command.c_str(), processes, decimals, projected_s, more.c_str(), budget_s);
  } else {
    sayf(Verbosity::normal, "%s: the planned look (%zu processes) is projected to take %.*f s of the %.0f s budget%s\n",
         command.c_str(), processes, decimals, projected_s, budget_s, more.c_str());
  }
}

int calibrate_first(const std::string& command, const std::vector<Side>& sides, RunOptions options, double budget_s) {
  if (options.calibration_path.empty()) return 0;  // calibrated for the run alone, inside it
  const CalibrationCache cache(options.calibration_path);
  std::size_t missing = 0, selected = 0;
  for (const BenchmarkPlan& b : plan_run(sides, options).benchmarks) {
    ++selected;
    if (options.recalibrate || (!cache.find(b.benchmark) && !cache.failure(b.benchmark))) ++missing;
  }
  if (missing == 0) return 0;
  sayf(Verbosity::normal,
       "%s: %zu of the %zu benchmarks have no calibration here: calibrating them first, outside the %.0f s budget "
       "(the budget starts when it ends)\n",
       command.c_str(), missing, selected, budget_s);
  const auto start = std::chrono::steady_clock::now();
  options.calibrate_only = true;
  run_sides(sides, options);
  sayf(Verbosity::normal, "%s: calibration took %.1f s; the %.0f s budget starts now\n", command.c_str(),
       std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), budget_s);
  return static_cast<int>(missing);
}

}  // namespace pairbench::harness
