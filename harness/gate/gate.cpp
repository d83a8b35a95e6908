// Per-benchmark comparison of two runs: the moderated trimmed t for time, the threshold rule for
// instruction counts, false regressions controlled across the whole gate. The outputs: print_*.cpp.
#include "harness/gate/gate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>

#include "harness/gate/text.h"
#include "harness/store/run_file.h"

namespace pairbench::harness {
namespace {

// One side of one benchmark: a value per process (and its in-process samples).
struct Side {
  std::string experiment;
  std::set<std::int64_t> iterations;          // fixed iteration counts of its processes
  std::vector<double> values;                 // process values
  std::vector<std::vector<double>> batches;   // in-process samples, per process (may be empty)
  std::vector<int> pairs;                     // duet pair ids, -1 where none
};

double checked_value(const nlohmann::json& v, const std::string& name, const char* field) {
  if (!v.is_number()) throw std::invalid_argument(name + ": " + field + " is not a number");
  const double x = v.get<double>();
  if (!std::isfinite(x) || x <= 0) {
    std::ostringstream m;
    m << name << ": " << field << " is " << v.dump() << ", must be finite and > 0";
    throw std::invalid_argument(m.str());
  }
  return x;
}

// The time instrument: `benchmarks`, one entry per process.
std::map<std::string, Side> time_sides(const nlohmann::json& doc) {
  std::map<std::string, Side> out;
  for (const auto& b : doc.at("benchmarks")) {
    const std::string name = b.at("name").get<std::string>();
    Side& s = out[name];
    s.experiment = b.at("experiment").get<std::string>();
    std::vector<double> batches;
    if (b.contains("metric_batches")) {
      for (const auto& x : b["metric_batches"]) batches.push_back(checked_value(x, name, "metric_batches"));
    }
    const double overall = checked_value(b.at("metric_value"), name, "metric_value");
    // The process's value: the median of its in-process samples (robust to a burst inside the
    // process), else its overall metric.
    s.values.push_back(batches.size() >= 3 ? stats::median(batches) : overall);
    s.batches.push_back(std::move(batches));
    s.pairs.push_back(b.value("duet_pair", -1));
    if (b.contains("iterations") && b["iterations"].is_number_integer()) s.iterations.insert(b["iterations"].get<std::int64_t>());
  }
  return out;
}

// The instruction instrument: `pairbench.instructions`, one entry per counting process.
std::map<std::string, Side> instruction_sides(const nlohmann::json& doc) {
  std::map<std::string, Side> out;
  for (const auto& b : doc.at("pairbench").value("instructions", nlohmann::json::array())) {
    const std::string name = b.at("name").get<std::string>();
    Side& s = out[name];
    s.experiment = b.at("experiment").get<std::string>();
    s.values.push_back(checked_value(b.at("instructions_per_iteration"), name, "instructions_per_iteration"));
  }
  return out;
}

struct ExperimentInfo {
  std::string metric, unit, better, time_relation = "proportional";
  double threshold = 0, instructions_threshold = 0;
};

std::map<std::string, ExperimentInfo> experiments_of(const nlohmann::json& doc) {
  std::map<std::string, ExperimentInfo> out;
  for (const auto& e : doc.at("pairbench").at("experiments")) {
    out[e.at("name")] = {e.at("metric"), e.at("unit"), e.at("better"), e.value("time_relation", "proportional"),
                         e.value("gate_threshold", 0.0), e.value("instructions_gate_threshold", 0.0)};
  }
  return out;
}

// Benchmarks that stopped working: failed or incorrect in this run (pairbench.not_run).
std::map<std::string, std::string> broken_in(const nlohmann::json& doc, Instrument instrument) {
  std::map<std::string, std::string> out;
  for (const auto& n : doc.at("pairbench").value("not_run", nlohmann::json::array())) {
    const std::string v = n.value("verification", "");
    if (instrument_from_string(n.value("instrument", "time")) != instrument) continue;
    if (v == "failed" || v == "incorrect") out[n.at("name")] = v + ": " + n.value("reason", "");
  }
  return out;
}

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

Contrast contrast_of(const Side& base, const Side& cur, bool lower_better, bool try_pairs, double trim) {
  Contrast c;
  if (base.values.empty() || cur.values.empty()) return c;
  c.usable = true;
  const double sign = lower_better ? 1.0 : -1.0;
  std::vector<double> lb, lc;
  for (double v : base.values) lb.push_back(std::log(v));
  for (double v : cur.values) lc.push_back(std::log(v));
  if (try_pairs) {
    // Duet: both sides' processes of a pair ran at the same time on two cores; their difference
    // cancels what the machine did to both.
    std::map<int, double> by_pair;
    for (std::size_t i = 0; i < lb.size(); ++i) {
      if (base.pairs[i] >= 0) by_pair[base.pairs[i]] = lb[i];
    }
    std::vector<double> diffs;
    for (std::size_t i = 0; i < lc.size(); ++i) {
      const auto it = by_pair.find(cur.pairs[i]);
      if (cur.pairs[i] >= 0 && it != by_pair.end()) diffs.push_back(sign * (lc[i] - it->second));
    }
    if (diffs.size() >= 2 && diffs.size() * 2 >= lb.size() + lc.size() - 2) {
      const stats::TrimmedSummary d = stats::trimmed_summary(diffs, trim);
      c.paired = true;
      c.delta = d.mean;
      c.variance = d.scale2;
      c.df = d.df();
      c.se_factor = 1.0 / d.kept;
      return c;
    }
  }
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

}  // namespace

double run_level_variance(const std::vector<std::vector<double>>& runs) {
  std::vector<double> means, within;
  for (const auto& values : runs) {
    if (values.size() < 2) continue;
    std::vector<double> logs;
    for (double v : values) {
      if (!(v > 0) || !std::isfinite(v)) return -1;
      logs.push_back(std::log(v));
    }
    const stats::TrimmedSummary t = stats::trimmed_summary(logs);
    means.push_back(t.mean);
    within.push_back(t.scale2 / t.kept);  // the variance of this run's trimmed mean from its processes
  }
  if (means.size() < 3) return -1;
  const double n = static_cast<double>(means.size());
  const double mean = std::accumulate(means.begin(), means.end(), 0.0) / n;
  double ss = 0;
  for (double m : means) ss += (m - mean) * (m - mean);
  return std::max(0.0, ss / (n - 1) - std::accumulate(within.begin(), within.end(), 0.0) / n);
}

HistoryNoise history_noise(const std::vector<std::vector<double>>& runs, double trim) {
  HistoryNoise h;
  h.run_variance = run_level_variance(runs);
  double weighted = 0;
  for (const auto& values : runs) {
    if (values.size() < 2) continue;
    std::vector<double> logs;
    for (double v : values) {
      if (!(v > 0) || !std::isfinite(v)) return HistoryNoise{};
      logs.push_back(std::log(v));
    }
    ++h.runs;
    const stats::TrimmedSummary t = stats::trimmed_summary(logs, trim);
    weighted += t.df() * t.scale2;
    h.process_df += t.df();
  }
  // Two runs at least: one run's processes could all have landed in one mode.
  if (h.runs >= 2 && h.process_df > 0) h.process_variance = weighted / h.process_df;
  return h;
}

void add_history_noise(GateOptions& options, const std::string& benchmark, const std::vector<std::vector<double>>& runs) {
  const HistoryNoise h = history_noise(runs, options.trim);
  if (h.run_variance >= 0) {
    options.run_variance[benchmark] = h.run_variance;
    options.run_variance_runs[benchmark] = h.runs;
  }
  if (h.process_variance >= 0) options.process_variance_history[benchmark] = {h.process_variance, h.process_df};
}

int GateReport::count(Verdict verdict) const {
  return static_cast<int>(std::count_if(rows.begin(), rows.end(), [&](const auto& r) { return r.verdict == verdict; }));
}

bool GateReport::failed() const {
  return std::any_of(rows.begin(), rows.end(), [](const auto& r) { return fails_gate(r.verdict); });
}

GateOutcome GateReport::outcome() const {
  if (failed()) return GateOutcome::regression;
  if (undecided()) return GateOutcome::undecided;
  return GateOutcome::pass;
}

int GateReport::exit_status() const {
  if (failed()) return 1;
  if (undecided() && options.undecided == UndecidedPolicy::fail) return kGateExitUndecided;
  return 0;
}

GateReport compare_runs(const nlohmann::json& baseline, const nlohmann::json& current, const GateOptions& options,
                        const std::string& baseline_label, const std::string& current_label) {
  if (!(options.alpha > 0 && options.alpha < 1) || !(options.threshold > 0) || !(options.instructions_threshold > 0) ||
      !(options.interval_level > 0 && options.interval_level < 1)) {
    throw std::invalid_argument("gate options: alpha and the interval level must lie in (0, 1), thresholds > 0");
  }
  GateReport report;
  report.options = options;
  report.baseline_label = baseline_label;
  report.current_label = current_label;
  report.fingerprint_differences = fingerprint_differences(baseline.at("pairbench").at("environment"),
                                                           current.at("pairbench").at("environment"));
  if (!report.fingerprint_differences.empty()) {
    if (!options.force) {
      std::string fields;
      for (const auto& d : report.fingerprint_differences) fields += (fields.empty() ? "" : "; ") + d;
      throw std::invalid_argument("refusing to compare runs from different machines or builds (--force to override): " +
                                  fields);
    }
    report.forced = true;
  }
  for (const auto& [side, doc] : {std::pair{"baseline", &baseline}, std::pair{"current", &current}}) {
    const auto& pb = doc->at("pairbench");
    if (const auto it = pb.find("interrupted"); it != pb.end() && it->is_object()) {
      report.partial_runs.push_back(std::string(side) + " run interrupted by " + it->value("signal", "a signal") +
                                    " after " + it->value("completed_processes", nlohmann::json()).dump() + " of " +
                                    it->value("planned_processes", nlohmann::json()).dump() + " processes");
    }
  }
  auto info = experiments_of(baseline);
  for (const auto& [name, e] : experiments_of(current)) info[name] = e;  // the current run's declaration wins
  // Duet pairs mean something only between the two halves of one `ab` run.
  const std::string run_a = baseline.at("pairbench").value("ab_run_id", ""), run_b = current.at("pairbench").value("ab_run_id", "");
  const bool try_pairs = !run_a.empty() && run_a == run_b;
  const double tail = (1 - options.interval_level) / 2;

  // --- time -------------------------------------------------------------------------------
  const auto base = time_sides(baseline), cur = time_sides(current);
  const auto broken = broken_in(current, Instrument::time);
  struct Pending {
    std::size_t row;
    Contrast c;
    bool follows_time;
  };
  std::vector<Pending> pending;
  for (const auto& [name, b] : base) {
    BenchmarkVerdict v;
    v.benchmark = name;
    v.experiment = b.experiment;
    const ExperimentInfo& e = info[b.experiment];
    v.metric = e.metric, v.unit = e.unit, v.better = e.better;
    v.threshold = e.threshold > 0 ? e.threshold : options.threshold;
    v.baseline_samples = static_cast<int>(b.values.size());
    v.baseline_median = stats::median(b.values);
    const auto it = cur.find(name);
    if (it == cur.end()) {
      const auto br = broken.find(name);
      v.verdict = br != broken.end() ? Verdict::broken : Verdict::missing;
      v.note = br != broken.end() ? br->second : "not in the current run";
      report.rows.push_back(v);
      continue;
    }
    const Side& c = it->second;
    v.current_samples = static_cast<int>(c.values.size());
    v.current_median = stats::median(c.values);
    v.noise_cv = std::max(robust_cv_or_zero(b.values), robust_cv_or_zero(c.values));
    v.inprocess_cv = inprocess_cv(b, c);
    if (!b.iterations.empty() && !c.iterations.empty() && b.iterations != c.iterations) {
      // Fixed counts differ (a --recalibrate between the runs): a warm-up shared by fewer
      // iterations weighs more, so the two runs may not measure the same work.
      v.note = "iteration counts differ (" + std::to_string(*b.iterations.begin()) + " vs " +
               std::to_string(*c.iterations.begin()) + "): the runs may not measure the same work";
    }
    pending.push_back({report.rows.size(), contrast_of(b, c, e.better != "higher", try_pairs, options.trim), e.time_relation != "none"});
    report.rows.push_back(v);
  }
  for (const auto& [name, c] : cur) {
    if (base.count(name)) continue;
    BenchmarkVerdict v;
    v.benchmark = name;
    v.experiment = c.experiment;
    v.current_samples = static_cast<int>(c.values.size());
    v.current_median = stats::median(c.values);
    v.verdict = Verdict::new_;
    v.note = "not in the baseline";
    report.rows.push_back(v);
  }

  // The empirical-Bayes prior, one per kind of metric: time-following metrics share a noise
  // population; counts like peak RSS (often exactly repeatable) do not belong in it.
  std::map<bool, stats::VariancePrior> priors;
  for (bool follows : {true, false}) {
    std::vector<double> vars, dfs;
    for (const Pending& p : pending) {
      if (p.follows_time == follows && p.c.usable) vars.push_back(p.c.variance), dfs.push_back(p.c.df);
    }
    priors[follows] = stats::fit_variance_prior(vars, dfs);
  }
  report.prior = priors[true];

  std::vector<double> p_worse, p_better;
  struct Derived {
    double se = 0, df = 0;
  };
  std::vector<Derived> derived(pending.size());
  for (std::size_t i = 0; i < pending.size(); ++i) {
    const Contrast& c = pending[i].c;
    const stats::VariancePrior& prior = priors[pending[i].follows_time];
    double df = c.df, variance = c.variance;
    const auto history = options.process_variance_history.find(report.rows[pending[i].row].benchmark);
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
    const double process_part = std::max(0.0, variance) * c.se_factor;
    double se2 = process_part;
    BenchmarkVerdict& row_i = report.rows[pending[i].row];
    if (!try_pairs) {
      // Two runs on two days differ by their days as well as their processes.
      if (const auto it = options.run_variance.find(row_i.benchmark); it != options.run_variance.end() && it->second >= 0) {
        const double run_part = 2 * it->second;
        se2 += run_part;
        row_i.run_noise = std::sqrt(it->second);
        // The run variance is itself an estimate from a few runs (runs - 1 degrees of freedom):
        // treating it as exact made the tails too thin (2 % of A/A gates failed in the selftest
        // instead of at most 1 %). Welch-Satterthwaite combines the two parts' degrees of freedom.
        const auto runs = options.run_variance_runs.find(row_i.benchmark);
        if (runs != options.run_variance_runs.end() && runs->second >= 2 && run_part > 0 && df > 0) {
          const double run_df = runs->second - 1.0;
          df = se2 * se2 / (process_part * process_part / df + run_part * run_part / run_df);
        }
      }
    }
    derived[i] = {std::sqrt(se2), df};
    BenchmarkVerdict& v = report.rows[pending[i].row];
    v.paired = c.paired;
    v.df = df;
    v.se = derived[i].se;
    double pw = 1, pb = 1;  // one-sided p-values for "slower" and "faster"
    if (df > 0 && derived[i].se > 0) {
      v.t = c.delta / derived[i].se;
      pw = stats::student_t_cdf(-v.t, df);  // the upper tail, computed as a lower one: accurate far out
      pb = stats::student_t_cdf(v.t, df);
    } else if (df > 0) {
      // Every process of both sides gave the same value (a deterministic metric, no prior to
      // widen it): any difference is real, none is none.
      constexpr double kInf = std::numeric_limits<double>::infinity();
      v.t = c.delta > 0 ? kInf : c.delta < 0 ? -kInf : 0;
      pw = c.delta > 0 ? 0 : 1;
      pb = c.delta < 0 ? 0 : 1;
      derived[i].df = kInf;
    }
    v.p_value = pw;
    p_worse.push_back(pw);
    p_better.push_back(pb);
  }
  const auto adjust = [&](const std::vector<double>& p) {
    return options.correction == Correction::bh ? stats::benjamini_hochberg_adjust(p) : stats::holm_adjust(p);
  };
  const std::vector<double> adj_worse = adjust(p_worse), adj_better = adjust(p_better);
  const double family = static_cast<double>(pending.size());
  for (std::size_t i = 0; i < pending.size(); ++i) {
    BenchmarkVerdict& v = report.rows[pending[i].row];
    const Contrast& c = pending[i].c;
    const Derived& d = derived[i];
    v.p_adjusted = adj_worse[i];
    const double log_threshold = std::log1p(v.threshold);
    double half = std::numeric_limits<double>::infinity();
    if (std::isinf(d.df)) {
      half = d.se * normal_critical(tail);
    } else if (d.df > 0) {
      half = d.se * stats::student_t_quantile(1 - tail, d.df);
    }
    const double low = c.delta - half, high = c.delta + half;
    v.slowdown = std::expm1(c.delta);
    v.slowdown_low = std::isfinite(low) ? std::expm1(low) : -1;
    v.slowdown_high = std::isfinite(high) ? std::expm1(high) : std::numeric_limits<double>::infinity();
    const bool slower = adj_worse[i] < options.alpha, faster = adj_better[i] < options.alpha;
    if (slower && high >= log_threshold) {
      v.verdict = Verdict::regression;
    } else if (faster && low <= -log_threshold) {
      v.verdict = Verdict::improvement;
    } else if (high < log_threshold && low > -log_threshold) {
      v.verdict = Verdict::unchanged;
      if (slower || faster) v.note += std::string(v.note.empty() ? "" : "; ") + "significant change within the threshold";
    } else {
      v.verdict = Verdict::undecided;
      char buf[400];
      const double n_now = std::min(v.baseline_samples, v.current_samples);
      if (!(d.df > 0)) {
        std::snprintf(buf, sizeof buf, "%d vs %d processes: no estimate of the noise", v.baseline_samples,
                      v.current_samples);
        v.note += std::string(v.note.empty() ? "" : "; ") + buf;
        v.processes_needed = 3;
      } else {
        // Suspected regression (or improvement): significance is what is missing. Otherwise the
        // interval is too wide to say "unchanged".
        const bool suspected = std::fabs(c.delta) >= log_threshold;
        const double se_target = suspected ? std::fabs(c.delta) / (normal_critical(options.alpha / family) + 1.645)
                                           : (log_threshold - std::fabs(c.delta)) / 1.645;
        // The run-to-run part of the SE does not shrink with more processes.
        const double run2 = v.run_noise > 0 ? 2 * v.run_noise * v.run_noise : 0.0;
        const bool runs_dominate = se_target * se_target <= run2;
        v.processes_needed = runs_dominate ? 0
                                           : processes_needed(std::sqrt(std::max(0.0, d.se * d.se - run2)), n_now,
                                                              std::sqrt(se_target * se_target - run2));
        std::string why;
        if (suspected) {
          std::snprintf(buf, sizeof buf, "a %s change, not significant after %s over %d benchmarks (p %.2g)",
                        gate_text::percent(v.slowdown).c_str(), options.correction == Correction::bh ? "BH" : "Holm",
                        static_cast<int>(family), c.delta > 0 ? adj_worse[i] : adj_better[i]);
        } else {
          std::snprintf(buf, sizeof buf, "the %.0f%% interval reaches +-%.0f%%", 100 * options.interval_level,
                        100 * v.threshold);
        }
        why = buf;
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
          why += "; the run-to-run noise alone is too large for this threshold: compare both builds in one run "
                 "(pairbench ab), gate it on instructions, or set a larger threshold";
        } else if (v.processes_needed > 1000) {
          why += "; more than 1000 processes per side would be needed: gate it on instructions or a larger threshold";
        } else {
          std::snprintf(buf, sizeof buf, "; about %d processes per side would decide it", v.processes_needed);
          why += buf;
        }
        v.note += std::string(v.note.empty() ? "" : "; ") + why;
      }
    }
  }

