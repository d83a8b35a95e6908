// Deciding the time rows: per benchmark a trimmed contrast of log process values (Yuen), its
// variance moderated by the benchmark's history or the gate's empirical-Bayes prior, the
// run-to-run variance added (Satterthwaite), a one-sided t test corrected across every benchmark
// (Holm or BH), and the interval against the threshold. docs/gate.md says why.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "harness/gate/decide.h"
#include "harness/gate/sequential.h"  // adjust_p_values
#include "harness/gate/text.h"
#include "harness/stats/stats.h"

namespace pairbench::harness::gate_detail {
namespace {

double robust_cv_or_zero(const std::vector<double>& values) {
  if (values.size() < 2) return 0;
  const double m = stats::median(values);
  return m > 0 ? stats::robust_cv(values) : 0;
}

// Median robust CV of the in-process samples of every process of both sides.
double inprocess_cv(const Side& a, const Side& b) {
  std::vector<double> cvs;
  for (const Side* s : {&a, &b}) {
    for (const auto& batches : s->batches) {
      if (batches.size() >= 3) cvs.push_back(robust_cv_or_zero(batches));
    }
  }
  return cvs.empty() ? 0 : stats::median(cvs);
}

// The statistic of one benchmark before the prior: the change (log, + = worse), the variance
// estimate it is scaled by, its degrees of freedom and the factor turning variance into SE^2.
struct Contrast {
  double delta = 0, variance = 0, df = 0, se_factor = 0;
  bool paired = false;
  bool usable = false;  // at least one process per side
};

// Duet: both sides' processes of a pair ran at the same time on two cores; their difference
// cancels what the machine did to both. False where too few processes were paired.
bool paired_contrast(const Side& base, const Side& cur, const std::vector<double>& lb, const std::vector<double>& lc,
                     double sign, double trim, Contrast& c) {
  std::map<int, double> by_pair;
  for (std::size_t i = 0; i < lb.size(); ++i) {
    if (base.pairs[i] >= 0) by_pair[base.pairs[i]] = lb[i];
  }
  std::vector<double> diffs;
  for (std::size_t i = 0; i < lc.size(); ++i) {
    const auto it = by_pair.find(cur.pairs[i]);
    if (cur.pairs[i] >= 0 && it != by_pair.end()) diffs.push_back(sign * (lc[i] - it->second));
  }
  if (diffs.size() < 2 || diffs.size() * 2 < lb.size() + lc.size() - 2) return false;
  const stats::TrimmedSummary d = stats::trimmed_summary(diffs, trim);
  c.paired = true;
  c.delta = d.mean;
  c.variance = d.scale2;
  c.df = d.df();
  c.se_factor = 1.0 / d.kept;
  return true;
}

Contrast contrast_of(const Side& base, const Side& cur, bool lower_better, bool try_pairs, double trim) {
  Contrast c;
  if (base.values.empty() || cur.values.empty()) return c;
  c.usable = true;
  const double sign = lower_better ? 1.0 : -1.0;
  std::vector<double> lb, lc;
  for (double v : base.values) lb.push_back(std::log(v));
  for (double v : cur.values) lc.push_back(std::log(v));
  if (try_pairs && paired_contrast(base, cur, lb, lc, sign, trim, c)) return c;
  const stats::TrimmedSummary b = stats::trimmed_summary(lb, trim), k = stats::trimmed_summary(lc, trim);
  c.delta = sign * (k.mean - b.mean);
  c.df = b.df() + k.df();
  c.variance = c.df > 0 ? (b.df() * b.scale2 + k.df() * k.scale2) / c.df : 0;  // pooled (Yuen's scale)
  c.se_factor = 1.0 / b.kept + 1.0 / k.kept;
  return c;
}

// z such that a one-sided normal test at level p rejects.
double normal_critical(double p) { return stats::student_t_quantile(1 - std::clamp(p, 1e-300, 0.5), 1e9); }

// What would decide an undecided benchmark: processes per side, from the SE scaling as 1/sqrt(n).
int processes_needed(double se_now, double n_now, double se_target) {
  if (!(se_target > 0) || !(se_now > 0)) return 0;
  const double n = std::ceil(n_now * (se_now / se_target) * (se_now / se_target));
  return static_cast<int>(std::min(n, 1e6));
}

void append_note(BenchmarkVerdict& v, const std::string& text) { v.note += (v.note.empty() ? "" : "; ") + text; }

// A time row being decided: its contrast, and whether its metric follows time (shares the time
// prior) or is a count like peak RSS.
struct Pending {
  std::size_t row;
  Contrast c;
  bool follows_time;
  std::string benchmark;
};

// A benchmark's process-to-process variance of the log value and its degrees of freedom.
struct Moderated {
  double variance = 0, df = 0;
};

// The change's standard error and degrees of freedom, all noise included; df infinite where
// every process gave the same value.
struct ChangeError {
  double se = 0, df = 0;
};

// One-sided p-values for "slower" and "faster", before the correction.
struct OneSided {
  double worse = 1, better = 1;
};

std::vector<Pending> contrasts(GateReport& report, const std::vector<Matched>& matched, const Experiments& info,
                               bool try_pairs) {
  std::vector<Pending> pending;
  for (const Matched& m : matched) {
    BenchmarkVerdict& v = report.rows[m.row];
    const Side &b = *m.base, &c = *m.cur;
    const auto found = info.find(b.experiment);
    const ExperimentInfo e = found != info.end() ? found->second : ExperimentInfo{};
    v.noise_cv = std::max(robust_cv_or_zero(b.values), robust_cv_or_zero(c.values));
    v.inprocess_cv = inprocess_cv(b, c);
    if (!b.iterations.empty() && !c.iterations.empty() && b.iterations != c.iterations) {
      // Fixed counts differ (a --recalibrate between the runs): a warm-up shared by fewer
      // iterations weighs more, so the two runs may not measure the same work.
      v.note = "iteration counts differ (" + std::to_string(*b.iterations.begin()) + " vs " +
               std::to_string(*c.iterations.begin()) + "): the runs may not measure the same work";
    }
    pending.push_back({m.row, contrast_of(b, c, e.better != "higher", try_pairs, report.options.trim),
                       e.time_relation != "none", v.benchmark});
  }
  return pending;
}

// The empirical-Bayes prior, one per kind of metric (keyed by follows_time): time-following
// metrics share a noise population; counts like peak RSS (often exactly repeatable) do not.
std::map<bool, stats::VariancePrior> fit_priors(const std::vector<Pending>& pending) {
  std::map<bool, stats::VariancePrior> priors;
  for (bool follows : {true, false}) {
    std::vector<double> vars, dfs;
    for (const Pending& p : pending) {
      if (p.follows_time == follows && p.c.usable) vars.push_back(p.c.variance), dfs.push_back(p.c.df);
    }
    priors[follows] = stats::fit_variance_prior(vars, dfs);
  }
  return priors;
}

// The process-to-process variance of one benchmark and its degrees of freedom, after borrowing
// from its history or from the gate's prior.
Moderated moderated_variance(const Contrast& c, const stats::VariancePrior& prior, const std::string& benchmark,
                             const GateOptions& options) {
  double df = c.df, variance = c.variance;
  const auto history = options.process_variance_history.find(benchmark);
  if (!c.paired && history != options.process_variance_history.end() && history->second.second > 0 && c.df > 0) {
    // This benchmark's own history is a better prior than the other benchmarks: pooled with
    // this comparison's processes, it carries what a handful of processes cannot show (a
    // benchmark whose processes land in two modes, a rare slow process).
    const auto [hv, hdf] = history->second;
    variance = (hdf * hv + c.df * c.variance) / (hdf + c.df);
    df = hdf + c.df;
  } else if (options.moderation == Moderation::eb && c.df > 0 && prior.df > 0) {
    // Moderate towards the gate's noise prior, except a benchmark far quieter than the rest
    // (below the 1 % quantile of its own chi-square around the prior; Wilson-Hilferty): the
    // prior would only blur the benchmarks best placed to see a small change.
    const double a = 2.0 / (9 * c.df), q01 = std::pow(1 - a - 2.326 * std::sqrt(a), 3);
    if (!(c.variance < prior.variance * q01)) {
      df = stats::posterior_df(prior, c.df);
      variance = stats::posterior_variance(prior, c.variance, c.df);
    }
  }
  return {variance, df};
}

// The gate-wide run-to-run part, for the benchmarks without a history of their own.
struct PooledRunVariance {
  double variance = -1;  // of the log value; -1: not estimated
  int benchmarks = 0;    // estimated from
};

// A benchmark's run-to-run variance from its history, moderated (below), and its degrees of freedom.
struct RunVariance {
  double variance = 0, df = 0;  // df may be infinite
};
using RunVariances = std::map<std::string, RunVariance>;

// Each benchmark's run-to-run variance from a few runs has runs - 1 degrees of freedom: from 3 runs,
// 2, and a t quantile at the gate's Bonferroni level on 2 degrees of freedom is in the hundreds. As
// the process variances are moderated (limma), so are the run variances: an empirical-Bayes prior
// fitted over every benchmark of the gate that has a history, and each benchmark's posterior
// variance with the prior's degrees of freedom added to its own (Smyth 2004). Without a usable
// prior (fewer than 8 benchmarks with a history), each keeps its own, with runs - 1.
RunVariances moderated_run_variances(const std::vector<Pending>& pending, const GateOptions& options) {
  std::vector<double> variances, dfs;
  std::vector<std::string> names;
  for (const Pending& p : pending) {
    const auto it = options.run_variance.find(p.benchmark);
    if (it == options.run_variance.end() || it->second < 0) continue;
    const auto runs = options.run_variance_runs.find(p.benchmark);
    // A benchmark absent from run_variance_runs has its run variance taken as exact (gate.h).
    const double df = runs == options.run_variance_runs.end() ? kInf : std::max(1, runs->second - 1);
    names.push_back(p.benchmark);
    variances.push_back(it->second);
    dfs.push_back(df);
  }
  std::vector<double> finite_v, finite_df;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (std::isfinite(dfs[i])) finite_v.push_back(variances[i]), finite_df.push_back(dfs[i]);
  }
  const stats::VariancePrior prior = stats::fit_variance_prior(finite_v, finite_df);
  RunVariances out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (!std::isfinite(dfs[i]) || !(prior.df > 0)) {
      out[names[i]] = {variances[i], dfs[i]};
    } else {
      out[names[i]] = {stats::posterior_variance(prior, variances[i], dfs[i]), stats::posterior_df(prior, dfs[i])};
    }
  }
  return out;
}

