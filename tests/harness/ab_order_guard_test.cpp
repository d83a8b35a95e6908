// The launch-order guard of `ab`'s duet blocks through the code that builds it from the run files
// (harness/sampling/paired.cpp: sample_pairs, whose add_round turns each block's two pairs into an
// order effect and its stratum), not a copy of its formula (issue 44). The rows are synthetic duet
// pairs with a declared launch-order effect, core difference and code change, laid out as the
// runner lays them out (harness/exec/plan.cpp timed_units and launch.cpp launch_units): in each crossover block both
// pairs have the same placement of the side launched first, the sides exchanged, so that a block's
// two pairs launch each side first once. Rounds are more blocks from the same generator, so the
// decision never depends on the machine (the budget is far from being reached).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/sampling/paired.h"

namespace pairbench::harness {
namespace {

struct Declared {
  double change = 0;              // the candidate's code, relative (+0.12: 12 % slower)
  double first = 0;               // what launching a side first does to its time, relative (+: slower)
  double core = 0;                // a process on CPU 0 is this much slower, relative
  bool higher_is_better = false;  // the metric is a throughput (1 / time)
  double noise = 0.01;            // SD of each process's log time
};

// Both sides' run files of `blocks` crossover blocks from block `from` (duet pairs 2j and 2j + 1,
// repetitions 2j and 2j + 1). Block j: the side launched first has CPU 0 in both pairs when
// j % 4 != 0 (three blocks in four: the strata are unequal, so a mean over blocks that ignored the
// strata would keep part of the cores' difference), CPU 1 otherwise; pair 2j launches the candidate
// first, pair 2j + 1 the baseline.
struct Generator {
  Declared d;
  std::mt19937_64 rng{44};

  nlohmann::json doc(const std::string& better) const {
    nlohmann::json doc = {{"context", nlohmann::json::object()}, {"benchmarks", nlohmann::json::array()}};
    doc["pairbench"] = {{"schema_version", 1},
                        {"environment",
                         {{"cpu_model", "Test CPU"},
                          {"cpu_count", 2},
                          {"gpu_name", ""},
                          {"gpu_count", 0},
                          {"cuda_driver_version", 0},
                          {"build_type", "Release"},
                          {"compiler", "GNU 12"},
                          {"compiler_flags", "-O3"},
                          {"machine_key", "k"}}},
                        {"sampling", {{"pairing", "duet"}}},
                        {"not_run", nlohmann::json::array()},
                        {"experiments", {{{"name", "demo.x"}, {"metric", "m"}, {"unit", "u"}, {"better", better}}}}};
    return doc;
  }

