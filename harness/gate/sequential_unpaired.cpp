// Sampling until decided against a fixed baseline: the always-valid decision of every look
// (sequential_unpaired.h; docs/gate.md).
#include "harness/gate/sequential_unpaired.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>
#include <utility>

namespace pairbench::harness {
namespace {

constexpr int kMostProcesses = 1000000;

void check_value(const std::string& benchmark, double v) {
  if (!(std::isfinite(v) && v > 0)) {
    throw std::invalid_argument("sequential: " + benchmark + ": a process value that is not finite and > 0");
  }
}

// The baseline's mean log value and the standard error of the difference's baseline part: its
// processes' variance over n_b plus twice the run-to-run variance, with Welch-Satterthwaite
// degrees of freedom (n_b - 1 for the processes, runs - 1 for the run part).
struct BaselinePart {
  double mean = 0, se = 0, df = 1;
  int n = 0;
};

BaselinePart baseline_part(const UnpairedState& s) {
  const auto n = s.baseline.size();
  if (n < 2) throw std::invalid_argument("sequential: " + s.benchmark + ": fewer than 2 baseline processes");
  BaselinePart b;
  b.n = static_cast<int>(n);
  b.mean = std::accumulate(s.baseline.begin(), s.baseline.end(), 0.0) / static_cast<double>(n);
  double ss = 0;
  for (double v : s.baseline) {
    if (!std::isfinite(v)) throw std::invalid_argument("sequential: " + s.benchmark + ": a baseline value not finite");
    ss += (v - b.mean) * (v - b.mean);
  }
  // The process variance: the baseline's own, pooled with the benchmark's history where known.
  double process_df = static_cast<double>(n - 1);
  double variance = ss / process_df;
  if (s.history_df > 0 && s.history_variance > 0) {
    variance = (s.history_df * s.history_variance + ss) / (s.history_df + process_df);
    process_df += s.history_df;
  }
  const double process_part = variance / static_cast<double>(n);
  const double run_part = s.run_variance > 0 ? 2 * s.run_variance : 0;
  b.se = std::sqrt(process_part + run_part);
  b.df = process_df;
  if (run_part > 0 && s.run_variance_runs >= 2) {
    const double denominator =
        process_part * process_part / process_df + run_part * run_part / (s.run_variance_runs - 1.0);
    if (denominator > 0) b.df = std::pow(process_part + run_part, 2) / denominator;
  } else if (run_part > 0) {
    // An exact run part: the degrees of freedom of the process part, scaled by its share.
    b.df = process_df * std::pow(process_part + run_part, 2) / std::max(process_part * process_part, 1e-300);
  }
  b.df = std::max(b.df, 1.0);
  return b;
}

// The current side's running sums after every value: each prefix is a look.
struct Prefixes {
  std::vector<double> mean, ss;
  explicit Prefixes(const std::vector<double>& x) {
    double m = 0, q = 0;
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (!std::isfinite(x[i])) throw std::invalid_argument("sequential: a current value not finite");
      const double n = static_cast<double>(i + 1), delta = x[i] - m;  // Welford
      m += delta / n;
      q += delta * (x[i] - m);
      mean.push_back(m);
      ss.push_back(q);
    }
  }
  // The running intersection of the 1 - alpha sequence: its lower (upper) end after the last look.
  double low(double alpha, const stats::MixtureSpec& spec) const {
    double out = -kInf;
    for (std::size_t i = 0; i < mean.size(); ++i) {
      out = std::max(out, mean[i] - stats::mixture_radius(static_cast<double>(i + 1), ss[i], alpha, spec));
    }
    return out;
  }
  double high(double alpha, const stats::MixtureSpec& spec) const {
    double out = kInf;
    for (std::size_t i = 0; i < mean.size(); ++i) {
      out = std::min(out, mean[i] + stats::mixture_radius(static_cast<double>(i + 1), ss[i], alpha, spec));
    }
    return out;
  }
};

// Whether the combined interval at total level `a` excludes 0 on the side asked: the current
// side's sequence at share * a, the baseline's one-sided t bound at (1 - share) * a.
bool excludes_zero(const Prefixes& cur, const BaselinePart& base, double a, bool worse, const UnpairedDesign& design) {
  const double a_cur = design.current_share * a, a_base = (1 - design.current_share) * a;
  const double bound = worse ? cur.low(a_cur, design.spec()) : cur.high(a_cur, design.spec());
  if (!std::isfinite(bound)) return false;
  const double gap = worse ? bound - base.mean : base.mean - bound;  // > 0: on the claimed side
  if (!(base.se > 0)) return gap > 0;
  // gap > q_{1 - a_base} se  <=>  P(T > gap / se) < a_base: one t tail, no quantile.
  return 1 - stats::student_t_cdf(gap / base.se, base.df) < a_base;
}

double p_value(const Prefixes& cur, const BaselinePart& base, bool worse, const UnpairedDesign& design) {
  constexpr double kFloor = 1e-16;
  if (cur.mean.size() < 2 || !excludes_zero(cur, base, 1.0, worse, design)) return 1;
  if (excludes_zero(cur, base, kFloor, worse, design)) return kFloor;
  // Excluding is monotone in a (a larger level, narrower bounds): bisection on log a.
  double lo = std::log(kFloor), hi = 0;
  for (int i = 0; i < 40; ++i) {
    const double mid = 0.5 * (lo + hi);
    (excludes_zero(cur, base, std::exp(mid), worse, design) ? hi : lo) = mid;
  }
  return std::exp(hi);
}

// Student t quantiles, cached per look (the baselines' degrees of freedom repeat).
class Quantiles {
 public:
  double operator()(double p, double df) {
    const auto key = std::pair{p, df};
    const auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
    return cache_[key] = stats::student_t_quantile(p, df);
  }

