// Per-benchmark comparison of two runs, corrected for multiple testing, in four output formats.
#include "harness/gate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>

#include "harness/environment.h"
#include "harness/stats.h"

namespace pairbench::harness {
namespace {

struct Samples {
  std::string experiment;
  std::vector<double> values;
};

std::map<std::string, Samples> samples_by_benchmark(const nlohmann::json& doc) {
  std::map<std::string, Samples> out;
  for (const auto& b : doc.at("benchmarks")) {
    auto& s = out[b.at("name").get<std::string>()];
    s.experiment = b.at("experiment").get<std::string>();
    s.values.push_back(b.at("metric_value").get<double>());
  }
  return out;
}

struct ExperimentInfo {
  std::string metric, unit, better;
  double threshold = 0;
};

std::map<std::string, ExperimentInfo> experiments_of(const nlohmann::json& doc) {
  std::map<std::string, ExperimentInfo> out;
  for (const auto& e : doc.at("pairbench").at("experiments")) {
    out[e.at("name")] = {e.at("metric"), e.at("unit"), e.at("better"), e.value("gate_threshold", 0.0)};
  }
  return out;
}

// Benchmarks that stopped working: failed or incorrect in this run (pairbench.not_run).
std::map<std::string, std::string> broken_in(const nlohmann::json& doc) {
  std::map<std::string, std::string> out;
  for (const auto& n : doc.at("pairbench").value("not_run", nlohmann::json::array())) {
    const std::string v = n.value("verification", "");
    if (v == "failed" || v == "incorrect") out[n.at("name")] = v + ": " + n.value("reason", "");
  }
  return out;
}

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100 * fraction);
  return buf;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\n' || c == '\t') out += c;  // XML forbids other controls
    }
  }
  return out;
}

