// `run --baseline --budget`: rounds of more processes against a fixed baseline (unpaired.h).
#include "harness/sampling/unpaired.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <set>

#include "harness/exec/interrupt.h"
#include "harness/exec/say.h"
#include "harness/gate/sequential.h"
#include "harness/store/sample.h"

namespace pairbench::harness {

std::vector<UnpairedState> unpaired_states(const nlohmann::json& baseline, const nlohmann::json& current,
                                           const GateOptions& options) {
  // The current run's declarations over the baseline's.
  const auto direction = experiment_directions({&baseline, &current}, options.threshold);
  std::map<std::string, std::vector<const nlohmann::json*>> base_rows, cur_rows;
  for (const auto& b : baseline["benchmarks"]) base_rows[b["name"]].push_back(&b);
  for (const auto& c : current["benchmarks"]) cur_rows[c["name"]].push_back(&c);
  std::vector<UnpairedState> out;
  for (auto& [name, rows] : cur_rows) {
    const auto base = base_rows.find(name);
    if (base == base_rows.end() || base->second.size() < 2) continue;
    // In the order they ran round by round: repetition order (never by value).
    std::stable_sort(rows.begin(), rows.end(), [](const nlohmann::json* a, const nlohmann::json* b) {
      return a->value("repetition_index", 0) < b->value("repetition_index", 0);
    });
    const auto found = direction.find(rows.front()->value("experiment", ""));
    const ExperimentDirection d =
        found != direction.end() ? found->second : ExperimentDirection{true, options.threshold};
    const bool lower_is_better = d.lower_is_better;
    UnpairedState s;
    s.benchmark = name;
    s.threshold = d.threshold;
    for (const auto* b : base->second) s.add_baseline(process_value(*b), lower_is_better);
    for (const auto* c : rows) {
      s.add_current(process_value(*c), lower_is_better);
      s.seconds += c->value("process_wall_s", 0.0);
    }
    if (const auto it = options.run_variance.find(name); it != options.run_variance.end()) s.run_variance = it->second;
    if (const auto it = options.run_variance_runs.find(name); it != options.run_variance_runs.end()) {
      s.run_variance_runs = it->second;
    }
    if (const auto it = options.process_variance_history.find(name); it != options.process_variance_history.end()) {
      s.history_variance = it->second.first;
      s.history_df = it->second.second;
    }
    out.push_back(std::move(s));
  }
  return out;
}

void merge_round(RunOutcome& run, const RunOutcome& round) {
  std::map<std::pair<std::string, Instrument>, int> repetitions;
  int sequence = 0;
  double start_s = 0;
  for (const Sample& s : run.samples) {
    int& r = repetitions[{s.benchmark, s.instrument}];
    r = std::max(r, s.repetition + 1);
    sequence = std::max(sequence, s.sequence + 1);
    start_s = std::max(start_s, s.start_s + s.process_wall_s);
  }
  for (Sample s : round.samples) {
    s.repetition += repetitions[{s.benchmark, s.instrument}];
    if (s.sequence >= 0) s.sequence += sequence;
    s.start_s += start_s;  // after the processes before it (launch order, not the clock's gaps)
    run.samples.push_back(std::move(s));
  }
  run.failed_processes += round.failed_processes;
  run.wall_s += round.wall_s;
  run.calibrated += round.calibrated;
  run.calibration_wall_s += round.calibration_wall_s;
  for (const auto& d : round.drifted) {
    if (std::find(run.drifted.begin(), run.drifted.end(), d) == run.drifted.end()) run.drifted.push_back(d);
  }
  run.completed_processes += round.completed_processes;
  run.planned_processes += round.planned_processes;
}

std::vector<std::string> next_round(const SequentialDecision& d, const std::vector<UnpairedState>& states, int step,
                                    double remaining_s, int cap) {
  std::vector<bool> eligible;
  std::vector<double> cost;
  for (std::size_t i = 0; i < d.rows.size(); ++i) {
    // Every undecided benchmark below the cap that more processes of this run could decide (not
    // one the baseline's own interval already leaves undecidable), fewest still needed first.
    // within_cap is that judgement (at the low end of what the noise may be), the same one the
    // row's note gives: the point estimate of processes needed may be "none at this noise" while
    // the low end still decides within the cap, and such a row must be sampled, not left silent.
    eligible.push_back(d.rows[i].verdict == Verdict::undecided && d.rows[i].within_cap && d.rows[i].pairs < cap);
    const UnpairedState& s = states[i];
    const double per_process = s.current.empty() ? 0 : s.seconds / static_cast<double>(s.current.size());
    cost.push_back(step * per_process);
  }
  std::vector<std::string> chosen;
  for (const std::size_t i : affordable_cheapest_first(d.rows, eligible, cost, remaining_s))
    chosen.push_back(states[i].benchmark);
  return chosen;
}

std::vector<ExperimentEntry> only(const std::vector<ExperimentEntry>& experiments,
                                  const std::vector<std::string>& names) {
  const std::set<std::string> wanted(names.begin(), names.end());
  std::vector<ExperimentEntry> out = experiments;
  for (auto& e : out) std::erase_if(e.benchmarks, [&](const BenchmarkEntry& b) { return !wanted.count(b.name); });
  std::erase_if(out, [](const ExperimentEntry& e) { return e.benchmarks.empty(); });
  return out;
}

namespace {

// The unpaired state: this run's processes so far against the fixed baseline's, one look at a time.
class UnpairedRounds final : public Rounds {
 public:
  UnpairedRounds(const UntilDecided& plan, const std::vector<ExperimentEntry>& experiments, RunOptions options,
                 RunOutcome& outcome, const std::function<nlohmann::json(const RunOutcome&)>& look_at, Sampled& out)
      : plan_(plan),
        experiments_(experiments),
        options_(std::move(options)),
        outcome_(outcome),
        look_at_(look_at),
        stages_(split_two_stage(plan.options)),
        out_(out) {
    // Two stages (sequential.h, TwoStage), as `ab` spends alpha: the planned processes decided once
    // by the fixed gate (run-to-run noise as configured) at half of alpha and of the interval's miss
    // rate; the always-valid sequence at the other half on every later look. A benchmark decided at
    // the planned look gets no more processes. Both stages call "unchanged" only inside +-threshold
    // (resolution off): a wide "unchanged at +-R" would stop the sampling that could narrow it.
    const nlohmann::json planned = look_at_(outcome_);
    first_look_ = compare_runs(*plan_.baseline, planned, stages_.first_look, "baseline", "this run");
    out_.stage_level = stages_.sequence.interval_level;
    decide(planned);
    options_.instruction_processes = 0;  // time only: instruction counts are decided by their few processes
    options_.process_budget_s = options_.instruction_budget_s = 0;  // each round runs exactly its count
    options_.recalibrate = false;  // the planned processes' iteration counts, kept for every round
  }

