// Sampling until decided: the always-valid decision of every look (sequential.h; docs/gate.md).
#include "harness/gate/sequential.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <limits>
#include <map>
#include <stdexcept>

namespace pairbench::harness {
namespace {

// The radius a benchmark would reach after `pairs` pairs at a per-pair variance `variance`, one
// side at `alpha`: the mixture's own for the mean; for the robust sequence an approximation (a
// bet sized for its look reaches about 1.15 sigma sqrt(2 log(1 / alpha) / n)), for scheduling only.
double radius_at(double pairs, double variance, double alpha, const SequentialDesign& design) {
  if (design.kind == SequenceKind::mean) {
    return stats::mixture_radius(pairs, std::max(0.0, pairs - 1) * variance, alpha, design.spec());
  }
  return pairs < 2 ? kInf : 1.15 * std::sqrt(variance * 2 * std::log(2 / alpha) / pairs);
}

// The fewest pairs (more than `now`) whose radius at `alpha` would be at most `target`, at the
// present variance; 1e6 where none up to there would.
int pairs_for_radius(int now, double variance, double alpha, double target, const SequentialDesign& design) {
  constexpr int kMost = 1000000;
  if (!(target > 0)) return kMost;
  if (!(variance > 0)) return now + 1;
  auto fits = [&](int n) { return radius_at(n, variance, alpha, design) <= target; };
  int low = std::max(now, 1), high = std::max(now + 1, 2);
  while (!fits(high)) {
    if (high >= kMost) return kMost;
    low = high;
    high = std::min(kMost, high * 2);
  }
  while (high - low > 1) {  // the radius falls with n past the first few pairs
    const int mid = low + (high - low) / 2;
    (fits(mid) ? high : low) = mid;
  }
  return high;
}

}  // namespace

std::vector<double> adjust_p_values(const std::vector<double>& p, Correction correction) {
  return correction == Correction::bh ? stats::benjamini_hochberg_adjust(p) : stats::holm_adjust(p);
}

void SequentialState::add_pair(double baseline_value, double current_value, bool lower_is_better) {
  if (!(std::isfinite(baseline_value) && baseline_value > 0 && std::isfinite(current_value) && current_value > 0)) {
    throw std::invalid_argument("sequential: " + benchmark + ": a process value that is not finite and > 0");
  }
  const double d = std::log(current_value) - std::log(baseline_value);
  diffs.push_back(lower_is_better ? d : -d);
  pairs = (pairs > 0 ? pairs : static_cast<int>(diffs.size()) - 1) + 1;
}

void SequentialState::add_block(const std::vector<std::pair<double, double>>& values, bool lower_is_better) {
  if (values.empty()) throw std::invalid_argument("sequential: " + benchmark + ": an empty block");
  double sum = 0;
  for (const auto& [baseline_value, current_value] : values) {
    if (!(std::isfinite(baseline_value) && baseline_value > 0 && std::isfinite(current_value) && current_value > 0)) {
      throw std::invalid_argument("sequential: " + benchmark + ": a process value that is not finite and > 0");
    }
    sum += std::log(current_value) - std::log(baseline_value);
  }
  const double d = sum / static_cast<double>(values.size());
  const int before = processes_per_side();
  diffs.push_back(lower_is_better ? d : -d);
  pairs = before + static_cast<int>(values.size());
}

int SequentialDecision::count(Verdict v) const {
  return static_cast<int>(
      std::count_if(rows.begin(), rows.end(), [v](const SequentialRow& r) { return r.verdict == v; }));
}

std::vector<std::size_t> SequentialDecision::to_sample() const {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].verdict == Verdict::undecided && rows[i].within_cap) out.push_back(i);
  }
  std::stable_sort(out.begin(), out.end(), [this](std::size_t a, std::size_t b) {
    return rows[a].pairs_needed - rows[a].pairs < rows[b].pairs_needed - rows[b].pairs;
  });
  return out;
}