// The standard error of the change: the moderated process part, plus (between two runs) the
// benchmark's run-to-run variance from history (or the gate-wide one where it has no history),
// which also sets v.run_noise.
ChangeError change_error(BenchmarkVerdict& v, const Contrast& c, const Moderated& moderated, const GateOptions& options,
                         bool try_pairs, const PooledRunVariance& pooled, const RunVariances& run_variances) {
  double df = moderated.df;
  const double process_part = std::max(0.0, moderated.variance) * c.se_factor;
  double se2 = process_part;
  if (!try_pairs && pooled.variance >= 0 && !options.run_variance.count(v.benchmark)) {
    const double run_part = 2 * pooled.variance;
    se2 += run_part;
    v.run_noise = std::sqrt(pooled.variance);
    v.run_noise_pooled = true;
    if (run_part > 0 && df > 0) {
      const double run_df = pooled.benchmarks - 1.0;
      df = se2 * se2 / (process_part * process_part / df + run_part * run_part / run_df);
    }
  } else if (!try_pairs) {
    // Two runs on two days differ by their days as well as their processes.
    if (const auto it = run_variances.find(v.benchmark); it != run_variances.end()) {
      const double run_part = 2 * it->second.variance;
      se2 += run_part;
      v.run_noise = std::sqrt(it->second.variance);
      // The run variance is itself an estimate from a few runs (runs - 1 degrees of freedom, plus
      // the prior's): treating it as exact made the tails too thin (2 % of A/A gates failed in the
      // selftest instead of at most 1 %). Welch-Satterthwaite combines the two parts' degrees of
      // freedom.
      if (std::isfinite(it->second.df) && run_part > 0 && df > 0) {
        df = se2 * se2 / (process_part * process_part / df + run_part * run_part / it->second.df);
      }
    }
  }
  return {std::sqrt(se2), df};
}