std::string md_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|' || c == '<' || c == '>' || c == '*' || c == '_' || c == '`') out += '\\';
    out += c;
  }
  return out;
}

std::string change_text(const BenchmarkVerdict& v) {
  if (v.baseline_samples == 0 || v.current_samples == 0) return "";
  return percent(v.slowdown) + " [" + percent(v.slowdown_low) + ", " + percent(v.slowdown_high) + "]";
}

}  // namespace

int GateReport::count(const std::string& verdict) const {
  return static_cast<int>(std::count_if(rows.begin(), rows.end(), [&](const auto& r) { return r.verdict == verdict; }));
}

std::vector<std::string> fingerprint_differences(const nlohmann::json& a, const nlohmann::json& b) {
  std::vector<std::string> out;
  for (const char* field : kComparableFields) {
    const nlohmann::json va = a.value(field, nlohmann::json()), vb = b.value(field, nlohmann::json());
    if (va != vb) out.push_back(std::string(field) + ": " + va.dump() + " vs " + vb.dump());
  }
  return out;
}

GateReport compare_runs(const nlohmann::json& baseline, const nlohmann::json& current, const GateOptions& options,
                        const std::string& baseline_label, const std::string& current_label) {
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
  const auto base = samples_by_benchmark(baseline), cur = samples_by_benchmark(current);
  auto info = experiments_of(baseline);
  for (const auto& [name, e] : experiments_of(current)) info[name] = e;  // the current run's declaration wins
  const auto broken = broken_in(current);

  std::vector<std::size_t> tested;  // rows that get a p-value, for the correction
  std::vector<double> p_values;
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
      v.verdict = br != broken.end() ? "broken" : "missing";
      v.note = br != broken.end() ? br->second : "not in the current run";
      report.rows.push_back(v);
      continue;
    }
    const auto& c = it->second.values;
    v.current_samples = static_cast<int>(c.size());
    v.current_median = stats::median(c);
    // Slowdown as a ratio > 1 when worse: time current/baseline, throughput baseline/current.
    const bool lower_better = e.better != "higher";
    const auto r = lower_better ? stats::ratio_of(c, b.values, options.confidence)
                                : stats::ratio_of(b.values, c, options.confidence);
    v.slowdown = r.ratio - 1, v.slowdown_low = r.ci_low - 1, v.slowdown_high = r.ci_high - 1;
    v.noise_cv = std::max(b.values.size() > 1 ? stats::robust_cv(b.values) : 0.0, c.size() > 1 ? stats::robust_cv(c) : 0.0);
    v.p_value = stats::mann_whitney_p_two_sided(b.values, c);
    tested.push_back(report.rows.size());
    p_values.push_back(v.p_value);
    report.rows.push_back(v);
  }
  for (const auto& [name, c] : cur) {
    if (base.count(name)) continue;
    BenchmarkVerdict v;
    v.benchmark = name;
    v.experiment = c.experiment;
    v.current_samples = static_cast<int>(c.values.size());
    v.current_median = stats::median(c.values);
    v.verdict = "new";
    v.note = "not in the baseline";
    report.rows.push_back(v);
  }

  const std::vector<double> adjusted =
      options.correction == "bh" ? stats::benjamini_hochberg_adjust(p_values) : stats::holm_adjust(p_values);
  for (std::size_t i = 0; i < tested.size(); ++i) {
    BenchmarkVerdict& v = report.rows[tested[i]];
    v.p_adjusted = adjusted[i];
    const bool significant = v.p_adjusted < options.alpha;
    // The smallest p-value these sample sizes can give: perfect separation, 2 / C(m+n, m).
    const double m = v.baseline_samples, n = v.current_samples;
    const double min_p = 2.0 / std::exp(std::lgamma(m + n + 1) - std::lgamma(m + 1) - std::lgamma(n + 1));
    const double min_adjusted = std::min(1.0, min_p * static_cast<double>(tested.size()));
    if (significant && v.slowdown > 0 && v.slowdown_high >= v.threshold) {
      v.verdict = "regression";
    } else if (significant && v.slowdown < 0 && -v.slowdown_low >= v.threshold) {
      v.verdict = "improvement";
    } else if (v.slowdown_high < v.threshold && v.slowdown_low > -v.threshold) {
      v.verdict = "unchanged";  // the interval rules out a threshold-sized change either way
    } else if (min_adjusted >= options.alpha) {
      v.verdict = "undecidable";
      char buf[200];
      std::snprintf(buf, sizeof buf, "%d vs %d samples cannot reach alpha %.3g after correcting for %zu benchmarks",
                    v.baseline_samples, v.current_samples, options.alpha, tested.size());
      v.note = buf;
    } else if (significant) {
      v.verdict = "unchanged";  // a real but smaller-than-threshold change
      v.note = "significant change within the threshold";
    } else {
      v.verdict = "noisy";
      char buf[160];
      std::snprintf(buf, sizeof buf, "cannot rule out a %.0f%% change: noise %.1f%% (robust CV)", 100 * v.threshold,
                    100 * v.noise_cv);
      v.note = buf;
    }
  }
  return report;
}

void print_gate_table(std::ostream& out, const GateReport& r) {
  out << "baseline: " << r.baseline_label << "\ncurrent:  " << r.current_label << "\n";
  if (r.forced) {
    out << "WARNING: forced comparison of different machines or builds:\n";
    for (const auto& d : r.fingerprint_differences) out << "  " << d << "\n";
  }
  char line[600];
  std::snprintf(line, sizeof line, "%-60s %-12s %-28s %9s %7s  %s\n", "benchmark", "verdict", "change [CI] (+ = worse)",
                "p (adj)", "noise", "note");
  out << line;
  for (const auto& v : r.rows) {
    char p[32] = "", noise[32] = "";
    if (v.baseline_samples && v.current_samples) {
      std::snprintf(p, sizeof p, "%.2g", v.p_adjusted);
      std::snprintf(noise, sizeof noise, "%.1f%%", 100 * v.noise_cv);
    }
    std::snprintf(line, sizeof line, "%-60s %-12s %-28s %9s %7s  %s\n", v.benchmark.c_str(), v.verdict.c_str(),
                  change_text(v).c_str(), p, noise, v.note.c_str());
    out << line;
  }
  std::snprintf(line, sizeof line,
                "\n%zu benchmarks: %d regression(s), %d broken, %d improvement(s), %d unchanged, %d noisy, "
                "%d undecidable, %d missing, %d new (threshold %.0f%%, %s alpha %.3g)\n",
                r.rows.size(), r.count("regression"), r.count("broken"), r.count("improvement"), r.count("unchanged"),
                r.count("noisy"), r.count("undecidable"), r.count("missing"), r.count("new"), 100 * r.options.threshold,
                r.options.correction.c_str(), r.options.alpha);
  out << line << (r.failed() ? "GATE FAILED\n" : "gate passed\n");
}

std::string gate_markdown(const GateReport& r) {
  std::ostringstream md;
  md << "## pairbench gate: " << (r.failed() ? "**failed**" : "passed") << "\n\n";
  md << r.rows.size() << " benchmarks: " << r.count("regression") << " regression(s), " << r.count("broken")
     << " broken, " << r.count("improvement") << " improvement(s), " << r.count("unchanged") << " unchanged, "
     << r.count("noisy") << " noisy, " << r.count("undecidable") << " undecidable, " << r.count("missing")
     << " missing, " << r.count("new") << " new. Threshold " << 100 * r.options.threshold << " %, "
     << r.options.correction << " at alpha " << r.options.alpha << ".\n\n";
  md << "Baseline `" << md_escape(r.baseline_label) << "`, current `" << md_escape(r.current_label) << "`.\n\n";
  if (r.forced) {
    md << "> **Forced comparison of different machines or builds:** ";
    for (const auto& d : r.fingerprint_differences) md << md_escape(d) << "; ";
    md << "\n\n";
  }
  auto table = [&](const std::vector<const BenchmarkVerdict*>& rows) {
    md << "| benchmark | verdict | change [CI] (+ = worse) | p (adjusted) | noise | note |\n|---|---|---|---|---|---|\n";
    for (const auto* v : rows) {
      char p[32] = "", noise[32] = "";
      if (v->baseline_samples && v->current_samples) {
        std::snprintf(p, sizeof p, "%.2g", v->p_adjusted);
        std::snprintf(noise, sizeof noise, "%.1f %%", 100 * v->noise_cv);
      }
      md << "| " << md_escape(v->benchmark) << " | " << v->verdict << " | " << change_text(*v) << " | " << p << " | "
         << noise << " | " << md_escape(v->note) << " |\n";
    }
    md << "\n";
  };
  std::vector<const BenchmarkVerdict*> notable, all;
  for (const auto& v : r.rows) {
    all.push_back(&v);
    if (v.verdict != "unchanged") notable.push_back(&v);
  }
  if (!notable.empty()) {
    md << "### Needs attention\n\n";
    table(notable);
  }
  md << "<details><summary>All benchmarks</summary>\n\n";
  table(all);
  md << "</details>\n";
  return md.str();
}

std::string gate_junit(const GateReport& r) {
  std::ostringstream x;
  x << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x << "<testsuites name=\"pairbench gate\" tests=\"" << r.rows.size() << "\" failures=\""
    << r.count("regression") + r.count("broken") << "\">\n";
  x << "  <testsuite name=\"pairbench gate\" tests=\"" << r.rows.size() << "\" failures=\""
    << r.count("regression") + r.count("broken") << "\" skipped=\""
    << r.count("noisy") + r.count("undecidable") + r.count("missing") + r.count("new") << "\">\n";
  for (const auto& v : r.rows) {
    x << "    <testcase classname=\"" << xml_escape(v.experiment) << "\" name=\"" << xml_escape(v.benchmark) << "\">";
    const std::string message = v.verdict + (change_text(v).empty() ? "" : " " + change_text(v)) +
                                (v.note.empty() ? "" : ": " + v.note);
    if (v.verdict == "regression" || v.verdict == "broken") {
      x << "<failure message=\"" << xml_escape(message) << "\"/>";
    } else if (v.verdict == "noisy" || v.verdict == "undecidable" || v.verdict == "missing" || v.verdict == "new") {
      x << "<skipped message=\"" << xml_escape(message) << "\"/>";
    } else {
      x << "<system-out>" << xml_escape(message) << "</system-out>";
    }
    x << "</testcase>\n";
  }
  x << "  </testsuite>\n</testsuites>\n";
  return x.str();
}

nlohmann::json gate_json(const GateReport& r) {
  nlohmann::json j = {{"baseline", r.baseline_label},
                      {"current", r.current_label},
                      {"failed", r.failed()},
                      {"forced", r.forced},
                      {"fingerprint_differences", r.fingerprint_differences},
                      {"threshold", r.options.threshold},
                      {"alpha", r.options.alpha},
                      {"correction", r.options.correction},
                      {"benchmarks", nlohmann::json::array()}};
  for (const auto& v : r.rows) {
    j["benchmarks"].push_back({{"name", v.benchmark}, {"experiment", v.experiment}, {"verdict", v.verdict},
                               {"note", v.note}, {"metric", v.metric}, {"unit", v.unit}, {"better", v.better},
                               {"baseline_samples", v.baseline_samples}, {"current_samples", v.current_samples},
                               {"baseline_median", v.baseline_median}, {"current_median", v.current_median},
                               {"slowdown", v.slowdown}, {"slowdown_low", v.slowdown_low},
                               {"slowdown_high", v.slowdown_high}, {"p_value", v.p_value},
                               {"p_adjusted", v.p_adjusted}, {"noise_cv", v.noise_cv}, {"threshold", v.threshold}});
  }
  return j;
}

}  // namespace pairbench::harness
