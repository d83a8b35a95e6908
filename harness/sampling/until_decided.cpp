#include "harness/sampling/until_decided.h"

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

void say_planned_look(const std::string& command, std::size_t processes, double projected_s, int to_calibrate,
                      double budget_s) {
  const std::string calibration = to_calibrate > 0
                                      ? ", after calibrating " + std::to_string(to_calibrate) + " benchmark" +
                                            (to_calibrate == 1 ? "" : "s") + " not yet in this machine's cache"
                                      : "";
  if (projected_s > budget_s) {
    sayf(Verbosity::quiet,
         "%s: warning: the planned look (%zu processes) is projected to take %.0f s%s, past the %.0f s budget: it runs "
         "whole and no round follows it (a larger --budget, fewer --experiments or --repetitions)\n",
         command.c_str(), processes, projected_s, calibration.c_str(), budget_s);
  } else {
    sayf(Verbosity::normal, "%s: the planned look (%zu processes) is projected to take %.0f s%s of the %.0f s budget\n",
         command.c_str(), processes, projected_s, calibration.c_str(), budget_s);
  }
}

}  // namespace pairbench::harness