namespace {

// One benchmark's sequence at this look, whichever kind computed it.
struct Sequence {
  int n = 0;
  double mean = 0;  // the centre: the mean, or the robust estimate
  double sd = 0;    // the per-pair noise: standard deviation, or robust standard deviation
  double low = -kInf, high = kInf;
  double p_greater = 1, p_less = 1;
};

// `design` with its cap counted in observations where each of `s`'s diffs is a block of pairs.
SequentialDesign in_observations(const SequentialDesign& design, double pairs_per_diff) {
  SequentialDesign d = design;
  d.max_pairs = std::max(2, static_cast<int>(std::floor(design.max_pairs / pairs_per_diff + 1e-9)));
  return d;
}

Sequence sequence_of(const SequentialState& s, double interval_alpha, double test_alpha,
                     const SequentialDesign& design) {
  if (design.kind == SequenceKind::mean) {
    const stats::AlwaysValidMean m = stats::always_valid_mean(s.diffs, interval_alpha, design.spec());
    return {m.n, m.mean, m.sd, m.low, m.high, m.p_greater, m.p_less};
  }
  stats::LocationSpec spec = design.location;
  spec.target_n = design.max_pairs;
  const stats::AlwaysValidLocation l = stats::always_valid_location(s.diffs, interval_alpha, test_alpha, spec);
  return {l.n, l.estimate, l.scale, l.low, l.high, l.p_greater, l.p_less};
}

}  // namespace

std::vector<std::size_t> affordable_cheapest_first(const std::vector<SequentialRow>& rows,
                                                   const std::vector<bool>& eligible, const std::vector<double>& cost,
                                                   double budget_s) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (eligible[i]) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return rows[a].pairs_needed < rows[b].pairs_needed; });
  std::vector<std::size_t> chosen;
  double spent = 0;
  for (const std::size_t i : order) {
    if (spent + cost[i] > budget_s) continue;
    spent += cost[i];
    chosen.push_back(i);
  }
  return chosen;
}

bool sampling_suspect(const SequentialRow& row) {
  return std::fabs(std::log1p(row.change)) >= std::log1p(row.threshold);
}

std::vector<std::size_t> decidable_first(const std::vector<SequentialRow>& rows, const std::vector<bool>& eligible,
                                         const std::vector<double>& seconds_per_pair, double budget_s, int step,
                                         int max_pairs) {
  struct ToDecide {
    bool suspect;    // its estimate lies beyond its threshold: a change, if it is one, to be told first
    double seconds;  // to reach its estimate
    std::size_t row;
  };
  std::vector<ToDecide> to_decide;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (!eligible[i] || rows[i].pairs_needed > max_pairs) continue;
    const int more = std::max(step, rows[i].pairs_needed - rows[i].pairs);
    to_decide.push_back({sampling_suspect(rows[i]), more * seconds_per_pair[i], i});
  }
  std::stable_sort(to_decide.begin(), to_decide.end(), [&](const ToDecide& a, const ToDecide& b) {
    if (a.suspect != b.suspect) return a.suspect;
    if (a.suspect && rows[a.row].standard_errors != rows[b.row].standard_errors)
      return rows[a.row].standard_errors > rows[b.row].standard_errors;
    return a.seconds < b.seconds;
  });
  std::vector<std::size_t> chosen;
  double committed = 0;
  for (const ToDecide& t : to_decide) {
    if (committed + t.seconds > budget_s) continue;  // a cheaper one after it may fit
    committed += t.seconds;
    chosen.push_back(t.row);
  }
  if (!chosen.empty()) return chosen;
  std::vector<double> cost(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) cost[i] = step * seconds_per_pair[i];
  return affordable_cheapest_first(rows, eligible, cost, budget_s);
}