  // --- instructions -------------------------------------------------------------------------
  const auto ibase = instruction_sides(baseline), icur = instruction_sides(current);
  const auto ibroken = broken_in(current, Instrument::instructions);
  for (const auto& [name, b] : ibase) {
    BenchmarkVerdict v;
    v.instrument = Instrument::instructions;
    v.benchmark = name;
    v.experiment = b.experiment;
    const ExperimentInfo& e = info[b.experiment];
    v.metric = "instructions_per_iteration", v.unit = "instructions", v.better = "lower";
    v.threshold = e.instructions_threshold > 0 ? e.instructions_threshold : options.instructions_threshold;
    v.baseline_samples = static_cast<int>(b.values.size());
    v.baseline_median = stats::median(b.values);
    const auto it = icur.find(name);
    if (it == icur.end()) {
      const auto br = ibroken.find(name);
      v.verdict = br != ibroken.end() ? Verdict::broken : Verdict::missing;
      v.note = br != ibroken.end() ? br->second : "no instruction count in the current run";
      report.rows.push_back(v);
      continue;
    }
    const auto& c = it->second.values;
    v.current_samples = static_cast<int>(c.size());
    v.current_median = stats::median(c);
    // Spread within a side: the relative range of its processes' counts.
    auto spread = [](const std::vector<double>& x) {
      const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
      return (*hi - *lo) / stats::median(x);
    };
    v.noise_cv = std::max(spread(b.values), spread(c));
    v.slowdown = v.current_median / v.baseline_median - 1;
    const double lo = *std::min_element(c.begin(), c.end()) / *std::max_element(b.values.begin(), b.values.end()) - 1;
    const double hi = *std::max_element(c.begin(), c.end()) / *std::min_element(b.values.begin(), b.values.end()) - 1;
    v.slowdown_low = lo, v.slowdown_high = hi;
    char buf[300];
    if (b.values.size() < 2 || c.size() < 2) {
      v.verdict = Verdict::undecided;
      v.note = "one counting process on a side: its determinism is unchecked (--instruction-processes 2 or more)";
    } else if (v.noise_cv > v.threshold / 2) {
      v.verdict = Verdict::undecided;
      std::snprintf(buf, sizeof buf, "counts differ by %.2f%% between processes of one side: not deterministic enough "
                    "for a %.1f%% threshold", 100 * v.noise_cv, 100 * v.threshold);
      v.note = buf;
    } else if (lo >= v.threshold) {
      v.verdict = Verdict::regression;
    } else if (hi <= -v.threshold) {
      v.verdict = Verdict::improvement;
    } else if (hi < v.threshold && lo > -v.threshold) {
      v.verdict = Verdict::unchanged;
    } else {
      v.verdict = Verdict::undecided;
      std::snprintf(buf, sizeof buf, "the change %s is within the processes' spread of the %.1f%% threshold",
                    gate_text::percent(v.slowdown).c_str(), 100 * v.threshold);
      v.note = buf;
    }
    report.rows.push_back(v);
  }
  for (const auto& [name, c] : icur) {
    if (ibase.count(name)) continue;
    BenchmarkVerdict v;
    v.instrument = Instrument::instructions;
    v.benchmark = name;
    v.experiment = c.experiment;
    v.current_samples = static_cast<int>(c.values.size());
    v.current_median = stats::median(c.values);
    v.verdict = Verdict::new_;
    v.note = "no instruction count in the baseline";
    report.rows.push_back(v);
  }
  return report;
}

}  // namespace pairbench::harness