// The t statistic and its one-sided p-values; fills the row's paired, df, se, t and p_value.
OneSided test_change(BenchmarkVerdict& v, const Contrast& c, ChangeError& e) {
  v.paired = c.paired;
  v.df = e.df;
  v.se = e.se;
  OneSided p;
  if (e.df > 0 && e.se > 0) {
    v.t = c.delta / e.se;
    p.worse = stats::student_t_cdf(-v.t, e.df);  // the upper tail, computed as a lower one: accurate far out
    p.better = stats::student_t_cdf(v.t, e.df);
  } else if (e.df > 0) {
    // Every process of both sides gave the same value (a deterministic metric, no prior to
    // widen it): any difference is real, none is none.
    v.t = c.delta > 0 ? kInf : c.delta < 0 ? -kInf : 0;
    p.worse = c.delta > 0 ? 0 : 1;
    p.better = c.delta < 0 ? 0 : 1;
    e.df = kInf;
  }
  v.p_value = p.worse;
  return p;
}

// Two runs differ by their days as well as their processes. Where a benchmark has no history of
// its own (fewer than 3 runs of it), the run-to-run part is estimated from the gate's benchmarks at
// once: the one variance v (of the log value, the same for every benchmark) such that the
// benchmarks' changes about their median change, over their own noise, (change - median)^2 /
// (process part + 2v), have the median of a chi-square with 1 degree of freedom. Medians: a real
// change in a few benchmarks barely moves it; and a change of most benchmarks by the same amount
// is left in the changes, not taken for noise (a build 50 % slower everywhere is a regression
// everywhere, and a day on which the whole machine ran slower is one too, until the same-runner
// confirmation of the nightly clears it: docs/gate.md). Needs 8 benchmarks.
PooledRunVariance pooled_run_variance(const std::vector<Pending>& pending, const std::vector<Moderated>& moderated,
                                      const GateOptions& options) {
  std::vector<std::pair<double, double>> rows;  // change, process part of its variance
  for (std::size_t i = 0; i < pending.size(); ++i) {
    const Contrast& c = pending[i].c;
    if (!pending[i].follows_time || !c.usable || !(c.df > 0) || options.run_variance.count(pending[i].benchmark))
      continue;
    rows.push_back({c.delta, std::max(0.0, moderated[i].variance) * c.se_factor});
  }
  if (rows.size() < 8) return {};
  std::vector<double> changes;
  for (const auto& r : rows) changes.push_back(r.first);
  const double centre = stats::median(changes);
  for (auto& r : rows) r.first = (r.first - centre) * (r.first - centre);
  auto median_at = [&](double v) {
    std::vector<double> z2;
    for (const auto& [d2, process] : rows) z2.push_back(process + 2 * v > 0 ? d2 / (process + 2 * v) : kInf);
    return stats::median(z2);
  };
  constexpr double kChi2Median = 0.454936;  // of a chi-square with 1 degree of freedom
  const int n = static_cast<int>(rows.size());
  if (median_at(0) <= kChi2Median) return {0, n};
  double low = 0, high = 1e-4;
  while (median_at(high) > kChi2Median && high < 1e4) low = high, high *= 4;
  for (int it = 0; it < 100; ++it) {
    const double mid = 0.5 * (low + high);
    (median_at(mid) > kChi2Median ? low : high) = mid;
  }
  return {high, n};
}

