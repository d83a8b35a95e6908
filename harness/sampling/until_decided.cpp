#include "harness/sampling/until_decided.h"

#include "harness/exec/interrupt.h"

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

}  // namespace pairbench::harness
