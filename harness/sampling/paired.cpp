// `ab`'s sampling until decided (paired.h).
#include "harness/sampling/paired.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "harness/exec/say.h"
#include "harness/store/sample.h"

namespace pairbench::harness {
namespace {

// Adds one round's pairs (a duet pair, else the two sides' processes of the same repetition) to
// each benchmark's sequential state, oriented by its experiment's direction (+ = worse).
void add_round(std::map<std::string, SequentialState>& states, const nlohmann::json& base, const nlohmann::json& cand,
               const GateOptions& options) {
  const auto direction = experiment_directions({&cand}, options.threshold);  // experiment -> lower is better, threshold
  std::map<std::string, std::string> experiment_of;                          // benchmark -> experiment
  for (const auto& c : cand["benchmarks"]) experiment_of[c["name"]] = c.value("experiment", "");
  auto key = [](const nlohmann::json& b) {
    return b.contains("duet_pair") ? "p" + std::to_string(b["duet_pair"].get<int>())
                                   : "r" + std::to_string(b.value("repetition_index", 0));
  };
  std::map<std::string, std::map<std::string, const nlohmann::json*>> baseline_rows;
  for (const auto& b : base["benchmarks"]) baseline_rows[b["name"]][key(b)] = &b;
  // Per benchmark, its pairs by crossover block (repetitions 2j and 2j + 1 ran back to back with
  // the sides exchanged: exec/plan.cpp, timed_units), each block one observation, their mean.
  std::map<std::string, std::map<int, std::vector<std::pair<double, double>>>> blocks;
  // Per benchmark and block, each duet pair's log change with whether the candidate was launched
  // first (exec/launch.cpp: exchanged between the block's two pairs), for the order-effect guard.
  struct Lead {
    double log_change;
    bool candidate_first;
    bool lead_on_lower_cpu;  // the process launched first had the lower-numbered of the pair's CPUs
  };
  std::map<std::string, std::map<int, std::vector<Lead>>> leads;
  for (const auto& c : cand["benchmarks"]) {
    const auto rows = baseline_rows.find(c["name"]);
    if (rows == baseline_rows.end()) continue;
    const auto b = rows->second.find(key(c));
    if (b == rows->second.end()) continue;
    SequentialState& s = states[c["name"]];
    s.benchmark = c["name"];
    const auto declared = direction.find(c.value("experiment", ""));
    s.threshold = declared != direction.end() ? declared->second.threshold : options.threshold;
    const int block = c.value("repetition_index", 0) / 2;
    blocks[c["name"]][block].emplace_back(process_value(*b->second), process_value(c));
    if (c.contains("duet_lead") && b->second->contains("duet_lead") &&
        c["duet_lead"].get<bool>() != (*b->second)["duet_lead"].get<bool>()) {
      const bool candidate_first = c["duet_lead"].get<bool>();
      const int candidate_cpu = c.value("cpu", -1), baseline_cpu = b->second->value("cpu", -1);
      leads[c["name"]][block].push_back({std::log(process_value(c) / process_value(*b->second)), candidate_first,
                                         candidate_first == (candidate_cpu < baseline_cpu)});
    }
    s.seconds += b->second->value("process_wall_s", 0.0) + c.value("process_wall_s", 0.0);
  }
  for (const auto& [name, by_block] : blocks) {
    SequentialState& s = states[name];
    const auto declared = direction.find(experiment_of.at(name));
    const bool lower_is_better = declared == direction.end() || declared->second.lower_is_better;
    for (const auto& [block, values] : by_block) {
      s.add_block(values, lower_is_better);
      const auto& pairs = leads[name][block];
      if (pairs.size() == 2 && pairs[0].candidate_first != pairs[1].candidate_first) {
        const Lead& cand = pairs[0].candidate_first ? pairs[0] : pairs[1];
        const Lead& base = pairs[0].candidate_first ? pairs[1] : pairs[0];
        const double e = (cand.log_change - base.log_change) / 2;
        s.order_effects.push_back(lower_is_better ? e : -e);
        // The same in both pairs of a block (the order goes with the cores), else unknown.
        s.order_strata.push_back(cand.lead_on_lower_cpu == base.lead_on_lower_cpu ? (cand.lead_on_lower_cpu ? 1 : -1)
                                                                                  : 0);
      }
    }
  }
}

// The paired state: both sides' processes so far, block by block.
class PairedRounds final : public Rounds {
 public:
  PairedRounds(const PairedPlan& plan, const nlohmann::json& baseline, const nlohmann::json& candidate,
               const RunPairedRound& run_round)
      : plan_(plan),
        run_round_(run_round),
        stages_(split_two_stage(plan.gate)),
        duet_(baseline["pairbench"]["sampling"].value("pairing", "") == "duet") {
    add_round(by_name_, baseline, candidate, plan_.gate);
    note_apart(candidate);
    note_alone(baseline, candidate);
    // Stage 1 (sequential.h, TwoStage): the planned processes decided by the fixed-sample gate at
    // half of alpha, once; stage 2: the always-valid sequence at the other half on every later look.
    GateOptions first_options = stages_.first_look;
    first_options.force = true;  // two builds differ by design
    first_look_ = compare_runs(baseline, candidate, first_options, "baseline", "candidate");
    look();
  }