// Why an undecided row is undecided and what would decide it (v.processes_needed).
void explain_undecided(BenchmarkVerdict& v, const Contrast& c, const ChangeError& e, double p_toward_change,
                       const GateOptions& options, double family) {
  char buf[400];
  if (!(e.df > 0)) {
    std::snprintf(buf, sizeof buf, "%d vs %d processes: no estimate of the noise", v.baseline_samples,
                  v.current_samples);
    append_note(v, buf);
    v.processes_needed = 3;
    return;
  }
  const double log_threshold = std::log1p(v.threshold);
  const double n_now = std::min(v.baseline_samples, v.current_samples);
  // Suspected regression (or improvement): significance is what is missing. Otherwise the
  // interval is too wide to say "unchanged".
  const bool suspected = std::fabs(c.delta) >= log_threshold;
  const double se_target = suspected ? std::fabs(c.delta) / (normal_critical(options.alpha / family) + 1.645)
                                     : (log_threshold - std::fabs(c.delta)) / 1.645;
  // The run-to-run part of the SE does not shrink with more processes.
  const double run2 = v.run_noise > 0 ? 2 * v.run_noise * v.run_noise : 0.0;
  const bool runs_dominate = se_target * se_target <= run2;
  v.processes_needed = runs_dominate ? 0
                                     : processes_needed(std::sqrt(std::max(0.0, e.se * e.se - run2)), n_now,
                                                        std::sqrt(se_target * se_target - run2));
  if (suspected) {
    std::snprintf(buf, sizeof buf, "a %s change, not significant after %s over %d benchmarks (p %.2g)",
                  gate_text::percent(v.slowdown).c_str(), options.correction == Correction::bh ? "BH" : "Holm",
                  static_cast<int>(family), p_toward_change);
  } else {
    std::snprintf(buf, sizeof buf, "the %.0f%% interval reaches +-%.0f%%", 100 * options.interval_level,
                  100 * v.threshold);
  }
  std::string why = buf;
  std::snprintf(buf, sizeof buf, "; noise %.1f%% between processes", 100 * v.noise_cv);
  why += buf;
  if (v.inprocess_cv > 0) {
    std::snprintf(buf, sizeof buf, ", %.1f%% within", 100 * v.inprocess_cv);
    why += buf;
  }
  if (v.run_noise > 0) {
    std::snprintf(buf, sizeof buf, ", %.1f%% run to run", 100 * v.run_noise);
    why += buf;
  }
  if (runs_dominate) {
    why +=
        "; the run-to-run noise alone is too large for this threshold: compare both builds in one run "
        "(pairbench ab), gate it on instructions, or set a larger threshold";
  } else if (v.processes_needed > 1000) {
    why += "; more than 1000 processes per side would be needed: gate it on instructions or a larger threshold";
  } else {
    std::snprintf(buf, sizeof buf, "; about %d processes per side would decide it", v.processes_needed);
    why += buf;
  }
  append_note(v, why);
}

