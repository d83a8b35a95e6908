// Experiment summaries from samples: medians, Hodges–Lehmann ratios with intervals, targets.
#include "harness/summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "harness/stats.h"

namespace pairbench::harness {

std::string format_quantity(double value, const std::string& unit) {
  if (!std::isfinite(value)) return "n/a";
  char buf[64];
  if (unit == "ns") {
    // Times are kept in ns (the metric's unit); shown in the largest unit that keeps >= 1.
    const char* units[] = {"ns", "us", "ms", "s"};
    int u = 0;
    while (std::fabs(value) >= 1000 && u < 3) {
      value /= 1000;
      ++u;
    }
    std::snprintf(buf, sizeof buf, "%.4g %s", value, units[u]);
    return buf;
  }
  const char* prefixes[] = {"", "k", "M", "G", "T", "P"};
  int p = 0;
  while (std::fabs(value) >= 1000 && p < 5) {
    value /= 1000;
    ++p;
  }
  std::snprintf(buf, sizeof buf, "%.4g %s%s", value, prefixes[p], unit.c_str());
  return buf;
}

namespace {

// The worst status wins: one failed repetition makes the arm failed.
std::string combine_verification(const std::vector<const Sample*>& samples) {
  static const std::map<std::string, int> kRank = {
      {"passed", 0}, {"not_verified", 1}, {"not_supported", 2}, {"incorrect", 3}, {"failed", 4}};
  std::string worst = "passed";
  for (const Sample* s : samples) {
    const auto it = kRank.find(s->verification);
    if (it == kRank.end() || it->second > kRank.at(worst)) worst = it == kRank.end() ? "failed" : s->verification;
  }
  return samples.empty() ? "not_run" : worst;
}

bool matches(const nlohmann::json& params, const std::map<std::string, std::string>& want) {
  for (const auto& [k, v] : want) {
    if (!params.contains(k) || params[k] != v) return false;
  }
  return true;
}

// A measured benchmark that may be the limit: its median in the limit's unit.
struct LimitCandidate {
  std::string benchmark;
  double median = 0;
};

// The value of `arm` placed against a limit: its deciding metric, or the named secondary counter.
const nlohmann::json* placed_value(const nlohmann::json& arm, const std::string& counter) {
  if (counter.empty()) return arm.contains("median") ? &arm : nullptr;
  if (!arm.contains("secondary") || !arm["secondary"].contains(counter)) return nullptr;
  const nlohmann::json& v = arm["secondary"][counter];
  return v.contains("median") && v["median"].is_number() ? &v : nullptr;
}

// Every benchmark of the limit's sources that has a median in this run.
std::vector<LimitCandidate> external_candidates(const LimitEntry& l, const nlohmann::json& summary) {
  std::vector<LimitSourceEntry> sources = {{l.experiment, l.arm, l.where}};
  sources.insert(sources.end(), l.also.begin(), l.also.end());
  std::vector<LimitCandidate> out;
  for (const LimitSourceEntry& source : sources) {
    for (const auto& other : summary) {
      if (other["name"] != source.experiment) continue;
      for (const auto& p : other["points"]) {
        if (!matches(p["params"], source.where)) continue;
        for (const auto& a : p["arms"]) {
          if ((source.arm.empty() || a["arm"] == source.arm) && a.contains("median")) {
            out.push_back({a["benchmark"].get<std::string>(), a["median"].get<double>()});
          }
        }
      }
    }
  }
  return out;
}

// Second pass: each arm with a LimitRef gets the best candidate's median as its limit, and its own
// percentage of it. A figure more than kLimitDefectMargin above its limit is a measurement defect
// (the limit was not the best this machine can do): flagged, never shown as a plain percentage.
// The margin is on the medians: 5 %, above the ~4 % run-to-run noise of a bandwidth median on
// the development VM and far below the 10-40 % by which a wrong limit is exceeded.
void attach_limits(const std::vector<ExperimentEntry>& experiments, nlohmann::json& summary) {
  for (std::size_t i = 0; i < experiments.size(); ++i) {
    for (const LimitEntry& l : experiments[i].limits) {
      const std::vector<LimitCandidate> external = external_candidates(l, summary);
      if (external.empty()) continue;  // the limit was not run (not selected, or failed)
      for (auto& p : summary[i]["points"]) {
        if (!matches(p["params"], l.when)) continue;
        std::vector<LimitCandidate> candidates = external;
        if (l.own_arms) {
          for (const auto& a : p["arms"]) {
            if (const nlohmann::json* v = placed_value(a, l.counter)) {
              candidates.push_back({a["benchmark"].get<std::string>(), (*v)["median"].get<double>()});
            }
          }
        }
        for (auto& a : p["arms"]) {
          const bool wanted = l.arms.empty() || std::find(l.arms.begin(), l.arms.end(), a["arm"]) != l.arms.end();
          if (!wanted || a.contains("limit")) continue;
          const nlohmann::json* ours = placed_value(a, l.counter);
          if (!ours) continue;
          // The direction of what is placed: the deciding metric's, or the counter's own.
          const std::string better = (l.counter.empty() ? summary[i]["better"] : (*ours)["better"]).get<std::string>();
          const bool lower_better = better == "lower";
          const LimitCandidate& best = *std::max_element(
              candidates.begin(), candidates.end(), [&](const LimitCandidate& x, const LimitCandidate& y) {
                return lower_better ? x.median > y.median : x.median < y.median;
              });
          a["limit"] = {{"benchmark", best.benchmark}, {"median", best.median}, {"best_of", candidates.size()}};
          if (!l.counter.empty()) a["limit"]["counter"] = l.counter;
          // Percent of the limit: for lower-is-better metrics the limit is a floor, so invert.
          const double m = (*ours)["median"].get<double>();
          const double percent = 100.0 * (lower_better ? best.median / m : m / best.median);
          a["percent_of_limit"] = percent;
          if (percent > 100.0 * (1 + kLimitDefectMargin)) {
            char text[320];
            std::snprintf(text, sizeof text, "measured %.0f %% of %s: a limit must be the best this machine can do",
                          percent, best.benchmark.c_str());
            a["limit_defect"] = text;
          }
        }
      }
    }
  }
}

}  // namespace

nlohmann::json summarise(const std::vector<ExperimentEntry>& experiments, const std::vector<Sample>& samples,
                         double confidence) {
  std::map<std::string, std::vector<const Sample*>> by_benchmark;
  for (const Sample& s : samples) {
    if (s.instrument == "time") by_benchmark[s.benchmark].push_back(&s);  // instruction counts are gated, not summarised
  }

  nlohmann::json out = nlohmann::json::array();
  for (const ExperimentEntry& e : experiments) {
    nlohmann::json je = {{"name", e.name},     {"question", e.question}, {"claim", e.claim},
                         {"kind", e.kind},     {"metric", e.metric},     {"unit", e.unit},
                         {"better", e.better}, {"timing", e.timing},     {"points", nlohmann::json::array()}};
    // Group benchmarks by grid point (their params), keeping grid order.
    std::vector<std::vector<std::pair<std::string, std::string>>> points;
    for (const auto& b : e.benchmarks) {
      if (std::find(points.begin(), points.end(), b.params) == points.end()) points.push_back(b.params);
    }
    for (const auto& params : points) {
      nlohmann::json jp = {{"params", nlohmann::json::object()}, {"arms", nlohmann::json::array()},
                           {"ratios", nlohmann::json::array()}, {"targets", nlohmann::json::array()}};
      for (const auto& [k, v] : params) jp["params"][k] = v;
      std::map<std::string, std::vector<double>> values;  // arm -> good samples
      std::map<std::string, double> medians;
      for (const ArmEntry& arm : e.arms) {
        const BenchmarkEntry* b = nullptr;
        for (const auto& cand : e.benchmarks) {
          if (cand.arm == arm.name && cand.params == params) b = &cand;
        }
        if (!b) continue;  // the arm does not apply at this point
        const auto& ss = by_benchmark[b->name];
        nlohmann::json ja = {{"arm", arm.name}, {"role", arm.role}, {"benchmark", b->name}, {"unit", e.unit}};
        std::vector<double> good;
        std::string reason;
        for (const Sample* s : ss) {
          if (s->has_value && (s->verification == "passed" || s->verification == "not_verified")) {
            good.push_back(process_value(*s));
          } else if (reason.empty()) {
            reason = s->reason;
          }
        }
        // Secondary counters and the label (e.g. which allocator or BLAS kernel was verified).
        std::map<std::string, int> labels;
        nlohmann::json secondary = nlohmann::json::object();
        for (const SecondaryMetric& m : e.secondary) {
          std::vector<double> vs;
          for (const Sample* s : ss) {
            if (s->has_value && s->gbench.contains(m.name) && s->gbench[m.name].is_number()) {
              vs.push_back(s->gbench[m.name].get<double>());
            }
          }
          if (!vs.empty()) secondary[m.name] = {{"median", stats::median(vs)}, {"unit", m.unit}, {"better", m.better}};
        }
        for (const Sample* s : ss) {
          if (s->has_value && s->gbench.contains("label") && s->gbench["label"].is_string()) {
            ++labels[s->gbench["label"].get<std::string>()];
          }
        }
        if (!secondary.empty()) ja["secondary"] = secondary;
        // Harness overhead: the share of each process's wall time not spent in the reported
        // measurement (process start, environment verification, setup, Google Benchmark's
        // calibration runs). Issue target for environment arms: <= 5 % in the nightly profile.
        std::vector<double> overheads;
        for (const Sample* s : ss) {
          if (!s->has_value || s->process_wall_s <= 0 || !s->gbench.contains("iterations")) continue;
          const std::string unit = s->gbench.value("time_unit", "ns");
          const double scale = unit == "s" ? 1 : unit == "ms" ? 1e-3 : unit == "us" ? 1e-6 : 1e-9;
          const double measured_s = s->gbench.value("iterations", 0.0) * s->gbench.value("real_time", 0.0) * scale;
          overheads.push_back(std::clamp(1 - measured_s / s->process_wall_s, 0.0, 1.0));
        }
        if (!overheads.empty()) ja["harness_overhead"] = stats::median(overheads);
        if (!arm.env.empty()) ja["environment_arm"] = true;
        if (!labels.empty()) {
          ja["label"] = std::max_element(labels.begin(), labels.end(),
                                         [](const auto& a, const auto& b) { return a.second < b.second; })->first;
          if (labels.size() > 1) ja["labels_differ"] = true;
        }
        ja["verification"] = combine_verification(ss);
        ja["samples"] = good.size();
        if (!reason.empty()) ja["reason"] = reason;
        if (!good.empty()) {
          const double m = stats::median(good);
          ja["median"] = m;
          ja["min"] = *std::min_element(good.begin(), good.end());
          ja["max"] = *std::max_element(good.begin(), good.end());
          ja["cv"] = good.size() > 1 ? stats::robust_cv(good) : 0.0;
          values[arm.name] = good;
          medians[arm.name] = m;
        }
        jp["arms"].push_back(ja);
      }
      // Ratios: oriented so that > 1 means the treatment is better than the baseline.
      if (e.kind == "comparison" && !e.arms.empty() && values.count(e.arms.front().name)) {
        const auto& base = values[e.arms.front().name];
        for (std::size_t i = 1; i < e.arms.size(); ++i) {
          const auto it = values.find(e.arms[i].name);
          if (it == values.end()) continue;
          const bool lower_better = e.better == "lower";
          const auto r = lower_better ? stats::ratio_of(base, it->second, confidence)
                                      : stats::ratio_of(it->second, base, confidence);
          const double of_medians = lower_better ? medians[e.arms.front().name] / medians[e.arms[i].name]
                                                 : medians[e.arms[i].name] / medians[e.arms.front().name];
          jp["ratios"].push_back({{"treatment", e.arms[i].name},
                                  {"ratio", r.ratio},
                                  {"ci_low", r.ci_low},
                                  {"ci_high", r.ci_high},
                                  {"confidence", r.confidence_achieved},
                                  {"ratio_of_medians", of_medians},
                                  {"estimator", "hodges_lehmann_log"}});
        }
      }
      // Secondary counters: ratio of medians to the baseline's, > 1 = better by that counter.
      if (!jp["arms"].empty() && jp["arms"][0].contains("secondary")) {
        const auto& base = jp["arms"][0]["secondary"];
        for (std::size_t i = 1; i < jp["arms"].size(); ++i) {
          auto& a = jp["arms"][i];
          if (!a.contains("secondary")) continue;
          for (auto& [name, m] : a["secondary"].items()) {
            if (!base.contains(name)) continue;
            const double b = base[name]["median"].get<double>(), t = m["median"].get<double>();
            if (b > 0 && t > 0) m["ratio"] = m["better"] == "higher" ? t / b : b / t;
          }
        }
      }
      for (const TargetEntry& t : e.targets) {
        bool applies = true;
        for (const auto& [k, v] : t.where) {
          const auto it = std::find_if(params.begin(), params.end(), [&](const auto& kv) { return kv.first == k; });
          if (it == params.end() || it->second != v) applies = false;
        }
        if (!applies || !medians.count(t.arm)) continue;
        const double m = medians[t.arm];
        const bool met = e.better == "lower" ? m <= t.bound : m >= t.bound;
        jp["targets"].push_back({{"arm", t.arm}, {"text", t.text}, {"bound", t.bound}, {"median", m}, {"met", met}});
      }
      je["points"].push_back(jp);
    }
    out.push_back(je);
  }
  attach_limits(experiments, out);
  return out;
}

void print_summary(std::ostream& out, const nlohmann::json& summary) {
  char line[512];
  for (const auto& e : summary) {
    const std::string claim = e["claim"].get<std::string>();
    out << "\n" << e["name"].get<std::string>() << (claim.empty() ? "" : " (" + claim + ")") << ": "
        << e["question"].get<std::string>() << "\n";
    std::snprintf(line, sizeof line, "  %-34s %-22s %12s %7s %3s  %-13s %s\n", "point", "arm",
                  ("median " + e["metric"].get<std::string>()).c_str(), "cv", "n", "verification",
                  e["kind"] == "limit" ? "" : "vs baseline (>1: treatment better) [95% CI]");
    out << line;
    for (const auto& p : e["points"]) {
      std::string point;
      for (const auto& [k, v] : p["params"].items()) point += (point.empty() ? "" : " ") + k + ":" + v.get<std::string>();
      if (point.empty()) point = "-";
      bool first = true;
      for (const auto& a : p["arms"]) {
        std::string median = "-", cv = "-", ratio;
        if (a.contains("median")) {
          median = format_quantity(a["median"].get<double>(), e["unit"].get<std::string>());
          char c[32];
          std::snprintf(c, sizeof c, "%.1f%%", 100 * a["cv"].get<double>());
          cv = c;
        }
        for (const auto& r : p["ratios"]) {
          if (r["treatment"] == a["arm"]) {
            char c[128];
            std::snprintf(c, sizeof c, "%.3gx [%.3g, %.3g]", r["ratio"].get<double>(), r["ci_low"].get<double>(),
                          r["ci_high"].get<double>());
            ratio = c;
            // With few samples the 95% level cannot be reached; say what the interval covers.
            const double level = r["confidence"].get<double>();
            if (level < 0.949) {
              std::snprintf(c, sizeof c, " (%.0f%% CI)", 100 * level);
              ratio += c;
            }
          }
        }
        if (a.contains("percent_of_limit")) {
          char c[48];
          // Above its limit beyond the margin: a measurement defect, never a plain percentage.
          std::snprintf(c, sizeof c, "%s%.0f%% of limit", a.contains("limit_defect") ? "DEFECT " : "",
                        a["percent_of_limit"].get<double>());
          std::string pct = c;
          if (a["limit"].contains("counter")) pct = a["limit"]["counter"].get<std::string>() + " " + pct;
          ratio = ratio.empty() ? pct : ratio + "; " + pct;
        }
        std::string verification = a["verification"].get<std::string>();
        if (a.contains("reason") && verification != "passed") ratio = a["reason"].get<std::string>();
        std::snprintf(line, sizeof line, "  %-34s %-22s %12s %7s %3d  %-13s %s\n", first ? point.c_str() : "",
                      a["arm"].get<std::string>().c_str(), median.c_str(), cv.c_str(), a["samples"].get<int>(),
                      verification.c_str(), ratio.c_str());
        out << line;
        if (a.contains("secondary")) {
          std::string extra;
          for (const auto& [name, m] : a["secondary"].items()) {
            extra += (extra.empty() ? "" : ", ") + name + " " +
                     format_quantity(m["median"].get<double>(), m["unit"].get<std::string>());
            if (m.contains("ratio")) {
              char c[32];
              std::snprintf(c, sizeof c, " (%.3gx)", m["ratio"].get<double>());
              extra += c;
            }
          }
          out << "  " << std::string(35, ' ') << "  " << extra << "\n";
        }
        if (a.contains("environment_arm") && a.contains("harness_overhead")) {
          char c[96];
          std::snprintf(c, sizeof c, "harness overhead %.0f%% of the process's wall time",
                        100 * a["harness_overhead"].get<double>());
          out << "  " << std::string(35, ' ') << "  " << c << "\n";
        }
        if (a.contains("label")) {
          // The label's first fields say what was verified in effect; the run file has all of it.
          std::string label = a["label"].get<std::string>();
          if (label.size() > 90) label = label.substr(0, 87) + "...";
          out << "  " << std::string(35, ' ') << "  [" << label << "]\n";
        }
        first = false;
      }
      for (const auto& t : p["targets"]) {
        out << "    target " << (t["met"].get<bool>() ? "met:    " : "MISSED: ") << t["text"].get<std::string>()
            << " (median " << format_quantity(t["median"].get<double>(), e["unit"].get<std::string>()) << ")\n";
      }
    }
  }
}

}  // namespace pairbench::harness