  PairedRound blocks(int from, int count) {
    const std::string better = d.higher_is_better ? "higher" : "lower";
    PairedRound round{doc(better), doc(better), false};
    std::normal_distribution<double> z(0, d.noise);
    for (int j = from; j < from + count; ++j) {
      const bool first_on_cpu0 = j % 4 != 0;
      for (int p = 0; p < 2; ++p) {
        const int pair = 2 * j + p;
        const bool candidate_first = p == 0;
        for (int side = 0; side < 2; ++side) {
          const bool first = (side == 1) == candidate_first;
          const int cpu = first == first_on_cpu0 ? 0 : 1;
          double log_time = z(rng) + (first ? std::log1p(d.first) : 0) + (cpu == 0 ? std::log1p(d.core) : 0) +
                            (side == 1 ? std::log1p(d.change) : 0);
          const double value = d.higher_is_better ? 1e3 * std::exp(-log_time) : 100 * std::exp(log_time);
          (side == 0 ? round.baseline : round.candidate)["benchmarks"].push_back({{"name", "demo.x/a"},
                                                                                  {"experiment", "demo.x"},
                                                                                  {"arm", "a"},
                                                                                  {"real_time", 1.0},
                                                                                  {"repetition_index", pair},
                                                                                  {"metric_value", value},
                                                                                  {"duet_pair", pair},
                                                                                  {"duet_lead", first},
                                                                                  {"duet_start_gate", true},
                                                                                  {"cpu", cpu},
                                                                                  {"process_wall_s", 0.01}});
        }
      }
    }
    return round;
  }
};

// ab's sampling on the declared rows: the planned 2 blocks (quick profile: 4 processes per side),
// then the blocks each round asks for, for as long as sample_pairs asks, up to 100 processes per side.
SequentialRow sampled(const Declared& d) {
  Generator g{d};
  const PairedRound planned = g.blocks(0, 2);
  int next = 2;
  const RunPairedRound more = [&](const std::set<std::string>&, int, int pairs) {
    const PairedRound round = g.blocks(next, pairs / 2);
    next += pairs / 2;
    return round;
  };
  PairedPlan plan;
  plan.budget_s = 1e6;  // never reached: the rounds cost microseconds
  plan.step = 2;
  plan.max_repetitions = 100;
  const SequentialDecision decision =
      sample_pairs(plan, planned.baseline, planned.candidate, more, std::chrono::steady_clock::now());
  if (decision.rows.size() != 1)
    throw std::runtime_error("expected one row, got " + std::to_string(decision.rows.size()));
  return decision.rows[0];
}

std::string said(const SequentialRow& r) {
  return to_string(r.verdict) + " at " + std::to_string(r.pairs) + " processes per side, change " +
         std::to_string(r.change) + ", order effect " + std::to_string(r.order_effect) + ": " + r.note;
}

// Identical builds, launching first makes a side 15 % slower, CPU 0 is 30 % slower: the order
// effect is measured as +15 % (its sign: the side launched first looks worse; the cores' part
// cancelled between the strata) and no change is decided.
TEST(AbOrderGuard, TheOrderEffectIsMeasuredWithItsSignAndTheCoresCancelled) {
  const SequentialRow r = sampled({.change = 0, .first = 0.15, .core = 0.30});
  EXPECT_NEAR(r.order_effect, 0.15, 0.02) << said(r);
  EXPECT_TRUE(r.verdict == Verdict::unchanged || r.verdict == Verdict::undecided) << said(r);
  // Launching first 15 % faster: the other sign.
  const SequentialRow faster = sampled({.change = 0, .first = -0.15, .core = 0.30});
  EXPECT_NEAR(faster.order_effect, -0.15, 0.02) << said(faster);
}

// A throughput (higher is better): the side launched first 15 % slower has 13 % less throughput,
// which is worse: the effect is oriented as the change, + = worse.
TEST(AbOrderGuard, TheOrderEffectIsOrientedAsTheChange) {
  const SequentialRow r = sampled({.change = 0, .first = 0.15, .core = 0.30, .higher_is_better = true});
  EXPECT_NEAR(r.order_effect, 0.15, 0.02) << said(r);
}

// A 12 % slower candidate where launching first alone moves a side by 15 %: held undecided, and
// says why. Beside a 1 % order effect the same change is a decided regression.
TEST(AbOrderGuard, AChangeNoLargerThanTheOrderEffectIsHeldAndALargerOneIsDecided) {
  const SequentialRow held = sampled({.change = 0.12, .first = 0.15, .core = 0.30});
  EXPECT_EQ(held.verdict, Verdict::undecided) << said(held);
  EXPECT_NE(held.note.find("held: launching a side first"), std::string::npos) << said(held);
  const SequentialRow decided = sampled({.change = 0.12, .first = 0.01, .core = 0.30});
  EXPECT_EQ(decided.verdict, Verdict::regression) << said(decided);
  EXPECT_NEAR(decided.order_effect, 0.01, 0.02) << said(decided);
}

// The rows of `b_blocks` as benchmark demo.x/b (a Generator names its rows demo.x/a), appended to
// `a_blocks`: a round of two benchmarks.
PairedRound with_b(PairedRound a_blocks, PairedRound b_blocks) {
  for (auto [doc, more] :
       {std::pair{&a_blocks.baseline, &b_blocks.baseline}, {&a_blocks.candidate, &b_blocks.candidate}}) {
    for (nlohmann::json row : (*more)["benchmarks"]) {
      row["name"] = "demo.x/b";
      (*doc)["benchmarks"].push_back(row);
    }
  }
  return a_blocks;
}

}  // namespace
}  // namespace pairbench::harness