  // The benchmarks to sample next, suspects first (most evidence first), then cheapest to decide,
  // as many as the remaining budget buys, and how many pairs each gets this round (round_pairs:
  // what its estimate still needs, at most round_cap). Every undecided benchmark below the cap is
  // eligible (only where `step` more stay within it: the cap is a maximum, never passed). The
  // budget goes first to those it can carry to their estimate of the pairs they need
  // (decidable_first); where it can carry none, a few more pairs to every affordable one (at a few
  // pairs the always-valid interval is wide and the estimate pessimistic, and more pairs narrow
  // both).
  std::vector<std::string> choose(double remaining_s) const override {
    std::vector<bool> eligible;
    for (const SequentialRow& row : decision_.rows) {
      eligible.push_back(row.verdict == Verdict::undecided && row.pairs + plan_.step <= plan_.max_repetitions);
    }
    // What a pair costs in a round: its processes' walls, times what the parts so far took over that.
    std::vector<double> cost = per_pair_;
    for (double& c : cost) c *= overrun_;
    const std::vector<std::size_t> picked =
        decidable_first(decision_.rows, eligible, cost, remaining_s, plan_.step, plan_.max_repetitions);
    const std::vector<int> pairs =
        round_pairs(decision_.rows, picked, cost, remaining_s, plan_.step, plan_.round_cap, plan_.max_repetitions);
    std::vector<std::string> chosen;
    pairs_.clear();
    for (std::size_t k = 0; k < picked.size(); ++k) {
      chosen.push_back(states_[picked[k]].benchmark);
      // Its cost so far is a share of processes it shared with other benchmarks, which paid their
      // start and common set-up for it; alone in a round it pays them itself (a benchmark with a
      // large input: 10-20x its share). One block first, to learn what it costs alone.
      pairs_[chosen.back()] = alone_.count(chosen.back()) ? pairs[k] : std::min(pairs[k], plan_.step);
    }
    return chosen;
  }