 private:
  std::map<std::pair<double, double>, double> cache_;
};

// The fewest current processes (more than `now`) at which the current side's radius at `alpha`,
// at variance `variance`, is at most `room`; kMostProcesses where none up to there is.
int processes_for_radius(int now, double variance, double alpha, double room, const stats::MixtureSpec& spec) {
  if (!(room > 0)) return kMostProcesses;
  if (!(variance > 0)) return now + 1;
  auto fits = [&](int n) { return stats::mixture_radius(n, std::max(0, n - 1) * variance, alpha, spec) <= room; };
  int low = std::max(now, 1), high = std::max(now + 1, 2);
  while (!fits(high)) {
    if (high >= kMostProcesses) return kMostProcesses;
    low = high;
    high = std::min(kMostProcesses, high * 2);
  }
  while (high - low > 1) {
    const int mid = low + (high - low) / 2;
    (fits(mid) ? high : low) = mid;
  }
  return high;
}

// An undecided row's plan: the current processes that would decide it at this noise (excluding 0
// at Holm's strictest level where the change looks as large as the threshold, else an interval
// inside +-threshold), whether the cap allows them, and its note. The baseline's part does not
// shrink with more current processes: the room left for the current side's radius.
void plan_undecided(SequentialRow& r, double cur_sd, double size, const BaselinePart& base, double base_half,
                    Quantiles& quantile, const GateOptions& options, double family, const UnpairedDesign& design) {
  const int n = r.pairs;
  const double share = design.current_share, interval_alpha = 1 - options.interval_level;
  const stats::MixtureSpec spec = design.spec();
  const double log_threshold = std::log1p(r.threshold);
  const double strict = options.alpha / family;
  const double base_strict = quantile(1 - (1 - share) * strict, base.df) * base.se;
  const bool significance = size >= log_threshold;
  const double room = significance ? size - base_strict : log_threshold - size - base_half;
  const double alpha_cur = significance ? share * strict : share * interval_alpha;
  const double variance = cur_sd * cur_sd;
  const int needed = n < 2 ? 2 : processes_for_radius(n, variance, alpha_cur, room, spec);
  r.pairs_needed = needed;
  // Within the cap at the low end of what the noise may turn out to be, either answer (as
  // sequential.cpp).
  int could = needed;
  if (needed > design.max_processes && n >= 2) {
    const double low_variance = low_end_variance(variance, n);
    could = processes_for_radius(n, low_variance, share * interval_alpha, log_threshold - base_half, spec);
    if (size > 0)
      could = std::min(could, processes_for_radius(n, low_variance, share * strict, size - base_strict, spec));
  }
  r.within_cap = could <= design.max_processes && n < design.max_processes;
  r.note = unpaired_resolution_text(r, base.n, options.interval_level);
  if (r.within_cap) return;
  char buf[240];
  if (base_half >= log_threshold) {
    std::snprintf(buf, sizeof buf,
                  "; the baseline's %d processes alone leave \u00b1%.1f %%: no number of processes of this run "
                  "decides it (compare in one run with `pairbench ab`)",
                  base.n, 100 * std::expm1(base_half));
  } else if (needed >= kMostProcesses) {
    std::snprintf(buf, sizeof buf, "; no number of processes decides it at this noise");
  } else {
    std::snprintf(buf, sizeof buf, "; about %d processes would decide it, more than the cap of %d", needed,
                  design.max_processes);
  }
  r.note += buf;
}

}  // namespace