namespace pairbench::harness {
namespace {

// What a pair costs where its benchmark's sides run one at a time in a duet ab (rows without a duet
// pair): both sides' processes, one after the other; where they run at once, one side's. The end
// line prices what deciding the rest would cost so (and the rounds are planned so). Declared:
// processes of 0.5 s, a budget already spent (no round); the same rows with and without their duet
// pairs. (Counted as a duet pair, one side at a time was priced at half.)
TEST(AbOrderGuard, ABenchmarkRunOneSideAtATimeCostsBothSidesPerPair) {
  const auto seconds_per_pair = [](bool duet) {
    Generator g{{.change = 0, .noise = 0.06}};  // undecided at the planned look, within the cap
    PairedRound planned = g.blocks(0, 2);
    for (auto* doc : {&planned.baseline, &planned.candidate}) {
      for (auto& row : (*doc)["benchmarks"]) {
        row["process_wall_s"] = 0.5;
        if (!duet) row.erase("duet_pair");
      }
    }
    const RunPairedRound none = [](const std::set<std::string>&, int, int) { return PairedRound{}; };
    PairedPlan plan;
    plan.budget_s = 1e-9;
    testing::internal::CaptureStderr();
    sample_pairs(plan, planned.baseline, planned.candidate, none, std::chrono::steady_clock::now());
    const std::string said = testing::internal::GetCapturedStderr();
    long long pairs = 0;
    double seconds = 0;
    const std::size_t at = said.find("would need about ");
    if (at == std::string::npos ||
        std::sscanf(said.c_str() + at, "would need about %lld more processes per side, about %lf s", &pairs,
                    &seconds) != 2 ||
        pairs <= 0) {
      ADD_FAILURE() << said;
      return 0.0;
    }
    return seconds / static_cast<double>(pairs);
  };
  EXPECT_NEAR(seconds_per_pair(false), 1.0, 0.05);
  EXPECT_NEAR(seconds_per_pair(true), 0.5, 0.05);
}

// A round runs in parts, one per number of pairs its benchmarks get, and a part may cost more than
// the planned look's processes said (each part starts its own processes): the budget is checked
// before each part, and a part's pairs are cut to what is left of it, so a round stops once the
// budget is spent instead of running every part it planned (issue 43: a budget means wall time).
// Declared: two noisy benchmarks of identical builds whose processes report 0.1 ms (so the round
// takes both, wanting different numbers of pairs), parts that take 0.6 s, a 0.5 s budget: the
// first part runs, the second does not (without the check: both).
TEST(AbOrderGuard, ARoundStopsBetweenPartsOnceTheBudgetIsSpent) {
  Generator a{{.change = 0, .noise = 0.06}}, b{{.change = 0, .noise = 0.035}};
  PairedRound planned = with_b(a.blocks(0, 2), b.blocks(0, 2));
  for (auto* doc : {&planned.baseline, &planned.candidate})
    for (auto& row : (*doc)["benchmarks"]) row["process_wall_s"] = 1e-4;  // both fit in one round
  int next = 2, parts = 0;
  std::vector<int> asked;
  const RunPairedRound more = [&](const std::set<std::string>& chosen, int, int pairs) {
    ++parts;
    asked.push_back(pairs);
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    PairedRound r = chosen.count("demo.x/a") ? a.blocks(next, pairs / 2) : b.blocks(next, pairs / 2);
    if (!chosen.count("demo.x/a")) {
      for (auto* doc : {&r.baseline, &r.candidate})
        for (auto& row : (*doc)["benchmarks"]) row["name"] = "demo.x/b";
    }
    next += pairs / 2;
    return r;
  };
  PairedPlan plan;
  plan.budget_s = 0.5;
  sample_pairs(plan, planned.baseline, planned.candidate, more, std::chrono::steady_clock::now());
  EXPECT_EQ(parts, 1) << "asked " << testing::PrintToString(asked);  // what ran, not how long it took
}

// A round ends after a part that held a suspect, so that one its part left undecided (the estimate
// of the pairs a change needs is a floor) is looked at again and sampled first in the next round,
// rather than after every cheaper part of this one has spent the budget (issue 43: a planted 10 %
// left at +10.1 % [+8.5, +11.4] after 42 pairs per side while quiet rows took the rest). Declared:
// benchmark a 10 % slower with 9 % noise per process, its parts quick; b identical builds, its part
// 0.6 s; a 0.5 s budget. The first round gives a 40 pairs (the round's cap), which leave it
// undecided, then b's part spends the budget; with the round ended after a's part, a's next part
// (18 pairs) comes before b's and decides it (without: undecided at 44 pairs per side).
TEST(AbOrderGuard, ASuspectIsLookedAtAgainBeforeTheRestOfItsRound) {
  Generator a{{.change = 0.10, .noise = 0.09}}, b{{.change = 0, .noise = 0.035}};
  PairedRound planned = with_b(a.blocks(0, 2), b.blocks(0, 2));
  for (auto* doc : {&planned.baseline, &planned.candidate})
    for (auto& row : (*doc)["benchmarks"]) row["process_wall_s"] = 1e-4;  // both fit in one round
  int next_a = 2, next_b = 2;
  std::vector<std::string> ran;
  const RunPairedRound more = [&](const std::set<std::string>& chosen, int, int pairs) {
    const bool is_a = chosen.count("demo.x/a") > 0;
    ran.push_back((is_a ? "a:" : "b:") + std::to_string(pairs));
    if (!is_a) std::this_thread::sleep_for(std::chrono::milliseconds(600));
    PairedRound r = is_a ? a.blocks(next_a, pairs / 2) : b.blocks(next_b, pairs / 2);
    if (!is_a) {
      for (auto* doc : {&r.baseline, &r.candidate})
        for (auto& row : (*doc)["benchmarks"]) row["name"] = "demo.x/b";
    }
    (is_a ? next_a : next_b) += pairs / 2;
    for (auto* doc : {&r.baseline, &r.candidate})
      for (auto& row : (*doc)["benchmarks"]) row["process_wall_s"] = 1e-4;
    return r;
  };
  PairedPlan plan;
  plan.budget_s = 0.5;
  const SequentialDecision d =
      sample_pairs(plan, planned.baseline, planned.candidate, more, std::chrono::steady_clock::now());
  const auto row =
      std::find_if(d.rows.begin(), d.rows.end(), [](const SequentialRow& r) { return r.benchmark == "demo.x/a"; });
  ASSERT_NE(row, d.rows.end());
  EXPECT_EQ(row->verdict, Verdict::regression)
      << "ran " << testing::PrintToString(ran) << ", a at " << row->pairs << " pairs: " << row->note;
}

// A benchmark whose planned processes it shared with other benchmarks (shared processes) cost a
// share of them: the others paid their start and common set-up. Alone in a round it pays them
// itself (a 16M-element input: 0.45 s a process where its share was 0.03 s), so its first part of
// a round is one block, and later parts are planned at what that block cost (issue 43: a part
// planned at the shares ran 40 s past a 180 s budget). Declared: benchmark a 10 % slower with 9 %
// noise, its planned processes shared with 7 others at 0.1 ms each; alone, 0.05 s a process and a
// part sleeps 0.05 s a pair; a 1 s budget. Asserted on what was asked, not how long it took
// (without the fix: 40 pairs at once).
TEST(AbOrderGuard, ABenchmarkThatSharedItsProcessesGetsOneBlockFirstInARound) {
  Generator a{{.change = 0.10, .noise = 0.09}};
  PairedRound planned = a.blocks(0, 2);
  for (auto* doc : {&planned.baseline, &planned.candidate}) {
    for (auto& row : (*doc)["benchmarks"]) {
      row["process_wall_s"] = 1e-4;
      row["shared_process"] = {{"benchmarks", 8}, {"id", 0}, {"position", 3}};
    }
  }
  int next = 2;
  std::vector<int> asked;
  const RunPairedRound more = [&](const std::set<std::string>&, int, int pairs) {
    asked.push_back(pairs);
    std::this_thread::sleep_for(std::chrono::milliseconds(50 * pairs));
    PairedRound r = a.blocks(next, pairs / 2);
    next += pairs / 2;
    for (auto* doc : {&r.baseline, &r.candidate})
      for (auto& row : (*doc)["benchmarks"]) row["process_wall_s"] = 0.05;
    return r;
  };
  PairedPlan plan;
  plan.budget_s = 1.0;
  sample_pairs(plan, planned.baseline, planned.candidate, more, std::chrono::steady_clock::now());
  ASSERT_FALSE(asked.empty());
  EXPECT_EQ(asked.front(), plan.step) << "asked " << testing::PrintToString(asked);
  int total = 0;
  for (int pairs : asked) total += pairs;
  EXPECT_LE(total, 22) << "asked " << testing::PrintToString(asked);  // 1 s at 0.05 s a pair, one block over
  // What that block cost, not its share, plans the next: the rounds go on (a block that overran its
  // share-based estimate 500x taught no overrun).
  EXPECT_GE(asked.size(), 2u) << "asked " << testing::PrintToString(asked);
}

}  // namespace
}  // namespace pairbench::harness