std::vector<int> round_pairs(const std::vector<SequentialRow>& rows, const std::vector<std::size_t>& chosen,
                             const std::vector<double>& seconds_per_pair, double budget_s, int step, int round_cap,
                             int max_pairs) {
  step = std::max(1, step);
  round_cap = std::max(step, round_cap);
  std::vector<int> out;
  double cost = 0;
  for (const std::size_t i : chosen) {
    const SequentialRow& r = rows[i];
    int want = step;
    if (r.pairs_needed <= max_pairs) {
      const int more = std::clamp(r.pairs_needed - r.pairs, step, round_cap);
      want = std::min(round_cap, (more + step - 1) / step * step);  // whole steps: whole blocks
    }
    want = std::max(step, std::min(want, (max_pairs - r.pairs) / step * step));
    out.push_back(want);
    cost += want * seconds_per_pair[i];
  }
  for (std::size_t k = out.size(); k-- > 0 && cost > budget_s;) {
    while (out[k] > step && cost > budget_s) {
      out[k] -= step;
      cost -= step * seconds_per_pair[chosen[k]];
    }
  }
  return out;
}

BudgetProjection project_budget(const std::vector<SequentialRow>& rows, const std::vector<double>& seconds_per_pair,
                                int max_pairs) {
  BudgetProjection out;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].verdict != Verdict::undecided) continue;
    ++out.undecided;
    if (rows[i].pairs_needed > max_pairs) continue;
    ++out.within_cap;
    const int more = std::max(0, rows[i].pairs_needed - rows[i].pairs);
    out.more_pairs += more;
    out.seconds += more * seconds_per_pair[i];
  }
  return out;
}

