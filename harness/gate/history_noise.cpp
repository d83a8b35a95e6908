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

void add_history_noise(GateOptions& options, const std::string& benchmark, const std::vector<std::vector<double>>& runs) {
  const HistoryNoise h = history_noise(runs, options.trim);
  if (h.run_variance >= 0) {
    options.run_variance[benchmark] = h.run_variance;
    options.run_variance_runs[benchmark] = h.runs;
  }
  if (h.process_variance >= 0) options.process_variance_history[benchmark] = {h.process_variance, h.process_df};
}

}  // namespace pairbench::harness