  std::vector<std::string> choose(double remaining_s) const override {
    return next_round(out_.decision, out_.states, plan_.step, remaining_s, plan_.max_repetitions);
  }

  bool run_round(const std::vector<std::string>& chosen, int round, double spent_s, double budget_s) override {
    out_.rounds = round;
    char line[200];
    std::snprintf(
        line, sizeof line,
        "run: round %d: %d undecided against the baseline, sampling %zu (cheapest first), up to %d more processes "
        "each; %.0f s of %.0f s\n",
        round, out_.decision.count(Verdict::undecided), chosen.size(), plan_.step, spent_s, budget_s);
    say() << line;
    options_.seed =
        outcome_.seed + static_cast<std::uint64_t>(round);  // a fresh order each round, recorded seed + round
    // `step` more each, fewer where that would pass the cap: one run per count.
    std::map<int, std::vector<std::string>> by_count;
    for (const UnpairedState& s : out_.states) {
      if (std::find(chosen.begin(), chosen.end(), s.benchmark) == chosen.end()) continue;
      by_count[std::min(plan_.step, plan_.max_repetitions - static_cast<int>(s.current.size()))].push_back(s.benchmark);
    }
    for (const auto& [count, names] : by_count) {
      options_.repetitions = count;
      const RunOutcome more = run_experiments(only(experiments_, names), options_);
      merge_round(outcome_, more);
      out_.added_processes += static_cast<int>(more.completed_processes);
      if (more.interrupted_by || interrupt_signal()) return false;  // kept, not looked at
    }
    return true;
  }