// The resolution of a row: the interval's half-width plus the farthest an unchanged benchmark's
// estimate strays from 0 except with probability alpha / benchmarks (two-sided, Bonferroni), both
// on the row's own degrees of freedom. A change the gate does not find significant (Holm rejects
// at least what Bonferroni does) then has its interval inside +-resolution: every row with a noise
// estimate is decided. Relative; 0 where the row has no noise estimate.
double resolution_of(const ChangeError& e, double half, const GateOptions& options, double family) {
  if (!(e.se > 0) || !std::isfinite(half) || !(e.df > 0)) return 0;
  const double tail = options.alpha / std::max(1.0, family) / 2;
  const double margin = std::isinf(e.df) ? normal_critical(tail) : stats::student_t_quantile(1 - tail, e.df);
  return std::expm1(half + margin * e.se);
}

// The interval of the change and the verdict: regression when significant and the interval
// reaches the threshold; unchanged when it lies inside +-gated_at (the threshold, or between two
// runs the larger of it and the row's resolution); else undecided.
void decide_row(BenchmarkVerdict& v, const Contrast& c, const ChangeError& e, const OneSided& adjusted,
                const GateOptions& options, double family, bool try_pairs) {
  const double tail = (1 - options.interval_level) / 2;
  v.p_adjusted = adjusted.worse;
  const double log_threshold = std::log1p(v.threshold);
  double half = kInf;
  if (std::isinf(e.df)) {
    half = e.se * normal_critical(tail);
  } else if (e.df > 0) {
    half = e.se * stats::student_t_quantile(1 - tail, e.df);
  }
  v.gated_at = v.threshold;
  if (options.resolution && !try_pairs) {
    v.resolution = resolution_of(e, half, options, family);
    v.gated_at = std::max(v.threshold, v.resolution);
  }
  const double log_gated = std::log1p(v.gated_at);
  const double low = c.delta - half, high = c.delta + half;
  v.slowdown = std::expm1(c.delta);
  v.slowdown_low = std::isfinite(low) ? std::expm1(low) : -1;
  v.slowdown_high = std::isfinite(high) ? std::expm1(high) : kInf;
  const bool slower = adjusted.worse < options.alpha, faster = adjusted.better < options.alpha;
  // Between two runs, gated at a resolution wider than the threshold: a change whose estimate lies
  // within that resolution is what this comparison's noise produces from unchanged code (as
  // "unchanged" honours the resolution, so does "regression"): a suspect for the same-runner
  // confirmation, never a regression. And a resolution too wide to mean anything, or one from
  // borrowed run-to-run noise, is not gated here at all.
  const bool at_resolution = v.gated_at > v.threshold;
  const bool within_resolution = at_resolution && std::fabs(c.delta) < log_gated;
  const bool too_wide = at_resolution && (v.gated_at > kWidestGatedResolution || v.run_noise_pooled);
  if (slower && high >= log_threshold && within_resolution) {
    v.verdict = too_wide ? Verdict::not_gated : Verdict::undecided;
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "beyond the threshold but within its resolution \u00b1%.1f%%: a suspect for confirmation, not a "
                  "regression",
                  100 * v.gated_at);
    append_note(v, buf);
  } else if (slower && high >= log_threshold) {
    v.verdict = Verdict::regression;
  } else if (faster && low <= -log_threshold) {
    v.verdict = Verdict::improvement;
  } else if (high < log_gated && low > -log_gated && too_wide) {
    v.verdict = Verdict::not_gated;
    char buf[200];
    std::snprintf(buf, sizeof buf, "not gated here: resolution \u00b1%.1f%%%s (threshold %.0f%%)", 100 * v.gated_at,
                  v.run_noise_pooled ? ", from run-to-run noise borrowed for want of 3 runs of history" : "",
                  100 * v.threshold);
    append_note(v, buf);
  } else if (high < log_gated && low > -log_gated) {
    v.verdict = Verdict::unchanged;
    if (v.gated_at > v.threshold) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "unchanged at \u00b1%.1f%% (its resolution; threshold %.0f%%)", 100 * v.gated_at,
                    100 * v.threshold);
      append_note(v, buf);
    }
    if (slower || faster) append_note(v, "significant change within the threshold");
  } else {
    v.verdict = Verdict::undecided;
    explain_undecided(v, c, e, c.delta > 0 ? adjusted.worse : adjusted.better, options, family);
  }
}

}  // namespace