// The launch order's own effect over the blocks (log, oriented as the diffs): the mean of the two
// strata's means (SequentialState::order_strata), which cancels the cores' difference; the plain
// mean where no stratum is known; NaN (no guard) where there are fewer than two blocks or only one
// stratum, since there the order and the cores cannot be told apart.
namespace {
double order_effect_of(const SequentialState& s) {
  if (s.order_effects.size() < 2) return std::numeric_limits<double>::quiet_NaN();
  double sum[3] = {0, 0, 0};
  int count[3] = {0, 0, 0};
  for (std::size_t i = 0; i < s.order_effects.size(); ++i) {
    const int stratum = i < s.order_strata.size() ? s.order_strata[i] : 0;
    sum[stratum + 1] += s.order_effects[i];
    ++count[stratum + 1];
  }
  if (count[0] == 0 && count[2] == 0) return sum[1] / count[1];
  if (count[0] == 0 || count[2] == 0 || count[1] > 0) return std::numeric_limits<double>::quiet_NaN();
  return (sum[0] / count[0] + sum[2] / count[2]) / 2;
}
// The guard against a side effect of the pairing: a change no larger than what merely launching
// a side first (with its placement) did to it in the same blocks is held undecided. Returns why
// it held the row ("" where it did not); sets the row's order effect where its blocks show one.
std::string hold_order_effect(const SequentialState& s, const Sequence& m, SequentialRow& r) {
  const double order = order_effect_of(s);
  if (!std::isfinite(order)) return "";
  r.order_effect = std::expm1(order);
  if ((r.verdict != Verdict::regression && r.verdict != Verdict::improvement) || std::fabs(order) < std::fabs(m.mean))
    return "";
  char buf[240];
  std::snprintf(buf, sizeof buf,
                "held: launching a side first moved it by %+.1f %% in these blocks, as much as the change "
                "(%+.1f %%): the pairing's side effect, not the code, may be what was measured",
                100 * r.order_effect, 100 * r.change);
  r.verdict = Verdict::undecided;
  return buf;
}

// The values the robust sequence needs before its capital can reach `bound` (stats::
// always_valid_location), were every value `gap` from the value tested with noise `sigma` and
// every bet the largest: the first two bet against the wide first clip (a factor of 2), the rest
// against clip_k robust SDs, and each moves the capital by at most 1 + lambda_max * u, u the gap
// in clips (at most 1); then one more, since noise takes some values inside the clip. A lower
// bound in spirit: the estimate a round is planned on must not promise a decision the capital
// cannot give, which the radius approximation alone does at a few pairs (docs/gate.md).
int observations_to_reach(double bound, double gap, double sigma, const SequentialDesign& design) {
  constexpr int kMost = 1000000;
  if (!(bound > 1)) return 1;
  if (!(gap > 0)) return kMost;
  const stats::LocationSpec& spec = design.location;
  const double target = std::log(bound), later = spec.clip_k * std::max(spec.min_sigma, sigma);
  double log_capital = 0;
  for (int n = 1; n < kMost; ++n) {
    const double u = std::min(1.0, gap / (n <= 2 ? spec.first_clip : later));
    log_capital += std::log1p(spec.lambda_max * u);
    if (log_capital >= target) return n + 1;
  }
  return kMost;
}

// An undecided row's plan: the processes per side that would decide it at this noise (excluding 0
// at Holm's strictest level where the change looks as large as the threshold, else an interval
// inside +-threshold), whether the cap allows them, and its note. `k`: processes per side per
// observation.
void plan_undecided(SequentialRow& r, const Sequence& m, double k, const std::string& held, const GateOptions& options,
                    double family, const SequentialDesign& design) {
  const double interval_alpha = 1 - options.interval_level;
  const double log_threshold = std::log1p(r.threshold);
  const SequentialDesign obs = in_observations(design, k);
  auto to_pairs = [k](int observations) {
    return observations >= 1000000 ? observations : static_cast<int>(std::ceil(observations * k - 1e-9));
  };
  const double variance = m.sd * m.sd;
  const double size = std::fabs(m.mean);
  const bool change = size >= log_threshold;
  // The robust sequence cannot decide before its capital can reach its bound (2 / alpha for an
  // interval, family / alpha for Holm's strictest test, however clear the change):
  // observations_to_reach.
  const bool robust = design.kind == SequenceKind::robust;
  const double sigma = m.sd;
  const int fewest = !robust  ? 0
                     : change ? observations_to_reach(family / options.alpha, size, sigma, design)
                              : observations_to_reach(2 / interval_alpha, log_threshold - size, sigma, design);
  const int needed =
      to_pairs(m.n < 2  ? std::max(2, fewest)
               : change ? std::max(fewest, pairs_for_radius(m.n, variance, options.alpha / family, size, obs))
                        : std::max(fewest, pairs_for_radius(m.n, variance, interval_alpha, log_threshold - size, obs)));
  r.pairs_needed = needed;
  // Whether it could be decided within the cap at the low end of what the noise may turn out to
  // be, and either way the change may turn out: unchanged were it 0, or significant were it as
  // large as it looks.
  int could = needed;
  if (needed > design.max_pairs && m.n >= 2) {
    const double low_variance = low_end_variance(variance, m.n);
    const double low_sigma = std::sqrt(low_variance);
    could = to_pairs(std::max(robust ? observations_to_reach(2 / interval_alpha, log_threshold, low_sigma, design) : 0,
                              pairs_for_radius(m.n, low_variance, interval_alpha, log_threshold, obs)));
    if (size > 0)
      could = std::min(
          could, to_pairs(std::max(robust ? observations_to_reach(family / options.alpha, size, low_sigma, design) : 0,
                                   pairs_for_radius(m.n, low_variance, options.alpha / family, size, obs))));
  }
  r.within_cap = could <= design.max_pairs && r.pairs < design.max_pairs;
  r.note = held.empty() ? resolution_text(r, options.interval_level)
                        : held + "; " + resolution_text(r, options.interval_level);
  if (r.within_cap) return;
  char buf[160];
  if (needed >= 1000000) {
    std::snprintf(buf, sizeof buf, "; no number of processes decides it at this noise");
  } else {
    std::snprintf(buf, sizeof buf, "; about %d processes per side would decide it, more than the cap of %d", needed,
                  design.max_pairs);
  }
  r.note += buf;
}

// |estimate| over its standard error, the variance moderated toward `prior_variance` with
// `prior_df` observations' weight; 0 where there is no variance to go by.
double standard_errors_of(const Sequence& m, double prior_variance, double prior_df) {
  if (m.n < 1 || !std::isfinite(m.mean)) return 0;
  const double own_df = std::max(0, m.n - 1);
  const double own = own_df > 0 && std::isfinite(m.sd) ? m.sd * m.sd : 0;
  const double weight = prior_variance > 0 ? prior_df : 0;
  if (own_df + weight <= 0) return 0;
  const double variance = (weight * prior_variance + own_df * own) / (weight + own_df);
  if (!(variance > 0)) return m.mean != 0 ? std::numeric_limits<double>::infinity() : 0;
  return std::fabs(m.mean) / std::sqrt(variance / m.n);
}

}  // namespace