  // The round in parts, in the order its benchmarks were chosen (decidable_first's), a
  // part for each run of them that gets the same number of pairs (round_pairs): each part runs its
  // benchmarks' blocks back to back, so that a cheap benchmark that needs 20 blocks is not held to
  // one block per pass of every benchmark the round samples, each pass paying every process start
  // again. Before each part the budget is checked and the part's pairs cut to what the rest of it
  // buys at the benchmarks' seconds per pair, times what the parts so far took over their estimate
  // (overrun_); the sequence is valid whenever it stops, so a round cut short there is looked at as
  // any other. A round also ends after a part that held a suspect: the estimate of the pairs a
  // change needs is a floor, so a suspect its part left undecided is looked at again and, still
  // undecided, goes first in the next round instead of after every cheaper part of this one.
  bool run_round(const std::vector<std::string>& chosen, int round, double spent_s, double budget_s) override {
    int most = plan_.step, more_than_one = 0;
    std::vector<std::pair<int, std::vector<std::string>>> parts;  // pairs, benchmarks; first chosen first
    for (const std::string& name : chosen) {
      const int pairs = pairs_.at(name);
      most = std::max(most, pairs);
      more_than_one += pairs > plan_.step;
      if (parts.empty() || parts.back().first != pairs) parts.push_back({pairs, {}});
      parts.back().second.push_back(name);
    }
    say() << "ab: round " << round << ": " << decision_.count(Verdict::undecided) << " undecided, sampling "
          << chosen.size() << " (suspects by evidence, then cheapest first), " << plan_.step
          << " more processes per side"
          << (more_than_one ? ", up to " + std::to_string(most) + " for the " + std::to_string(more_than_one) +
                                  " nearest a decision"
                            : std::string())
          << "; " << static_cast<int>(spent_s) << " s of " << static_cast<int>(budget_s) << " s\n";
    std::set<std::string> suspects;
    for (std::size_t i = 0; i < states_.size(); ++i) {
      const SequentialRow& row = decision_.rows[i];
      if (row.verdict != Verdict::undecided || !sampling_suspect(row)) continue;
      suspects.insert(states_[i].benchmark);
      // Why the round goes where it goes: each suspect's estimate and evidence (decidable_first).
      sayf(Verbosity::verbose, "ab: round %d suspect %s: %+.1f %% at %d per side, %.1f standard errors%s\n", round,
           row.benchmark.c_str(), 100 * row.change, row.pairs, row.standard_errors,
           pairs_.count(row.benchmark) ? ", sampled"
                                       : ", not in this round (its estimate beyond the cap or the budget)");
    }
    const auto round_start = std::chrono::steady_clock::now();
    for (std::size_t k = 0; k < parts.size(); ++k) {
      const double left =
          budget_s - spent_s - std::chrono::duration<double>(std::chrono::steady_clock::now() - round_start).count();
      double per_pair = 0;  // the part's seconds per pair, all its benchmarks, as their processes said
      for (const std::string& name : parts[k].second) per_pair += seconds_per_pair(name);
      int pairs = parts[k].first;
      while (pairs > plan_.step && pairs * per_pair * overrun_ > left) pairs -= plan_.step;
      if (k > 0 && (left <= 0 || pairs * per_pair * overrun_ > left)) {
        sayf(Verbosity::normal, "ab: round %d stopped after %zu of %zu parts: the %.0f s budget is spent\n", round, k,
             parts.size(), budget_s);
        break;
      }
      const std::set<std::string> these(parts[k].second.begin(), parts[k].second.end());
      sayf(Verbosity::verbose, "ab: round %d part %zu of %zu: %d more processes per side of %zu (%s%s)\n", round, k + 1,
           parts.size(), pairs, these.size(), parts[k].second.front().c_str(), these.size() > 1 ? ", ..." : "");
      // A part whose cost was planned at a shared process's share teaches its benchmarks' own cost
      // (note_alone), not how far the harness overruns the costs it knows.
      const bool costs_known =
          std::all_of(these.begin(), these.end(), [&](const std::string& n) { return alone_.count(n) > 0; });
      const auto part_start = std::chrono::steady_clock::now();
      const PairedRound more = run_round_(these, ++passes_, pairs);
      if (more.interrupted) return false;  // a cut-short round is not looked at
      if (costs_known) {
        estimated_s_ += pairs * per_pair;
        took_s_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - part_start).count();
        if (estimated_s_ > 0) overrun_ = std::max(1.0, took_s_ / estimated_s_);
      }
      add_round(by_name_, more.baseline, more.candidate, plan_.gate);
      note_apart(more.candidate);
      note_alone(more.baseline, more.candidate);
      const bool held_suspect = std::any_of(parts[k].second.begin(), parts[k].second.end(),
                                            [&](const std::string& name) { return suspects.count(name) > 0; });
      if (held_suspect && k + 1 < parts.size()) {
        sayf(Verbosity::verbose, "ab: round %d ends after part %zu of %zu, its suspects to be looked at again\n", round,
             k + 1, parts.size());
        break;
      }
    }
    return true;
  }

  // A benchmark's wall seconds per pair at the last look (0 where not known).
  double seconds_per_pair(const std::string& name) const {
    for (std::size_t i = 0; i < states_.size(); ++i) {
      if (states_[i].benchmark == name) return per_pair_[i];
    }
    return 0;
  }

  void look() override {
    states_.clear();
    per_pair_.clear();
    for (const auto& [name, s] : by_name_) {
      states_.push_back(s);
      // Its wall seconds per pair so far (a duet pair runs both sides at once: half of both
      // processes; a benchmark whose sides run one at a time in a duet ab, both).
      const bool at_once = duet_ && !apart_.count(name);
      const auto alone = alone_.find(name);
      const double per_process_pair = alone != alone_.end() ? alone->second.seconds / alone->second.pairs
                                      : s.diffs.empty()     ? 0
                                                            : s.seconds / static_cast<double>(s.processes_per_side());
      per_pair_.push_back(per_process_pair * (at_once ? 0.5 : 1.0));
    }
    decision_ = decide_sequential(states_, stages_.sequence, SequentialDesign{1.0, plan_.max_repetitions});
    merge_first_look(decision_, first_look_);
  }

  const SequentialDecision& decision() const override { return decision_; }

  // The launch order's own effect (duet blocks): what the pairing's arrangement did to a side,
  // cancelled in every block's mean; a row whose change was no larger is held (decide_sequential).
  // Then what the budget left undecided would cost to decide, so that the user knows whether to
  // pass a larger --budget or compare fewer experiments (an estimate at each benchmark's present noise).
  void report_end(std::chrono::steady_clock::time_point start) const {
    const SequentialRow* largest = nullptr;
    int held = 0;
    for (const SequentialRow& row : decision_.rows) {
      if (row.note.rfind("held: launching", 0) == 0) ++held;
      if (row.order_effect != 0 && (!largest || std::fabs(row.order_effect) > std::fabs(largest->order_effect)))
        largest = &row;
    }
    if (largest) {
      char line[400];
      std::snprintf(line, sizeof line,
                    "ab: launch order (duet blocks, cancelled in their means): largest effect %+.1f %% (%s)%s\n",
                    100 * largest->order_effect, largest->benchmark.c_str(),
                    held ? (", " + std::to_string(held) + " change(s) no larger held undecided").c_str() : "");
      say() << line;
    }
    const BudgetProjection p = project_budget(decision_.rows, per_pair_, plan_.max_repetitions);
    if (p.undecided > 0) {
      const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      char line[400];
      std::snprintf(line, sizeof line,
                    "ab: %d undecided: %d of them within --max-repetitions %d would need about %lld more processes per "
                    "side, about %.0f s more at their measured costs (--budget %.0f); %d not within the cap at their "
                    "noise (estimates)\n",
                    p.undecided, p.within_cap, plan_.max_repetitions, p.more_pairs, p.seconds, spent + p.seconds,
                    p.undecided - p.within_cap);
      say() << line;
    }
  }

