// A benchmark's noise from its history on this machine: the run-to-run variance of its level and
// its pooled process-to-process variance, which the gate adds to and borrows for each comparison.
#include <algorithm>
#include <cmath>
#include <numeric>

#include "harness/gate/gate.h"

namespace pairbench::harness {

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

void add_history_noise(GateOptions& options, const std::string& benchmark,
                       const std::vector<std::vector<double>>& runs) {
  const HistoryNoise h = history_noise(runs, options.trim);
  if (h.run_variance >= 0) {
    options.run_variance[benchmark] = h.run_variance;
    options.run_variance_runs[benchmark] = h.runs;
  }
  if (h.process_variance >= 0) options.process_variance_history[benchmark] = {h.process_variance, h.process_df};
}

double resolution_from_history(const HistoryNoise& h, int processes, int family, const GateOptions& options) {
  if (h.run_variance < 0 || h.process_variance < 0 || processes < 2 || !(h.process_df > 0)) return -1;
  const int kept = processes - 2 * static_cast<int>(std::floor(options.trim * processes));
  if (kept < 1) return -1;
  const double process_part = h.process_variance * 2.0 / kept, run_part = 2 * h.run_variance;
  const double se2 = process_part + run_part;
  if (!(se2 > 0)) return 0;
  // Welch-Satterthwaite, as the gate combines the two parts (decide_time.cpp, change_error).
  const double run_df = std::max(1, h.runs - 1);
  const double df = se2 * se2 / (process_part * process_part / h.process_df + run_part * run_part / run_df);
  const double se = std::sqrt(se2);
  const double half = stats::student_t_quantile(1 - (1 - options.interval_level) / 2, df) * se;
  const double margin = stats::student_t_quantile(1 - options.alpha / std::max(1, family) / 2, df) * se;
  return std::expm1(half + margin);
}

}  // namespace pairbench::harness