SequentialDecision decide_sequential(const std::vector<SequentialState>& states, const GateOptions& options,
                                     const SequentialDesign& design) {
  const double interval_alpha = 1 - options.interval_level;  // two-sided: 90 % leaves 5 % each side
  const double family = static_cast<double>(states.size());
  SequentialDecision out;
  std::vector<Sequence> intervals;
  std::vector<double> p_worse, p_better;
  // The robust test's bets are sized for Holm's strictest level, the one a lone change must reach.
  const double test_alpha = std::min(0.5, options.alpha / std::max(1.0, family));
  // Processes per side per observation (2 for ab's crossover blocks): the cap and the estimates
  // are in observations, what the rows report in processes per side.
  auto per_diff = [](const SequentialState& s) {
    return s.diffs.empty() ? 1.0 : std::max(1.0, s.processes_per_side() / static_cast<double>(s.diffs.size()));
  };
  for (const SequentialState& s : states) {
    intervals.push_back(sequence_of(s, interval_alpha, test_alpha, in_observations(design, per_diff(s))));
    p_worse.push_back(intervals.back().p_greater);
    p_better.push_back(intervals.back().p_less);
  }
  const std::vector<double> adj_worse = adjust_p_values(p_worse, options.correction),
                            adj_better = adjust_p_values(p_better, options.correction);
  // The median row's variance per observation, the prior that each row's standard errors are
  // moderated toward (SequentialRow::standard_errors), with kPriorDf observations' weight.
  constexpr double kPriorDf = 4;
  std::vector<double> variances;
  for (const Sequence& m : intervals) {
    if (m.n >= 2 && std::isfinite(m.sd)) variances.push_back(m.sd * m.sd);
  }
  double prior_variance = 0;
  if (!variances.empty()) {
    std::nth_element(variances.begin(), variances.begin() + static_cast<std::ptrdiff_t>(variances.size() / 2),
                     variances.end());
    prior_variance = variances[variances.size() / 2];
  }
  for (std::size_t i = 0; i < states.size(); ++i) {
    const SequentialState& s = states[i];
    const Sequence& m = intervals[i];
    SequentialRow r;
    r.benchmark = s.benchmark;
    r.pairs = s.processes_per_side();
    r.seconds = s.seconds;
    r.threshold = s.threshold;
    r.change = std::expm1(m.mean);
    r.low = std::isfinite(m.low) ? std::expm1(m.low) : -1;
    r.high = std::isfinite(m.high) ? std::expm1(m.high) : kInf;
    r.resolution = std::isfinite(m.low) && std::isfinite(m.high) ? std::max(r.high, -r.low) : kInf;
    r.p_worse = m.p_greater;
    r.p_better = m.p_less;
    r.p_adjusted = adj_worse[i];
    r.standard_errors = standard_errors_of(m, prior_variance, kPriorDf);
    const bool slower = adj_worse[i] < options.alpha, faster = adj_better[i] < options.alpha;
    r.verdict = sequential_verdict(slower, faster, m.low, m.high, std::log1p(s.threshold));
    const std::string held = hold_order_effect(s, m, r);
    if (r.verdict == Verdict::undecided) plan_undecided(r, m, per_diff(s), held, options, family, design);
    out.rows.push_back(std::move(r));
  }
  return out;
}

TwoStage split_two_stage(const GateOptions& options, double first_share) {
  if (!(first_share > 0 && first_share < 1))
    throw std::invalid_argument("split_two_stage: first_share must be in (0, 1)");
  TwoStage t{options, options};
  const double miss = 1 - options.interval_level;
  t.first_look.alpha = options.alpha * first_share;
  t.first_look.interval_level = 1 - miss * first_share;
  t.first_look.resolution = false;  // two builds, one run each: +-threshold, as the sequence decides
  t.sequence.alpha = options.alpha * (1 - first_share);
  t.sequence.interval_level = 1 - miss * (1 - first_share);
  return t;
}

