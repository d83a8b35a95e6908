// Sampling until decided against a fixed baseline (gate/sequential_unpaired.h, `run --baseline
// --budget`): the p-value only falls as looks go on, the combined interval covers at every look,
// and on synthetic gates with a known answer both ways: an unchanged build is never a regression
// (whole gate, the nightly's shape, a look after every round), a planted +10 % is found.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "harness/sampling/unpaired.h"
#include "harness/gate/sequential_unpaired.h"

namespace pairbench::harness {
namespace {

// The loop of `run --baseline --budget` on synthetic benchmarks: n_b baseline processes, the
// current side from `start` processes, +2 per round to each benchmark still worth sampling (the
// budget unlimited), up to `cap`; a look after every round. `shift[b]` is benchmark b's true log
// change; `cv[b]` its process noise; `outliers` of the processes 10-60 % slower (a neighbour).
struct Loop {
  SequentialDecision last;
  bool any_regression_unplanted = false;  // at any look, among the benchmarks with shift 0
  int looks = 0;
};

Loop run_loop(const std::vector<double>& cv, const std::vector<double>& shift, int n_b, int start, int cap,
              double outliers, std::mt19937_64& rng, const GateOptions& options = {}) {
  std::normal_distribution<double> z(0, 1);
  std::uniform_real_distribution<double> u(0, 1);
  auto draw = [&](std::size_t b, double s) {
    double v = cv[b] * z(rng) + s;
    if (u(rng) < outliers) v += std::log(1.1 + 0.5 * u(rng));
    return 100 * std::exp(v);
  };
  std::vector<UnpairedState> states(cv.size());
  for (std::size_t b = 0; b < cv.size(); ++b) {
    states[b].benchmark = "b" + std::to_string(b);
    for (int p = 0; p < n_b; ++p) states[b].add_baseline(draw(b, 0));
    for (int p = 0; p < start; ++p) states[b].add_current(draw(b, shift[b]));
    states[b].seconds = start;
  }
  UnpairedDesign design;
  design.max_processes = cap;
  Loop out;
  for (;;) {
    out.last = decide_sequential_unpaired(states, options, design);
    ++out.looks;
    for (std::size_t b = 0; b < states.size(); ++b) {
      if (shift[b] == 0 && out.last.rows[b].verdict == Verdict::regression) out.any_regression_unplanted = true;
    }
    const std::vector<std::string> next = next_round(out.last, states, 2, 1e18, cap);
    if (next.empty()) return out;
    for (const std::string& name : next) {
      const auto b = static_cast<std::size_t>(std::stoi(name.substr(1)));
      for (int k = 0; k < 2 && static_cast<int>(states[b].current.size()) < cap; ++k) {
        states[b].add_current(draw(b, shift[b]));
        states[b].seconds += 1;
      }
    }
  }
}

// The measured per-benchmark noise of this VM (what gate_simulation draws from).
std::vector<double> measured_noise(std::size_t n, std::mt19937_64& rng) {
  std::vector<double> all;
  std::ifstream in(std::string(FIXTURES_DIR) + "/process_noise_2vcpu_vm.txt");
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') all.push_back(std::stod(line));
  }
  std::vector<double> out(n);
  for (double& c : out) c = all.at(rng() % all.size());
  return out;
}

TEST(SequentialUnpaired, PValueOnlyFallsAsLooksGoOn) {
  std::mt19937_64 rng(11);
  std::normal_distribution<double> z(0, 1);
  for (const double change : {0.0, 0.03, -0.03, 0.10}) {
    UnpairedState s;
    s.benchmark = "b";
    for (int p = 0; p < 9; ++p) s.add_baseline(100 * std::exp(0.03 * z(rng)));
    double last_worse = 1, last_better = 1;
    for (int n = 1; n <= 40; ++n) {
      s.add_current(100 * std::exp(0.03 * z(rng) + change));
      const double worse = unpaired_p_value(s, true), better = unpaired_p_value(s, false);
      EXPECT_LE(worse, last_worse * (1 + 1e-9)) << change << " at " << n;
      EXPECT_LE(better, last_better * (1 + 1e-9)) << change << " at " << n;
      last_worse = worse, last_better = better;
    }
    if (change >= 0.10) {
      EXPECT_LT(last_worse, 1e-3);  // bounded by the baseline's 9 processes (t on 8 degrees of freedom)
    }
    if (change == 0.0) {
      EXPECT_GT(last_worse, 1e-3);
    }
  }
}

// Over 20 looks the 90 % combined interval misses the true change in at most 10 % of sequences
// (the union bound and Ville's inequality make it conservative), where the re-run fixed t
// interval would miss far more often.
TEST(SequentialUnpaired, CombinedIntervalCoversAtEveryLookAtOnce) {
  std::mt19937_64 rng(12);
  std::normal_distribution<double> z(0, 1);
  constexpr int kRuns = 2000;
  int missed = 0;
  const double truth = 0.02;
  for (int run = 0; run < kRuns; ++run) {
    UnpairedState s;
    s.benchmark = "b";
    for (int p = 0; p < 9; ++p) s.add_baseline(std::exp(0.05 * z(rng)));
    for (int p = 0; p < 4; ++p) s.add_current(std::exp(0.05 * z(rng) + truth));
    bool miss = false;
    for (int look = 0; look < 20; ++look) {
      const SequentialDecision d = decide_sequential_unpaired({s}, GateOptions{});
      const double low = std::log1p(d.rows[0].low), high = std::log1p(std::min(d.rows[0].high, 1e300));
      miss = miss || truth < low || truth > high;
      for (int k = 0; k < 2; ++k) s.add_current(std::exp(0.05 * z(rng) + truth));
    }
    missed += miss;
  }
  EXPECT_LE(missed, kRuns / 10) << missed << " of " << kRuns;
}

// The nightly's shape: 335 benchmarks, a baseline of 9 processes, the current run from 9 to at
// most 30, this VM's measured noise and 3 % outlier processes, a look after every round: no gate
// ever shows a false regression (the procedure's bound is 1 % of gates; docs/gate.md gives the
// simulated rate over many more gates).
TEST(SequentialUnpaired, UnchangedNeverARegressionAtTheNightlyShape) {
  std::mt19937_64 rng(13);
  const std::vector<double> cv = measured_noise(335, rng);
  const std::vector<double> none(335, 0.0);
  int failed = 0, unchanged = 0, undecided = 0, regression = 0;
  constexpr int kGates = 12;
  for (int g = 0; g < kGates; ++g) {
    const Loop l = run_loop(cv, none, 9, 9, 30, 0.03, rng);
    failed += l.any_regression_unplanted;
    unchanged += l.last.count(Verdict::unchanged);
    undecided += l.last.count(Verdict::undecided);
    regression += l.last.count(Verdict::regression);
    for (const SequentialRow& r : l.last.rows) {
      EXPECT_LE(r.pairs, 30);
      EXPECT_TRUE(r.verdict == Verdict::unchanged || r.verdict == Verdict::undecided ||
                  r.verdict == Verdict::improvement)
          << r.benchmark << " " << r.note;
    }
  }
  EXPECT_EQ(failed, 0);
  EXPECT_EQ(regression, 0);
  EXPECT_GT(unchanged, 0);  // some decide (quiet benchmarks)
  RecordProperty("unchanged", unchanged);
  RecordProperty("undecided", undecided);
}

// Valid at a loose level too, where a test can see a rate: at alpha = 0.2, 26 benchmarks, 300
// A/A gates with a look after every round, the gates with a false regression stay below 20 %.
TEST(SequentialUnpaired, WholeGateRateBelowAlphaAtALooseLevel) {
  std::mt19937_64 rng(14);
  const std::vector<double> cv = measured_noise(26, rng);
  const std::vector<double> none(26, 0.0);
  GateOptions options;
  options.alpha = 0.2;
  int failed = 0;
  constexpr int kGates = 300;
  for (int g = 0; g < kGates; ++g) failed += run_loop(cv, none, 9, 9, 30, 0.0, rng, options).any_regression_unplanted;
  EXPECT_LE(failed, kGates / 5) << failed << " of " << kGates;
}

TEST(SequentialUnpaired, APlantedTenPercentIsFoundAndTheRestIsNot) {
  for (unsigned seed : {1u, 2u, 3u}) {
    std::mt19937_64 rng(seed);
    std::vector<double> cv(26, 0.03), shift(26, 0.0);
    shift[0] = std::log1p(0.10);
    const Loop l = run_loop(cv, shift, 9, 9, 30, 0.0, rng);
    const SequentialRow& r = l.last.rows[0];
    EXPECT_EQ(r.verdict, Verdict::regression) << seed << " " << r.note;
    EXPECT_GT(r.low, 0.0);
    EXPECT_GT(r.change, 0.05);
    EXPECT_LT(r.p_adjusted, 0.01);
    EXPECT_FALSE(l.any_regression_unplanted);
    EXPECT_EQ(l.last.count(Verdict::regression), 1);
  }
}

TEST(SequentialUnpaired, QuietUnchangedEndsUnchangedWithinTheCap) {
  std::mt19937_64 rng(4);
  const Loop l = run_loop(std::vector<double>(26, 0.01), std::vector<double>(26, 0.0), 9, 9, 30, 0.0, rng);
  EXPECT_EQ(l.last.count(Verdict::regression), 0);
  EXPECT_GE(l.last.count(Verdict::unchanged), 24);
  for (const SequentialRow& r : l.last.rows) {
    if (r.verdict == Verdict::unchanged) {
      EXPECT_LT(r.resolution, 0.05);
    }
  }
}

// A baseline whose own interval is wider than the threshold (noisy, or a large run-to-run noise):
// no number of processes of this run decides it, it says so, and it is not sampled.
TEST(SequentialUnpaired, ABaselineTooWideIsNotSampled) {
  std::mt19937_64 rng(5);
  std::normal_distribution<double> z(0, 1);
  UnpairedState s;
  s.benchmark = "b0";
  for (int p = 0; p < 9; ++p) s.add_baseline(100 * std::exp(0.01 * z(rng)));
  for (int p = 0; p < 9; ++p) s.add_current(100 * std::exp(0.01 * z(rng)));
  s.seconds = 9;
  s.run_variance = 0.05 * 0.05;  // 5 % run to run: the difference of two runs carries it twice
  s.run_variance_runs = 10;
  const SequentialDecision d = decide_sequential_unpaired({s}, GateOptions{});
  ASSERT_EQ(d.rows.size(), 1u);
  EXPECT_EQ(d.rows[0].verdict, Verdict::undecided);
  EXPECT_FALSE(d.rows[0].within_cap);
  EXPECT_NE(d.rows[0].note.find("no number of processes of this run decides it"), std::string::npos) << d.rows[0].note;
  EXPECT_TRUE(next_round(d, {s}, 2, 1e9, 30).empty());
}

// Sampling follows the row's within-cap judgement, not its point estimate: a row whose estimate at
// its noise so far is "no number decides it" but which the low end of that noise decides within
// the cap gets its round (CI once saw such a row left unsampled with no word why); a row not
// within the cap gets none.
TEST(SequentialUnpaired, ARowWithinTheCapIsSampledWhateverItsPointEstimate) {
  UnpairedState s;
  s.benchmark = "b0";
  for (int p = 0; p < 12; ++p) s.add_baseline(100 + p % 3);
  for (int p = 0; p < 3; ++p) s.add_current(100 + p);
  s.seconds = 0.03;
  SequentialDecision d;
  SequentialRow r;
  r.benchmark = "b0";
  r.verdict = Verdict::undecided;
  r.pairs = 3;
  r.pairs_needed = 1000000;
  r.within_cap = true;
  d.rows.push_back(r);
  EXPECT_EQ(next_round(d, {s}, 2, 20, 7), std::vector<std::string>{"b0"});
  d.rows[0].within_cap = false;
  EXPECT_TRUE(next_round(d, {s}, 2, 20, 7).empty());
  d.rows[0].within_cap = true;
  d.rows[0].pairs = 7;  // at the cap
  EXPECT_TRUE(next_round(d, {s}, 2, 20, 7).empty());
}

TEST(SequentialUnpaired, BadInputIsRefused) {
  UnpairedState s;
  s.benchmark = "b0";
  EXPECT_THROW(s.add_current(0), std::invalid_argument);
  EXPECT_THROW(s.add_baseline(std::nan("")), std::invalid_argument);
  s.add_baseline(1);
  s.add_current(1);
  EXPECT_THROW(decide_sequential_unpaired({s}, GateOptions{}), std::invalid_argument);  // one baseline process
}

TEST(SequentialUnpaired, RoundsAreMergedEachProcessInItsOwnPlace) {
  RunOutcome run, round;
  for (int r = 0; r < 4; ++r) {
    Sample s;
    s.benchmark = "x";
    s.repetition = r;
    s.sequence = r;
    run.samples.push_back(s);
  }
  run.completed_processes = run.planned_processes = 4;
  for (int r = 0; r < 2; ++r) {
    Sample s;
    s.benchmark = "x";
    s.repetition = r;
    s.sequence = r;
    round.samples.push_back(s);
  }
  round.completed_processes = round.planned_processes = 2;
  round.failed_processes = 1;
  merge_round(run, round);
  ASSERT_EQ(run.samples.size(), 6u);
  EXPECT_EQ(run.samples[4].repetition, 4);
  EXPECT_EQ(run.samples[5].repetition, 5);
  EXPECT_EQ(run.samples[5].sequence, 5);
  EXPECT_EQ(run.completed_processes, 6u);
  EXPECT_EQ(run.failed_processes, 1);
}

}  // namespace
}  // namespace pairbench::harness