 private:
  const PairedPlan& plan_;
  const RunPairedRound& run_round_;
  const TwoStage stages_;
  const bool duet_;
  GateReport first_look_;
  std::map<std::string, SequentialState> by_name_;
  std::vector<SequentialState> states_;
  std::vector<double> per_pair_;  // per state: its wall seconds per pair so far
  SequentialDecision decision_;
  // The benchmarks whose processes ran without a duet pair (their sides one at a time).
  void note_apart(const nlohmann::json& doc) {
    for (const auto& b : doc["benchmarks"]) {
      if (!b.contains("duet_pair") && b.contains("name")) apart_.insert(b["name"].get<std::string>());
    }
  }
  std::set<std::string> apart_;
  // Per benchmark, the wall of its processes that ran no other benchmark (a round's, or a planned
  // one not shared), both sides, and their pairs: what a pair costs a round.
  struct Alone {
    double seconds = 0;
    int pairs = 0;
  };
  void note_alone(const nlohmann::json& base, const nlohmann::json& cand) {
    for (const nlohmann::json* doc : {&base, &cand}) {
      for (const auto& b : (*doc)["benchmarks"]) {
        if (!b.contains("name") || !b.contains("process_wall_s")) continue;
        if (b.contains("shared_process") && b["shared_process"].value("benchmarks", 1) > 1) continue;
        Alone& a = alone_[b["name"].get<std::string>()];
        a.seconds += b["process_wall_s"].get<double>();
        if (doc == &cand) ++a.pairs;
      }
    }
    for (auto it = alone_.begin(); it != alone_.end();) it = it->second.pairs > 0 ? std::next(it) : alone_.erase(it);
  }
  std::map<std::string, Alone> alone_;
  // What the rounds' parts took against what their processes' walls said (a part pays its own
  // process starts and the harness's bookkeeping): later parts and rounds are planned at that.
  double estimated_s_ = 0, took_s_ = 0, overrun_ = 1;
  mutable std::map<std::string, int> pairs_;  // the chosen benchmarks' pairs this round (round_pairs)
  int passes_ = 0;                            // parts run so far, over every round (each run's seed)
};

}  // namespace

SequentialDecision sample_pairs(const PairedPlan& plan, const nlohmann::json& baseline, const nlohmann::json& candidate,
                                const RunPairedRound& run_round, std::chrono::steady_clock::time_point start) {
  PairedRounds rounds(plan, baseline, candidate, run_round);
  sample_until_decided(rounds, plan.budget_s, start);
  rounds.report_end(start);
  return rounds.decision();
}

void apply_sequential(GateReport& report, const SequentialDecision& d, double stage_level) {
  char level[16];
  std::snprintf(level, sizeof level, "%g %%", 100 * stage_level);
  std::map<std::string, const SequentialRow*> by_name;
  for (const auto& row : d.rows) by_name[row.benchmark] = &row;
  for (BenchmarkVerdict& v : report.rows) {
    const auto it = by_name.find(v.benchmark);
    if (v.instrument != Instrument::time || it == by_name.end()) continue;
    if (v.verdict == Verdict::broken || v.verdict == Verdict::missing || v.verdict == Verdict::new_) continue;
    const SequentialRow& s = *it->second;
    v.verdict = s.verdict;
    v.slowdown = s.change, v.slowdown_low = s.low, v.slowdown_high = s.high;
    v.p_adjusted = s.p_adjusted;
    v.processes_needed = s.pairs_needed;
    if (s.first_look) {
      v.note = "decided at the planned look (" + std::to_string(s.pairs) +
               " processes per side; fixed-sample test at half of alpha, " + level + " interval)";
      continue;
    }
    v.note = "sampled until decided, always-valid " + std::string(level) + " interval: " +
             (s.verdict == Verdict::undecided ? resolution_text(s, stage_level)
                                              : std::to_string(s.pairs) + " processes per side");
  }
}

}  // namespace pairbench::harness