bool rank_can_decide(int n1, int n2, double level) {
  if (n1 < 1 || n2 < 1) return false;
  double combinations = 1;  // C(n1 + n2, n1), exactly enough for the few processes here
  for (int k = 1; k <= n1; ++k) combinations = combinations * (n2 + k) / k;
  return 1 / combinations <= level;
}

void merge_first_look(SequentialDecision& d, const GateReport& first_look) {
  // The stage's alpha as for one benchmark: the least a rank test must be able to reach. (Over
  // the gate's benchmarks it would forbid the nightly's 9 and 9 at 335 benchmarks, and with it
  // the planned look's whole power there.)
  const double level = first_look.options.alpha;
  std::map<std::string, const BenchmarkVerdict*> decided;
  for (const BenchmarkVerdict& v : first_look.rows) {
    if (v.instrument != Instrument::time) continue;
    const bool change = v.verdict == Verdict::regression || v.verdict == Verdict::improvement;
    if (v.verdict == Verdict::unchanged || (change && rank_can_decide(v.baseline_samples, v.current_samples, level))) {
      decided[v.benchmark] = &v;
    }
  }
  for (SequentialRow& r : d.rows) {
    const auto it = decided.find(r.benchmark);
    if (it == decided.end()) continue;
    const BenchmarkVerdict& v = *it->second;
    r.verdict = v.verdict;
    r.change = v.slowdown, r.low = v.slowdown_low, r.high = v.slowdown_high;
    r.resolution = std::max(std::fabs(v.slowdown_low), std::fabs(v.slowdown_high));
    r.p_adjusted = v.p_adjusted;
    r.pairs_needed = 0;
    r.within_cap = true;
    r.first_look = true;
    r.note.clear();
  }
}

int hold_changes_ranks_cannot_show(GateReport& report) {
  int held = 0;
  for (BenchmarkVerdict& v : report.rows) {
    if (v.instrument != Instrument::time) continue;
    if (v.verdict != Verdict::regression && v.verdict != Verdict::improvement) continue;
    if (rank_can_decide(v.baseline_samples, v.current_samples, report.options.alpha)) continue;
    char note[240];
    std::snprintf(note, sizeof note,
                  "%s held undecided: %d and %d processes are too few for a rank test to reach alpha %g, and a t "
                  "statistic on so few cannot tell a change from processes split by chance (docs/gate.md)",
                  v.verdict == Verdict::regression ? "regression" : "improvement", v.baseline_samples,
                  v.current_samples, report.options.alpha);
    v.verdict = Verdict::undecided;
    v.note = note;
    ++held;
  }
  return held;
}

std::string resolution_text(const SequentialRow& row, double interval_level) {
  char buf[200];
  if (std::isfinite(row.resolution)) {
    std::snprintf(buf, sizeof buf, "no change beyond \u00b1%.1f %% at %.0f %% (%d processes per side, %.0f s)",
                  100 * row.resolution, 100 * interval_level, row.pairs, row.seconds);
  } else {
    std::snprintf(buf, sizeof buf, "no bound on the change yet at %.0f %% (%d processes per side, %.0f s)",
                  100 * interval_level, row.pairs, row.seconds);
  }
  return buf;
}

Verdict sequential_verdict(bool slower, bool faster, double low, double high, double log_threshold) {
  if (slower && high >= log_threshold) return Verdict::regression;
  if (faster && low <= -log_threshold) return Verdict::improvement;
  if (high < log_threshold && low > -log_threshold) return Verdict::unchanged;
  return Verdict::undecided;
}

double low_end_variance(double variance, int n) {
  const double a = 2.0 / (9 * (n - 1.0));
  return variance * std::pow(std::max(0.0, 1 - a - 1.2816 * std::sqrt(a)), 3);
}

}  // namespace pairbench::harness
