// Change-point detection over per-run medians (moved here from stats.cpp and cmd_gate.cpp).
#include "harness/analysis/change_points.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "harness/stats/stats.h"

namespace pairbench::harness {
namespace {

// Best single split of series[begin, end): located where the CUSUM statistic (difference of
// segment means weighted by sqrt(nL*nR/n)) peaks, which places steps accurately; then scored
// robustly: the difference of segment medians over the pooled residual MAD, same weight.
std::pair<std::size_t, double> best_split(std::span<const double> x, std::size_t begin, std::size_t end,
                                          std::size_t min_segment, double noise, double* step) {
  const double n = static_cast<double>(end - begin);
  double total = 0;
  for (std::size_t i = begin; i < end; ++i) total += x[i];
  std::size_t best = 0;
  double best_cusum = -1, left_sum = 0;
  for (std::size_t i = begin; i < begin + min_segment; ++i) left_sum += x[i];
  for (std::size_t k = begin + min_segment; k + min_segment <= end; ++k) {
    const double nl = static_cast<double>(k - begin), nr = n - nl;
    const double cusum = std::fabs(left_sum / nl - (total - left_sum) / nr) * std::sqrt(nl * nr / n);
    if (cusum > best_cusum) {
      best_cusum = cusum;
      best = k;
    }
    left_sum += x[k];
  }
  if (best == 0) return {0, 0};
  const std::span<const double> left = x.subspan(begin, best - begin), right = x.subspan(best, end - best);
  const double ml = stats::median(left), mr = stats::median(right);
  const double nl = static_cast<double>(left.size()), nr = static_cast<double>(right.size());
  *step = mr - ml;
  return {best, std::fabs(mr - ml) / noise * std::sqrt(nl * nr / (nl + nr))};
}

void segment(std::span<const double> x, std::size_t begin, std::size_t end, double min_score, double min_log_step,
             std::size_t min_segment, double noise, std::vector<std::size_t>& out) {
  if (end - begin < 2 * min_segment) return;
  double step = 0;
  const auto [k, score] = best_split(x, begin, end, min_segment, noise, &step);
  if (k == 0 || score < min_score || std::fabs(step) < min_log_step) return;
  out.push_back(k);
  segment(x, begin, k, min_score, min_log_step, min_segment, noise, out);
  segment(x, k, end, min_score, min_log_step, min_segment, noise, out);
}

}  // namespace

std::vector<std::size_t> detect_change_points(std::span<const double> series, double min_score,
                                              double min_relative_step, std::size_t min_segment) {
  if (series.empty()) throw std::invalid_argument("pairbench::detect_change_points: no values");
  std::vector<double> logs;
  for (double v : series) {
    if (v <= 0) throw std::invalid_argument("pairbench::detect_change_points: values must be > 0");
    logs.push_back(std::log(v));
  }
  // Noise from consecutive differences: a few steps barely move their median, so the scale stays
  // the run-to-run noise even when the series holds several steps. Floored so that a perfectly
  // flat series with one tiny step is not "infinitely" significant.
  double noise = 1e-3;
  if (logs.size() > 2) {
    std::vector<double> diffs;
    for (std::size_t i = 1; i < logs.size(); ++i) diffs.push_back(std::fabs(logs[i] - logs[i - 1]));
    noise = std::max(noise, stats::kMadToSigma * stats::median(diffs) / std::sqrt(2.0));
  }
  std::vector<std::size_t> out;
  segment(logs, 0, logs.size(), min_score, std::log1p(min_relative_step), std::max<std::size_t>(min_segment, 1), noise,
          out);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<FoundChangePoint> find_change_points(const History::Series& series) {
  std::vector<double> medians;
  for (const auto& p : series.points) medians.push_back(p.median);
  if (medians.empty() || std::any_of(medians.begin(), medians.end(), [](double m) { return !(m > 0); })) return {};
  const auto splits = detect_change_points(medians);
  std::vector<FoundChangePoint> out;
  for (std::size_t i = 0; i < splits.size(); ++i) {
    const std::size_t k = splits[i];
    const std::size_t begin = i == 0 ? 0 : splits[i - 1];
    const std::size_t end = i + 1 < splits.size() ? splits[i + 1] : medians.size();
    const double before = stats::median(std::span<const double>(medians).subspan(begin, k - begin));
    const double after = stats::median(std::span<const double>(medians).subspan(k, end - k));
    out.push_back({k, {series.points[k].run_id, before, after}});
  }
  return out;
}

}  // namespace pairbench::harness