void decide_time_rows(GateReport& report, const std::vector<Matched>& matched, const Experiments& info,
                      bool try_pairs) {
  const GateOptions& options = report.options;
  const std::vector<Pending> pending = contrasts(report, matched, info, try_pairs);
  auto priors = fit_priors(pending);
  report.prior = priors[true];
  std::vector<ChangeError> errors;
  std::vector<double> p_worse, p_better;
  std::vector<Moderated> moderated;
  for (const Pending& p : pending)
    moderated.push_back(moderated_variance(p.c, priors[p.follows_time], p.benchmark, options));
  // Between two runs, the run-to-run part of the benchmarks without a history of their own.
  const PooledRunVariance pooled =
      !try_pairs && options.resolution ? pooled_run_variance(pending, moderated, options) : PooledRunVariance{};
  report.pooled_run_variance = pooled.variance;
  const RunVariances run_variances = try_pairs ? RunVariances{} : moderated_run_variances(pending, options);
  report.pooled_run_benchmarks = pooled.benchmarks;
  for (std::size_t i = 0; i < pending.size(); ++i) {
    const Pending& p = pending[i];
    BenchmarkVerdict& v = report.rows[p.row];
    errors.push_back(change_error(v, p.c, moderated[i], options, try_pairs, pooled, run_variances));
    const OneSided one_sided = test_change(v, p.c, errors.back());
    p_worse.push_back(one_sided.worse);
    p_better.push_back(one_sided.better);
  }
  const std::vector<double> adj_worse = adjust_p_values(p_worse, options.correction),
                            adj_better = adjust_p_values(p_better, options.correction);
  const double family = static_cast<double>(pending.size());
  for (std::size_t i = 0; i < pending.size(); ++i) {
    decide_row(report.rows[pending[i].row], pending[i].c, errors[i], {adj_worse[i], adj_better[i]}, options, family,
               try_pairs);
  }
}

}  // namespace pairbench::harness::gate_detail