void UnpairedState::add_baseline(double value, bool lower_is_better) {
  check_value(benchmark, value);
  baseline.push_back(lower_is_better ? std::log(value) : -std::log(value));
}

void UnpairedState::add_current(double value, bool lower_is_better) {
  check_value(benchmark, value);
  current.push_back(lower_is_better ? std::log(value) : -std::log(value));
}

double unpaired_p_value(const UnpairedState& s, bool worse, const UnpairedDesign& design) {
  return p_value(Prefixes(s.current), baseline_part(s), worse, design);
}

SequentialDecision decide_sequential_unpaired(const std::vector<UnpairedState>& states, const GateOptions& options,
                                              const UnpairedDesign& design) {
  if (!(design.current_share > 0 && design.current_share < 1)) {
    throw std::invalid_argument("sequential: the current side's share of the level must lie in (0, 1)");
  }
  const double interval_alpha = 1 - options.interval_level;  // two-sided
  const double family = static_cast<double>(states.size());
  const double share = design.current_share;
  const stats::MixtureSpec spec = design.spec();
  Quantiles quantile;
  std::vector<Prefixes> currents;
  std::vector<BaselinePart> bases;
  std::vector<double> p_worse, p_better;
  for (const UnpairedState& s : states) {
    currents.emplace_back(s.current);
    bases.push_back(baseline_part(s));
    p_worse.push_back(p_value(currents.back(), bases.back(), true, design));
    p_better.push_back(p_value(currents.back(), bases.back(), false, design));
  }
  const std::vector<double> adj_worse = adjust_p_values(p_worse, options.correction),
                            adj_better = adjust_p_values(p_better, options.correction);
  SequentialDecision out;
  for (std::size_t i = 0; i < states.size(); ++i) {
    const UnpairedState& s = states[i];
    const Prefixes& cur = currents[i];
    const BaselinePart& base = bases[i];
    const int n = static_cast<int>(s.current.size());
    const double cur_mean = n ? cur.mean.back() : base.mean;
    // The interval at interval_level: the current side's two-sided sequence at share * alpha, the
    // baseline's two-sided t interval at the rest.
    const double base_half = quantile(1 - (1 - share) * interval_alpha / 2, base.df) * base.se;
    const double cur_low = n ? cur.low(share * interval_alpha, spec) : -kInf;
    const double cur_high = n ? cur.high(share * interval_alpha, spec) : kInf;
    double low = cur_low - (base.mean + base_half), high = cur_high - (base.mean - base_half);
    if (low > high) low = high = cur_mean - base.mean;  // crossed running intersection: a point (rare)
    SequentialRow r;
    r.benchmark = s.benchmark;
    r.pairs = n;
    r.seconds = s.seconds;
    r.threshold = s.threshold;
    r.change = std::expm1(cur_mean - base.mean);
    r.low = std::isfinite(low) ? std::expm1(low) : -1;
    r.high = std::isfinite(high) ? std::expm1(high) : kInf;
    r.resolution = std::isfinite(low) && std::isfinite(high) ? std::max(r.high, -r.low) : kInf;
    r.p_worse = p_worse[i];
    r.p_better = p_better[i];
    r.p_adjusted = adj_worse[i];
    const bool slower = adj_worse[i] < options.alpha, faster = adj_better[i] < options.alpha;
    r.verdict = sequential_verdict(slower, faster, low, high, std::log1p(s.threshold));
    if (r.verdict == Verdict::undecided) {
      const double cur_sd = n >= 2 ? std::sqrt(cur.ss.back() / (n - 1)) : 0;
      plan_undecided(r, cur_sd, std::fabs(cur_mean - base.mean), base, base_half, quantile, options, family, design);
    }
    out.rows.push_back(std::move(r));
  }
  return out;
}

std::string unpaired_resolution_text(const SequentialRow& row, int baseline_processes, double interval_level) {
  char buf[220];
  if (std::isfinite(row.resolution)) {
    std::snprintf(buf, sizeof buf,
                  "no change beyond \u00b1%.1f %% at %.0f %% (%d processes against the baseline's %d, %.0f s)",
                  100 * row.resolution, 100 * interval_level, row.pairs, baseline_processes, row.seconds);
  } else {
    std::snprintf(buf, sizeof buf,
                  "no bound on the change yet at %.0f %% (%d processes against the baseline's %d, %.0f s)",
                  100 * interval_level, row.pairs, baseline_processes, row.seconds);
  }
  return buf;
}

}  // namespace pairbench::harness
