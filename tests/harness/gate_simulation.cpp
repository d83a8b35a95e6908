// The gate on synthetic runs of the profiles' shape, many times over: whole-gate false
// regressions on A/A pairs and detection of a planted slowdown, per noise model. Not a test
// (ctest does not run it): the tool behind the design figures in docs/gate.md.
//
//   build/tests/gate_simulation --benchmarks 335 --processes 9 --gates 1000 --noise measured
//   build/tests/gate_simulation ... --shift 0.05          (every benchmark 5 % slower)
//   options: --noise homogeneous|lognormal|measured|measured-gpu  --outliers 0.03  --moderation eb|none  --trim 0.2
//
// --sequential: `ab`'s sampling until decided (harness/gate/sequential.h). Each benchmark starts
// with --processes pairs, and after every round each benchmark still undecided within the cap gets
// --step more pairs, up to --cap per side; a look after every round. Per gate: whether any
// benchmark ever became a regression, under the always-valid procedure and under the naive one
// (the fixed-sample gate, compare_runs, re-run after every round on the same draws, each benchmark
// stopped once decided; --naive 0 skips it), and the fixed design at the cap on the same draws.
//   build/tests/gate_simulation --sequential --benchmarks 26 --processes 4 --step 2 --cap 30 --gates 400
//   --sequence robust|mean: the confidence sequence (gate/sequential.h SequenceKind; default robust)
//   --two-stage 1|0: ab's planned look decided by the fixed gate at alpha/2 first (TwoStage; default 1)
//   --pair-budget N: the rounds add at most N pairs over the gate, cheapest first (ab's --budget)
//   --lambda-max L: the robust sequence's largest bet (default 0.75; stats::LocationSpec)
//   --planted-one X: benchmark 0 alone X slower (0.1 = 10 %): its verdict and processes, and changes decided elsewhere
//   --planted-cv S: benchmark 0's process noise (0.03 = 3 %) in place of the one its noise model drew
//   --planted-cost K: benchmark 0's pair costs K times another's (a larger input); --pair-budget is then
//     in the other benchmarks' pairs
//   --suspects-by evidence|cost: depth's order among suspects (ab's: most standard errors first;
//     cost: cheapest to decide first, the rule before it)
//   --allocation breadth|depth: under --pair-budget, step pairs to every affordable row (breadth), or
//     first to the rows the remaining pairs can carry to their estimate (depth: ab's decidable_first)
//   build/tests/gate_simulation --replay results/ab-X/baseline.json results/ab-X/candidate.json [--cap 30]
//     an ab's own pairs decided again under both sequences (its last look)
//
// --unpaired: `run --baseline --budget`'s sampling against a fixed baseline
// (harness/gate/sequential_unpaired.h). The baseline has --processes processes, fixed; the current
// side starts with --start and gets --step more per round while undecided and worth sampling, up
// to --cap; a look after every round. Per gate: whether any benchmark ever became a regression,
// always-valid and naive (the fixed gate re-run after every round, each benchmark stopped once
// decided), and the fixed gate at the start (no sampling). --run-noise SD: each run's level moves
// by N(0, SD^2) per benchmark, and the decision is told that variance (as a history would).
// --two-stage 1 (default) decides the planned processes first by the fixed gate at alpha/2, as
// `run` does (TwoStage); 0: the always-valid sequence alone.
//   build/tests/gate_simulation --unpaired --benchmarks 335 --processes 9 --start 9 --step 2 --cap 30 --gates 400
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "harness/gate/gate.h"
#include "harness/sampling/unpaired.h"
#include "harness/gate/sequential.h"
#include "harness/store/sample.h"
#include "harness/gate/sequential_unpaired.h"

using namespace pairbench::harness;