  void look() override { decide(look_at_(outcome_)); }
  const SequentialDecision& decision() const override { return out_.decision; }

 private:
  void decide(const nlohmann::json& current) {
    out_.states = unpaired_states(*plan_.baseline, current, stages_.sequence);
    UnpairedDesign design;
    design.max_processes = plan_.max_repetitions;
    out_.decision = decide_sequential_unpaired(out_.states, stages_.sequence, design);
    merge_first_look(out_.decision, first_look_);
  }

  const UntilDecided& plan_;
  const std::vector<ExperimentEntry>& experiments_;
  RunOptions options_;
  RunOutcome& outcome_;
  const std::function<nlohmann::json(const RunOutcome&)>& look_at_;
  const TwoStage stages_;
  GateReport first_look_;
  Sampled& out_;
};

}  // namespace

Sampled sample_against_baseline(const UntilDecided& plan, const std::vector<ExperimentEntry>& experiments,
                                RunOptions options, RunOutcome& outcome,
                                const std::function<nlohmann::json(const RunOutcome&)>& look,
                                std::chrono::steady_clock::time_point start) {
  Sampled out;
  UnpairedRounds rounds(plan, experiments, std::move(options), outcome, look, out);
  sample_until_decided(rounds, plan.budget_s, start);
  return out;
}

void apply_unpaired(GateReport& report, const Sampled& sampled) {
  std::map<std::string, std::pair<const SequentialRow*, const UnpairedState*>> by_name;
  for (std::size_t i = 0; i < sampled.decision.rows.size(); ++i) {
    by_name[sampled.decision.rows[i].benchmark] = {&sampled.decision.rows[i], &sampled.states[i]};
  }
  for (BenchmarkVerdict& v : report.rows) {
    const auto it = by_name.find(v.benchmark);
    if (v.instrument != Instrument::time || it == by_name.end()) continue;
    if (v.verdict == Verdict::broken || v.verdict == Verdict::missing || v.verdict == Verdict::new_) continue;
    const SequentialRow& s = *it->second.first;
    v.verdict = s.verdict;
    v.slowdown = s.change, v.slowdown_low = s.low, v.slowdown_high = s.high;
    v.p_adjusted = s.p_adjusted;
    v.processes_needed = s.pairs_needed;
    char level[16];
    std::snprintf(level, sizeof level, "%g %%", 100 * sampled.stage_level);
    if (s.first_look) {
      v.note = "decided at the planned look (" + std::to_string(s.pairs) + " processes against the baseline's " +
               std::to_string(it->second.second->baseline.size()) + "; the fixed gate at half of alpha, " + level +
               " interval)";
      continue;
    }
    v.note = "sampled until decided, always-valid " + std::string(level) + " interval: " +
             (s.verdict == Verdict::undecided ? s.note
                                              : std::to_string(s.pairs) + " processes against the baseline's " +
                                                    std::to_string(it->second.second->baseline.size()));
  }
}

nlohmann::json until_decided_json(const UntilDecided& plan, const Sampled& sampled, const std::string& baseline_label) {
  std::map<std::string, int> verdicts;
  for (const auto& r : sampled.decision.rows) verdicts[to_string(r.verdict)]++;
  return {{"baseline", baseline_label},
          {"budget_s", plan.budget_s},
          {"max_repetitions", plan.max_repetitions},
          {"step", plan.step},
          {"rounds", sampled.rounds},
          {"added_processes", sampled.added_processes},
          {"decision",
           "two stages: the planned look by the fixed gate at half of alpha, then always-valid intervals "
           "against a fixed baseline at the other half, Holm over the gate (docs/gate.md)"},
          {"decided_at_planned_look", std::count_if(sampled.decision.rows.begin(), sampled.decision.rows.end(),
                                                    [](const SequentialRow& r) { return r.first_look; })},
          {"verdicts", verdicts}};
}

}  // namespace pairbench::harness
