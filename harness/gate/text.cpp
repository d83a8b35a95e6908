// Text shared by the gate's notes and printers, and the headline every output opens with.
#include "harness/gate/text.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

namespace pairbench::harness {
namespace gate_text {

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100 * fraction);
  return buf;
}

std::string change_text(const BenchmarkVerdict& v) {
  if (v.baseline_samples == 0 || v.current_samples == 0) return "";
  return percent(v.slowdown) + " [" + percent(v.slowdown_low) + ", " + percent(v.slowdown_high) + "]";
}

std::string row_name(const BenchmarkVerdict& v) {
  return v.instrument == Instrument::time ? v.benchmark : v.benchmark + " [instructions]";
}

std::string gated_text(const BenchmarkVerdict& v) {
  if (v.instrument != Instrument::time || !(v.gated_at > 0) || v.baseline_samples == 0 || v.current_samples == 0) {
    return "";
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "\u00b1%.1f%%", 100 * v.gated_at);
  return buf;
}

std::string gated_summary(const GateReport& r) {
  int at_threshold = 0;
  std::vector<const BenchmarkVerdict*> at_resolution;
  for (const auto& v : r.rows) {
    if (gated_text(v).empty()) continue;
    if (v.gated_at > v.threshold) {
      at_resolution.push_back(&v);
    } else {
      ++at_threshold;
    }
  }
  if (at_resolution.empty() && at_threshold == 0) return "";
  std::string text = "gated at the threshold: " + std::to_string(at_threshold) +
                     " time benchmarks; at their resolution: " + std::to_string(at_resolution.size());
  if (!at_resolution.empty()) {
    std::sort(at_resolution.begin(), at_resolution.end(),
              [](const auto* a, const auto* b) { return a->gated_at < b->gated_at; });
    char buf[400];
    std::snprintf(buf, sizeof buf, " (median \u00b1%.1f%%, largest \u00b1%.1f%% %s)",
                  100 * at_resolution[at_resolution.size() / 2]->gated_at, 100 * at_resolution.back()->gated_at,
                  at_resolution.back()->benchmark.c_str());
    text += buf;
    // A resolution of +-220 % says the noise, not the code: how many rows that is (their verdict
    // is not_gated, counted apart in the headline).
    const auto wide = std::count_if(at_resolution.begin(), at_resolution.end(),
                                    [](const auto* v) { return v->gated_at > kWidestGatedResolution; });
    if (wide > 0) {
      std::snprintf(buf, sizeof buf, "; %d wider than \u00b1%.0f%%: not gated on time in this comparison",
                    static_cast<int>(wide), 100 * kWidestGatedResolution);
      text += buf;
    }
  }
  return text;
}

std::string pooled_run_noise_text(const GateReport& r) {
  if (r.pooled_run_variance < 0) return "";
  int rows = 0;
  for (const auto& v : r.rows) rows += v.run_noise_pooled ? 1 : 0;
  char buf[300];
  std::snprintf(buf, sizeof buf,
                "run-to-run noise of the %d benchmarks without 3 runs of history: %.1f%% (one estimate from this "
                "comparison's %d benchmarks)",
                rows, 100 * std::sqrt(r.pooled_run_variance), r.pooled_run_benchmarks);
  return buf;
}

std::string count_text(double x, bool sign, bool bound) {
  char buf[64];
  if (std::fabs(x) >= 1000) {
    std::snprintf(buf, sizeof buf, "%.0f", std::fabs(x));
    std::string digits = buf, grouped;
    for (std::size_t i = 0; i < digits.size(); ++i) {
      if (i > 0 && (digits.size() - i) % 3 == 0) grouped += ',';
      grouped += digits[i];
    }
    std::snprintf(buf, sizeof buf, "%s%s", x < 0 ? "-" : (sign ? "+" : ""), grouped.c_str());
  } else {
    std::snprintf(buf, sizeof buf, sign ? "%+.1f" : "%.1f", x);
  }
  return (bound ? "<=" : "") + std::string(buf);
}

std::string function_diff_heading(const BenchmarkVerdict& v) {
  double shown = 0;
  for (const FunctionChange& f : v.functions) shown += f.change();
  return std::string("functions that ") + (v.verdict == Verdict::improvement ? "removed" : "added") +
         " the most instructions per iteration (callgrind, self): " + count_text(shown, true) + " of the benchmark's " +
         count_text(v.functions_total_change, true);
}

std::vector<std::string> function_diff_lines(const BenchmarkVerdict& v) {
  std::vector<std::string> out;
  if (v.functions.empty()) {
    if (!v.functions_note.empty()) out.push_back(v.functions_note);
    return out;
  }
  out.push_back(function_diff_heading(v));
  char line[600];
  std::snprintf(line, sizeof line, "  %14s %14s %14s  %s", "baseline", "current", "change", "function");
  out.push_back(line);
  for (const FunctionChange& f : v.functions) {
    std::snprintf(line, sizeof line, "  %14s %14s %14s  %s", count_text(f.baseline, false, f.baseline_bound).c_str(),
                  count_text(f.current, false, f.current_bound).c_str(), count_text(f.change(), true).c_str(),
                  f.function.c_str());
    out.push_back(line);
  }
  return out;
}

}  // namespace gate_text

std::string GateReport::not_gated_text() const {
  const int n = count(Verdict::not_gated);
  if (n == 0) return "";
  char buf[160];
  std::snprintf(buf, sizeof buf,
                ", %d not gated here (resolution wider than \u00b1%.0f%% or no run history of their own)", n,
                100 * kWidestGatedResolution);
  return buf;
}

std::string RunShift::text() const {
  if (!moved) return "";
  char buf[400];
  std::snprintf(
      buf, sizeof buf,
      "the whole run moved: median %+.1f %% over %d time rows, %d of them %s, the limits experiments %+.1f %% "
      "(%d rows): the machine, not necessarily the code; %d %s held undecided as suspects",
      100 * median, rows, with_median, median > 0 ? "worse" : "better", 100 * limit_median, limit_rows, held,
      median > 0 ? (held == 1 ? "regression" : "regressions") : (held == 1 ? "improvement" : "improvements"));
  return buf;
}

std::string GateReport::headline() const {
  auto plural = [](int n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
  };
  return plural(count(Verdict::regression), "regression", "regressions") + ", " +
         std::to_string(count(Verdict::undecided)) + " undecided, " + std::to_string(count(Verdict::unchanged)) +
         " unchanged" + not_gated_text() + " (+ " + plural(count(Verdict::improvement), "improvement", "improvements") +
         ", " + std::to_string(count(Verdict::broken)) + " broken, " + std::to_string(count(Verdict::new_)) + " new, " +
         std::to_string(count(Verdict::missing)) + " missing)";
}

}  // namespace pairbench::harness