namespace {

// A simulated run file of one side: benchmark b's first counts[b] values.
nlohmann::json side_doc(const std::vector<std::vector<double>>& values, const std::vector<int>& counts) {
  nlohmann::json d = {{"context", nlohmann::json::object()}, {"benchmarks", nlohmann::json::array()}};
  d["pairbench"] = {{"schema_version", 1},
                    {"environment", {{"cpu_model", "simulated"}}},
                    {"not_run", nlohmann::json::array()},
                    {"experiments", {{{"name", "sim"}, {"metric", "t"}, {"unit", "ns"}, {"better", "lower"}}}}};
  for (std::size_t b = 0; b < values.size(); ++b) {
    for (int p = 0; p < counts[b]; ++p) {
      d["benchmarks"].push_back({{"name", "b" + std::to_string(b)},
                                 {"experiment", "sim"},
                                 {"arm", "a"},
                                 {"real_time", 1.0},
                                 {"metric_value", 100 * std::exp(values[b][static_cast<std::size_t>(p)])}});
    }
  }
  return d;
}

struct SequentialArgs {
  int step = 2, cap = 30;
  double c2 = 1.0;
  bool naive = true;
  SequenceKind kind = SequenceKind::robust;
  double clip_k = 2.0;
  double lambda_max = 0.75;  // --lambda-max: the robust sequence's largest bet (stats::LocationSpec)
  int start = 9;             // --unpaired: the current side's planned processes
  double share = 0.5;        // --unpaired: the current side's share of each level
  double run_noise = 0;      // --unpaired: run-to-run SD of a benchmark's log level
  bool two_stage = true;     // ab's and run's planned look decided by the fixed gate at half of alpha (TwoStage)
  double first_share = 0.5;  // --first-share: the planned look's share of alpha
  std::string allocation =
      "breadth";            // --allocation: the rounds' rule under a pair budget (depth: ab's decidable_first)
  double planted_one = 0;   // --planted-one X: benchmark 0 alone X slower (log), the rest A/A
  double planted_cost = 1;  // --planted-cost K: benchmark 0's pair costs K times another's
  std::string suspects_by = "evidence";  // --suspects-by: depth's order among suspects
  long pair_budget = -1;  // --pair-budget: pairs the rounds may add over the whole gate (ab's --budget at
                          // equal cost per process; -1: unlimited), spent cheapest first
};

// `run --baseline --budget`'s loop on synthetic gates: see the header comment.
int simulate_unpaired(int benchmarks, int processes, int gates, const std::vector<double>& cv, double outliers,
                      double shift, const GateOptions& base_options, const SequentialArgs& a,
                      const std::string& noise) {
  std::mt19937_64 rng(42);
  std::normal_distribution<double> z(0, 1);
  std::uniform_real_distribution<double> u(0, 1);
  const auto nb = static_cast<std::size_t>(benchmarks);
  GateOptions options = base_options;
  for (std::size_t b = 0; b < nb && a.run_noise > 0; ++b) {
    options.run_variance["b" + std::to_string(b)] = a.run_noise * a.run_noise;
    options.run_variance_runs["b" + std::to_string(b)] = 30;
  }
  int seq_failed = 0, naive_failed = 0, fixed_failed = 0;
  long rows = 0, used = 0, naive_used = 0;
  long seq_counts[4] = {0, 0, 0, 0}, naive_counts[4] = {0, 0, 0, 0}, fixed_counts[4] = {0, 0, 0, 0};
  auto tally = [](long* c, Verdict v) {
    c[0] += v == Verdict::regression, c[1] += v == Verdict::unchanged, c[2] += v == Verdict::undecided,
        c[3] += v == Verdict::improvement;
  };
  UnpairedDesign design;
  design.max_processes = a.cap;
  design.c2 = a.c2;
  design.current_share = a.share;
  for (int g = 0; g < gates; ++g) {
    std::vector<std::vector<double>> values[2];
    for (int side = 0; side < 2; ++side) {
      values[side].assign(nb, std::vector<double>(static_cast<std::size_t>(side ? a.cap : processes)));
      for (std::size_t b = 0; b < nb; ++b) {
        const double level = a.run_noise * z(rng);  // this run's day
        for (double& v : values[side][b]) {
          v = level + cv[b] * z(rng) + (side ? shift : 0);
          if (u(rng) < outliers) v += std::log(1.1 + 0.5 * u(rng));
        }
      }
    }
    std::vector<UnpairedState> states(nb);
    for (std::size_t b = 0; b < nb; ++b) {
      states[b].benchmark = "b" + std::to_string(b);
      for (double v : values[0][b]) states[b].baseline.push_back(v);
      for (int p = 0; p < a.start; ++p) states[b].current.push_back(values[1][b][static_cast<std::size_t>(p)]);
      states[b].seconds = a.start;
      if (a.run_noise > 0) states[b].run_variance = a.run_noise * a.run_noise, states[b].run_variance_runs = 30;
    }
    bool any = false;
    SequentialDecision d;
    // run's two stages, as ab's: the fixed gate on the planned processes once at half of alpha.
    const TwoStage stages = split_two_stage(options, a.first_share);
    std::optional<GateReport> first_look;
    if (a.two_stage) {
      first_look = compare_runs(side_doc(values[0], std::vector<int>(nb, processes)),
                                side_doc(values[1], std::vector<int>(nb, a.start)), stages.first_look, "a", "b");
    }
    for (;;) {
      d = decide_sequential_unpaired(states, a.two_stage ? stages.sequence : options, design);
      if (first_look) merge_first_look(d, *first_look);
      any = any || d.failed();
      const std::vector<std::string> next = next_round(d, states, a.step, 1e18, a.cap);
      if (next.empty()) break;
      for (const std::string& name : next) {
        const auto b = static_cast<std::size_t>(std::stoi(name.substr(1)));
        for (int k = 0; k < a.step && static_cast<int>(states[b].current.size()) < a.cap; ++k) {
          states[b].current.push_back(values[1][b][states[b].current.size()]);
          states[b].seconds += 1;
        }
      }
    }
    seq_failed += any;
    for (const SequentialRow& r : d.rows) ++rows, tally(seq_counts, r.verdict), used += r.pairs;
    // Naive: the fixed gate after every round; the first look is the fixed gate without sampling.
    std::vector<int> counts(nb, a.start);
    std::vector<Verdict> verdict(nb, Verdict::undecided);
    bool failed = false, first = true;
    const std::vector<int> base_counts(nb, processes);
    for (;;) {
      const GateReport r =
          compare_runs(side_doc(values[0], base_counts), side_doc(values[1], counts), options, "a", "b");
      bool more = false;
      for (const auto& v : r.rows) {
        const auto b = static_cast<std::size_t>(std::stoi(v.benchmark.substr(1)));
        if (first) tally(fixed_counts, v.verdict);
        if (verdict[b] == Verdict::undecided) verdict[b] = v.verdict;
        failed = failed || v.verdict == Verdict::regression;
      }
      if (first) fixed_failed += r.failed();
      first = false;
      if (!a.naive) break;
      for (std::size_t b = 0; b < nb; ++b) {
        if (verdict[b] == Verdict::undecided && counts[b] < a.cap)
          counts[b] = std::min(a.cap, counts[b] + a.step), more = true;
      }
      if (!more) break;
    }
    if (a.naive) {
      naive_failed += failed;
      for (std::size_t b = 0; b < nb; ++b) tally(naive_counts, verdict[b]), naive_used += counts[b];
    }
  }
  const double n = static_cast<double>(rows);
  std::printf(
      "unpaired: %d benchmarks, baseline %d processes, current from %d, +%d per round to a cap of %d, share %.2f, "
      "noise %s, outliers %.0f%%, run noise %.1f%%, shift %+.1f%%, %d gates%s\n",
      benchmarks, processes, a.start, a.step, a.cap, a.share, noise.c_str(), 100 * outliers, 100 * a.run_noise,
      100 * std::expm1(shift), gates,
      a.two_stage ? ", two stages (planned look: fixed gate at alpha/2)" : ", sequence alone");
  std::printf(
      "  always-valid: gates with a regression %d (%.2f%%); verdicts: regression %.3f, unchanged %.3f, "
      "undecided %.3f, improvement %.3f; current processes per benchmark %.1f\n",
      seq_failed, 100.0 * seq_failed / gates, seq_counts[0] / n, seq_counts[1] / n, seq_counts[2] / n,
      seq_counts[3] / n, used / n);
  if (a.naive) {
    std::printf(
        "  naive (fixed gate every round): gates with a regression %d (%.2f%%); verdicts: regression %.3f, "
        "unchanged %.3f, undecided %.3f, improvement %.3f; current processes %.1f\n",
        naive_failed, 100.0 * naive_failed / gates, naive_counts[0] / n, naive_counts[1] / n, naive_counts[2] / n,
        naive_counts[3] / n, naive_used / n);
  }
  std::printf(
      "  fixed gate at the start (%d against %d): gates with a regression %d (%.2f%%); verdicts: regression %.3f, "
      "unchanged %.3f, undecided %.3f, improvement %.3f\n",
      a.start, processes, fixed_failed, 100.0 * fixed_failed / gates, fixed_counts[0] / n, fixed_counts[1] / n,
      fixed_counts[2] / n, fixed_counts[3] / n);
  return 0;
}

// ab's loop on synthetic gates: see the header comment.
int simulate_sequential(int benchmarks, int processes, int gates, const std::vector<double>& cv, double outliers,
                        double shift, const GateOptions& options, const SequentialArgs& a, const std::string& noise) {
  std::mt19937_64 rng(42);
  std::normal_distribution<double> z(0, 1);
  std::uniform_real_distribution<double> u(0, 1);
  const auto nb = static_cast<std::size_t>(benchmarks);
  int seq_failed = 0, naive_failed = 0, fixed_failed = 0;
  long rows = 0, pairs_used = 0, naive_pairs_used = 0, capped_undecided = 0;
  long seq_counts[4] = {0, 0, 0, 0}, naive_counts[4] = {0, 0, 0, 0}, fixed_counts[4] = {0, 0, 0, 0};
  long looks = 0;
  long planted_found = 0, planted_pairs = 0, others_decided = 0;  // --planted-one
  auto tally = [](long* c, Verdict v) {
    c[0] += v == Verdict::regression, c[1] += v == Verdict::unchanged, c[2] += v == Verdict::undecided,
        c[3] += v == Verdict::improvement;
  };
  for (int g = 0; g < gates; ++g) {
    // Every process a benchmark could run, drawn up front: all three procedures see the same draws.
    std::vector<std::vector<double>> values[2];
    for (int side = 0; side < 2; ++side) {
      values[side].assign(nb, std::vector<double>(static_cast<std::size_t>(a.cap)));
      for (std::size_t b = 0; b < nb; ++b) {
        for (double& v : values[side][b]) {
          v = cv[b] * z(rng) + (side ? shift : 0) + (side && b == 0 ? a.planted_one : 0);
          if (u(rng) < outliers) v += std::log(1.1 + 0.5 * u(rng));  // a neighbour's burst: 10-60 % slower
        }
      }
    }
    // Always-valid: pairs are the two sides' processes of one round.
    std::vector<SequentialState> states(nb);
    for (std::size_t b = 0; b < nb; ++b) {
      states[b].benchmark = "b" + std::to_string(b);
      for (int p = 0; p < processes; ++p) {
        states[b].diffs.push_back(values[1][b][static_cast<std::size_t>(p)] -
                                  values[0][b][static_cast<std::size_t>(p)]);
      }
    }
    SequentialDesign design;
    design.max_pairs = a.cap;
    design.c2 = a.c2;
    design.kind = a.kind;
    design.location.clip_k = a.clip_k;
    design.location.lambda_max = a.lambda_max;
    bool any_regression = false;
    double added = 0;  // pairs added by rounds (--pair-budget), at benchmark 0's --planted-cost
    std::vector<double> cost(nb, 1.0);
    cost[0] = a.planted_cost;
    SequentialDecision d;
    // ab's two stages: the fixed-sample gate on the planned pairs, once, at half of alpha.
    const TwoStage stages = split_two_stage(options, a.first_share);
    std::optional<GateReport> first_look;
    if (a.two_stage) {
      const std::vector<int> planned(nb, processes);
      first_look =
          compare_runs(side_doc(values[0], planned), side_doc(values[1], planned), stages.first_look, "a", "b");
    }
    for (;;) {
      d = decide_sequential(states, a.two_stage ? stages.sequence : options, design);
      if (first_look) merge_first_look(d, *first_look);
      ++looks;
      any_regression = any_regression || d.failed();
      std::vector<std::size_t> next = d.to_sample();
      if (a.pair_budget >= 0 && a.allocation == "depth") {
        // ab's rule (decidable_first): the rows the remaining pairs can carry to their estimate.
        std::vector<bool> eligible;
        for (const SequentialRow& r : d.rows)
          eligible.push_back(r.verdict == Verdict::undecided && r.pairs + a.step <= a.cap);
        std::vector<SequentialRow> ordered = d.rows;
        if (a.suspects_by == "cost") {
          for (SequentialRow& r : ordered) r.standard_errors = 0;  // ties: cheapest to decide first
        }
        next = decidable_first(ordered, eligible, cost, static_cast<double>(a.pair_budget) - added, a.step,
                               a.cap);  // within the budget
        for (std::size_t b : next) added += a.step * cost[b];
      } else if (a.pair_budget >= 0) {
        std::vector<std::size_t> affordable;
        for (std::size_t b : next) {
          if (added + a.step * cost[b] > static_cast<double>(a.pair_budget)) break;
          added += a.step * cost[b];
          affordable.push_back(b);
        }
        next = affordable;
      }
      if (next.empty()) break;
      for (std::size_t b : next) {
        for (int k = 0; k < a.step && static_cast<int>(states[b].diffs.size()) < a.cap; ++k) {
          const auto p = states[b].diffs.size();
          states[b].diffs.push_back(values[1][b][p] - values[0][b][p]);
        }
      }
    }
    seq_failed += any_regression;
    if (a.planted_one != 0) {
      planted_found += d.rows[0].verdict == Verdict::regression;
      planted_pairs += d.rows[0].pairs;
      for (std::size_t b = 1; b < nb; ++b) {
        others_decided += d.rows[b].verdict == Verdict::regression || d.rows[b].verdict == Verdict::improvement;
      }
    }
    for (const SequentialRow& r : d.rows) {
      ++rows;
      tally(seq_counts, r.verdict);
      pairs_used += r.pairs;
      capped_undecided += r.verdict == Verdict::undecided;
    }
    // Naive: the fixed-sample gate after every round, each benchmark stopped once decided.
    if (a.naive) {
      std::vector<int> counts(nb, processes);
      std::vector<Verdict> verdict(nb, Verdict::undecided);
      bool failed = false;
      for (;;) {
        const GateReport r = compare_runs(side_doc(values[0], counts), side_doc(values[1], counts), options, "a", "b");
        bool more = false;
        for (const auto& v : r.rows) {
          const auto b = static_cast<std::size_t>(std::stoi(v.benchmark.substr(1)));
          if (verdict[b] == Verdict::undecided) verdict[b] = v.verdict;
          failed = failed || v.verdict == Verdict::regression;
        }
        for (std::size_t b = 0; b < nb; ++b) {
          if (verdict[b] == Verdict::undecided && counts[b] < a.cap) {
            counts[b] = std::min(a.cap, counts[b] + a.step);
            more = true;
          }
        }
        if (!more) break;
      }
      naive_failed += failed;
      for (std::size_t b = 0; b < nb; ++b) tally(naive_counts, verdict[b]), naive_pairs_used += counts[b];
    }
    // The fixed design at the cap, on the same draws.
    const std::vector<int> full(nb, a.cap);
    const GateReport fixed = compare_runs(side_doc(values[0], full), side_doc(values[1], full), options, "a", "b");
    fixed_failed += fixed.failed();
    for (const auto& v : fixed.rows) tally(fixed_counts, v.verdict);
  }
  const double n = static_cast<double>(rows);
  std::printf(
      "sequential: %d benchmarks, start %d pairs, +%d per round to a cap of %d, noise %s, outliers %.0f%%, "
      "shift %+.1f%%, sequence %s (c2 %.2f)%s, %d gates (%.1f looks per gate):\n",
      benchmarks, processes, a.step, a.cap, noise.c_str(), 100 * outliers, 100 * std::expm1(shift),
      a.kind == SequenceKind::robust ? "robust" : "mean", a.c2,
      a.two_stage ? ", two stages (planned look: fixed gate at alpha/2)" : ", sequence alone", gates,
      double(looks) / gates);
  std::printf(
      "  always-valid:       gates with a regression %d (%.2f%%); verdicts: regression %.3f, unchanged %.3f, "
      "undecided %.3f, improvement %.3f; mean processes per side %.1f\n",
      seq_failed, 100.0 * seq_failed / gates, seq_counts[0] / n, seq_counts[1] / n, seq_counts[2] / n,
      seq_counts[3] / n, pairs_used / n);
  if (a.planted_one != 0) {
    std::printf(
        "  planted in benchmark 0 alone (%+.1f%%, its noise %.1f%%, its pair %.1fx another's, suspects by %s): a "
        "regression in %ld of %d gates, mean processes per side %.1f; other benchmarks decided a change: %ld\n",
        100 * std::expm1(a.planted_one), 100 * cv[0], a.planted_cost, a.suspects_by.c_str(), planted_found, gates,
        double(planted_pairs) / gates, others_decided);
  }
  if (a.naive) {
    std::printf(
        "  naive (fixed test every round): gates with a regression %d (%.2f%%); verdicts: regression %.3f, "
        "unchanged %.3f, undecided %.3f, improvement %.3f; mean processes per side %.1f\n",
        naive_failed, 100.0 * naive_failed / gates, naive_counts[0] / n, naive_counts[1] / n, naive_counts[2] / n,
        naive_counts[3] / n, naive_pairs_used / n);
  }
  std::printf(
      "  fixed design, %d per side: gates with a regression %d (%.2f%%); verdicts: regression %.3f, "
      "unchanged %.3f, undecided %.3f, improvement %.3f\n",
      a.cap, fixed_failed, 100.0 * fixed_failed / gates, fixed_counts[0] / n, fixed_counts[1] / n, fixed_counts[2] / n,
      fixed_counts[3] / n);
  return 0;
}

// --replay BASE CAND: an ab's two run files decided again, every benchmark on all the pairs it
// has (its last look), under both sequences: what the robust one would have said on real pairs.
int replay(const std::string& base_path, const std::string& cand_path, const GateOptions& options, int cap) {
  nlohmann::json docs[2];
  for (int side = 0; side < 2; ++side) {
    std::ifstream in(side ? cand_path : base_path);
    docs[side] = nlohmann::json::parse(in);
  }
  auto key = [](const nlohmann::json& b) {
    return b.contains("duet_pair") ? "p" + std::to_string(b["duet_pair"].get<int>())
                                   : "r" + std::to_string(b.value("repetition_index", 0));
  };
  std::map<std::string, std::map<std::string, double>> base;
  for (const auto& b : docs[0]["benchmarks"]) base[b["name"]][key(b)] = process_value(b);
  std::map<std::string, SequentialState> states;
  std::map<std::string, bool> higher_better;
  for (const auto& e : docs[1]["pairbench"]["experiments"])
    higher_better[e.value("name", "")] = e.value("better", "lower") == "higher";
  // In the order the pairs ran: by duet pair, else by repetition.
  std::vector<const nlohmann::json*> rows;
  for (const auto& c : docs[1]["benchmarks"]) rows.push_back(&c);
  std::stable_sort(rows.begin(), rows.end(), [](auto* a, auto* b) {
    return a->value("duet_pair", a->value("repetition_index", 0)) <
           b->value("duet_pair", b->value("repetition_index", 0));
  });
  for (const nlohmann::json* c : rows) {
    const auto it = base.find((*c)["name"]);
    if (it == base.end() || !it->second.count(key(*c))) continue;
    SequentialState& s = states[(*c)["name"]];
    s.benchmark = (*c)["name"];
    s.add_pair(it->second[key(*c)], process_value(*c), !higher_better[c->value("experiment", "")]);
  }
  std::vector<SequentialState> v;
  for (auto& [name, s] : states) v.push_back(s);
  SequentialDesign robust, mean;
  robust.max_pairs = mean.max_pairs = cap;
  mean.kind = SequenceKind::mean;
  const SequentialDecision r = decide_sequential(v, options, robust), m = decide_sequential(v, options, mean);
  std::printf("%-75s %5s  %-32s %-32s\n", "benchmark", "pairs", "robust", "mean");
  for (std::size_t i = 0; i < v.size(); ++i) {
    auto cell = [](const SequentialRow& row) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%-10s [%+.1f%%, %+.1f%%]", to_string(row.verdict).c_str(), 100 * row.low,
                    100 * row.high);
      return std::string(buf);
    };
    std::printf("%-75s %5d  %-32s %-32s\n", v[i].benchmark.c_str(), r.rows[i].pairs, cell(r.rows[i]).c_str(),
                cell(m.rows[i]).c_str());
  }
  for (const auto* d : {&r, &m}) {
    std::printf("%s: %d regressions, %d unchanged, %d undecided, %d improvements\n", d == &r ? "robust" : "mean",
                d->count(Verdict::regression), d->count(Verdict::unchanged), d->count(Verdict::undecided),
                d->count(Verdict::improvement));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  int benchmarks = 335, processes = 9, gates = 200;
  std::string noise = "measured";
  double outliers = 0.03, shift = 0;
  double planted_cv = 0;  // --planted-cv: benchmark 0's process noise (log SD), in place of the drawn one
  bool sequential = false, unpaired = false;
  SequentialArgs seq;
  GateOptions options;
  options.undecided = UndecidedPolicy::pass;
  for (int i = 1; i < argc; i += 2) {
    const std::string k = argv[i];
    if (k == "--replay" && i + 2 < argc) {
      GateOptions o;
      int cap = 30;
      for (int j = i + 3; j + 1 < argc; j += 2) {
        if (std::string(argv[j]) == "--cap") cap = std::atoi(argv[j + 1]);
      }
      return replay(argv[i + 1], argv[i + 2], o, cap);
    }
    if (k == "--sequential" || k == "--unpaired") {
      (k == "--sequential" ? sequential : unpaired) = true;
      --i;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "gate_simulation: %s needs a value\n", k.c_str());
      return 2;
    }
    const std::string v = argv[i + 1];
    if (k == "--benchmarks")
      benchmarks = std::atoi(v.c_str());
    else if (k == "--step")
      seq.step = std::atoi(v.c_str());
    else if (k == "--cap")
      seq.cap = std::atoi(v.c_str());
    else if (k == "--c2")
      seq.c2 = std::atof(v.c_str());
    else if (k == "--naive")
      seq.naive = v != "0";
    else if (k == "--two-stage")
      seq.two_stage = v != "0";
    else if (k == "--first-share")
      seq.first_share = std::atof(v.c_str());
    else if (k == "--pair-budget")
      seq.pair_budget = std::atol(v.c_str());
    else if (k == "--allocation")
      seq.allocation = v;
    else if (k == "--clip-k")
      seq.clip_k = std::atof(v.c_str());
    else if (k == "--lambda-max")
      seq.lambda_max = std::atof(v.c_str());
    else if (k == "--planted-one")
      seq.planted_one = std::log1p(std::atof(v.c_str()));
    else if (k == "--planted-cv")
      planted_cv = std::atof(v.c_str());
    else if (k == "--planted-cost")
      seq.planted_cost = std::atof(v.c_str());
    else if (k == "--suspects-by" && (v == "evidence" || v == "cost"))
      seq.suspects_by = v;
    else if (k == "--sequence" && (v == "robust" || v == "mean"))
      seq.kind = v == "robust" ? SequenceKind::robust : SequenceKind::mean;
    else if (k == "--start")
      seq.start = std::atoi(v.c_str());
    else if (k == "--share")
      seq.share = std::atof(v.c_str());
    else if (k == "--run-noise")
      seq.run_noise = std::atof(v.c_str());
    else if (k == "--correction" && correction_from_string(v))
      options.correction = *correction_from_string(v);
    else if (k == "--processes")
      processes = std::atoi(v.c_str());
    else if (k == "--gates")
      gates = std::atoi(v.c_str());
    else if (k == "--noise")
      noise = v;
    else if (k == "--outliers")
      outliers = std::atof(v.c_str());
    else if (k == "--shift")
      shift = std::log1p(std::atof(v.c_str()));
    else if (k == "--moderation" && moderation_from_string(v))
      options.moderation = *moderation_from_string(v);
    else if (k == "--trim")
      options.trim = std::atof(v.c_str());
    else {
      std::fprintf(stderr, "gate_simulation: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  // measured: the CPU benchmarks of a 2-vCPU VM; measured-gpu: the GPU experiments' benchmarks of an H100.
  std::vector<double> measured;
  {
    std::ifstream in(noise == "measured-gpu" ? GPU_NOISE_FIXTURE : PROCESS_NOISE_FIXTURE);
    for (std::string line; std::getline(in, line);) {
      if (!line.empty() && line[0] != '#') measured.push_back(std::atof(line.c_str()));
    }
  }
  // Per-benchmark noise, the same in every gate (a benchmark's noise is a property of it).
  std::mt19937_64 noise_rng(7);
  std::normal_distribution<double> z(0, 1);
  std::vector<double> cv(static_cast<std::size_t>(benchmarks), 0.02);
  for (double& c : cv) {
    if (noise == "lognormal") c = std::clamp(0.09 * std::exp(0.6 * z(noise_rng)), 0.005, 0.38);
    if (noise == "measured" || noise == "measured-gpu") c = measured[noise_rng() % measured.size()];
  }
  if (planted_cv > 0 && !cv.empty()) cv[0] = planted_cv;
  if (unpaired) return simulate_unpaired(benchmarks, processes, gates, cv, outliers, shift, options, seq, noise);
  if (sequential) return simulate_sequential(benchmarks, processes, gates, cv, outliers, shift, options, seq, noise);
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(0, 1);
  int failed = 0;
  long rows = 0, regressions = 0, unchanged = 0, undecided = 0, quiet = 0, quiet_caught = 0;
  for (int g = 0; g < gates; ++g) {
    nlohmann::json docs[2];
    for (auto& d : docs) {
      d = {{"context", nlohmann::json::object()}, {"benchmarks", nlohmann::json::array()}};
      d["pairbench"] = {{"schema_version", 1},
                        {"environment", {{"cpu_model", "simulated"}}},
                        {"not_run", nlohmann::json::array()},
                        {"experiments", {{{"name", "sim"}, {"metric", "t"}, {"unit", "ns"}, {"better", "lower"}}}}};
    }
    for (int b = 0; b < benchmarks; ++b) {
      for (int side = 0; side < 2; ++side) {
        for (int p = 0; p < processes; ++p) {
          double v = cv[static_cast<std::size_t>(b)] * z(rng) + (side ? shift : 0);
          if (u(rng) < outliers) v += std::log(1.1 + 0.5 * u(rng));  // a neighbour's burst: 10-60 % slower
          docs[side]["benchmarks"].push_back({{"name", "b" + std::to_string(b)},
                                              {"experiment", "sim"},
                                              {"arm", "a"},
                                              {"real_time", 1.0},
                                              {"metric_value", 100 * std::exp(v)}});
        }
      }
    }
    const GateReport r = compare_runs(docs[0], docs[1], options, "a", "b");
    failed += r.failed();
    for (const auto& v : r.rows) {
      ++rows;
      regressions += v.verdict == Verdict::regression;
      unchanged += v.verdict == Verdict::unchanged;
      undecided += v.verdict == Verdict::undecided;
      if (cv[static_cast<std::size_t>(std::stoi(v.benchmark.substr(1)))] <= 0.03) {
        ++quiet;
        quiet_caught += v.verdict == Verdict::regression;
      }
    }
  }
  std::printf(
      "%d benchmarks x %d processes, noise %s, outliers %.0f%%, shift %+.1f%%, moderation %s, trim %.2f, "
      "%d gates:\n  gates with a regression %d (%.2f%%); verdicts: regression %.3f, unchanged %.3f, "
      "undecided %.3f; benchmarks with noise <= 3%%: regression %.3f\n",
      benchmarks, processes, noise.c_str(), 100 * outliers, 100 * std::expm1(shift),
      to_string(options.moderation).c_str(), options.trim, gates, failed, 100.0 * failed / gates,
      double(regressions) / rows, double(unchanged) / rows, double(undecided) / rows,
      quiet ? double(quiet_caught) / quiet : 0.0);
  return 0;
}
