// Experiment summaries from samples: medians, Hodges–Lehmann ratios with intervals, targets.
#include "harness/analysis/summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "harness/stats/stats.h"
#include "harness/store/json_field.h"

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

// How bad a process's status is for its arm: the worst of its processes wins.
int severity(Verification v) {
  switch (v) {
    case Verification::passed:
      return 0;
    case Verification::not_verified:
      return 1;
    case Verification::not_supported:
      return 2;
    case Verification::incorrect:
      return 3;
    case Verification::failed:
    case Verification::not_run:
      return 4;
  }
  return 4;
}

// The worst status wins: one failed repetition makes the arm failed. A process whose status was
// never set (not_run) counts as failed: it cannot be trusted to have passed.
Verification combine_verification(const std::vector<const Sample*>& samples) {
  if (samples.empty()) return Verification::not_run;
  Verification worst = Verification::passed;
  for (const Sample* s : samples) {
    const Verification v = s->verification == Verification::not_run ? Verification::failed : s->verification;
    if (severity(v) > severity(worst)) worst = v;
  }
  return worst;
}

using Params = std::vector<std::pair<std::string, std::string>>;

bool matches(const Params& params, const std::map<std::string, std::string>& want) {
  for (const auto& [k, v] : want) {
    const auto it = std::find_if(params.begin(), params.end(), [&](const auto& kv) { return kv.first == k; });
    if (it == params.end() || it->second != v) return false;
  }
  return true;
}

bool good(const Sample& s) { return s.has_value && has_usable_value(s.verification); }

// Secondary counters: each one's median over the processes that report it.
std::map<std::string, SecondarySummary> secondary_of(const ExperimentEntry& e, const std::vector<const Sample*>& ss) {
  std::map<std::string, SecondarySummary> out;
  for (const SecondaryMetric& m : e.secondary) {
    std::vector<double> vs;
    for (const Sample* s : ss) {
      if (s->has_value && s->gbench.contains(m.name) && s->gbench[m.name].is_number()) {
        vs.push_back(s->gbench[m.name].get<double>());
      }
    }
    if (!vs.empty()) out[m.name] = {stats::median(vs), m.unit, m.better, std::nullopt};
  }
  return out;
}

// Harness overhead: the share of each process's wall time not spent in the reported measurement
// (process start, environment verification, setup, Google Benchmark's calibration runs). Issue
// target for environment arms: <= 5 % in the nightly profile.
std::optional<double> harness_overhead_of(const std::vector<const Sample*>& ss) {
  std::vector<double> overheads;
  for (const Sample* s : ss) {
    if (!s->has_value || s->process_wall_s <= 0 || !s->gbench.contains("iterations")) continue;
    const std::string unit = s->gbench.value("time_unit", "ns");
    const double scale = unit == "s" ? 1 : unit == "ms" ? 1e-3 : unit == "us" ? 1e-6 : 1e-9;
    const double measured_s = s->gbench.value("iterations", 0.0) * s->gbench.value("real_time", 0.0) * scale;
    overheads.push_back(std::clamp(1 - measured_s / s->process_wall_s, 0.0, 1.0));
  }
  if (overheads.empty()) return std::nullopt;
  return stats::median(overheads);
}

// One arm at one grid point; `values` receives the processes' values that passed.
ArmSummary summarise_arm(const ExperimentEntry& e, const ArmEntry& arm, const BenchmarkEntry& b,
                         const std::vector<const Sample*>& ss, std::vector<double>& values) {
  ArmSummary a;
  a.arm = arm.name, a.role = arm.role, a.benchmark = b.name, a.unit = e.unit;
  for (const Sample* s : ss) {
    if (good(*s)) {
      values.push_back(process_value(*s));
    } else if (a.reason.empty()) {
      a.reason = s->reason;
    }
  }
  a.secondary = secondary_of(e, ss);
  a.harness_overhead = harness_overhead_of(ss);
  a.environment_arm = !arm.env.empty();
  // The label (e.g. which allocator or BLAS kernel was verified) most processes reported.
  std::map<std::string, int> labels;
  for (const Sample* s : ss) {
    if (s->has_value && s->gbench.contains("label") && s->gbench["label"].is_string()) {
      ++labels[s->gbench["label"].get<std::string>()];
    }
  }
  if (!labels.empty()) {
    a.label = std::max_element(labels.begin(), labels.end(), [](const auto& x, const auto& y) {
                return x.second < y.second;
              })->first;
    a.labels_differ = labels.size() > 1;
  }
  a.verification = combine_verification(ss);
  a.samples = values.size();
  if (!values.empty()) {
    a.statistics = ArmStatistics{stats::median(values), *std::min_element(values.begin(), values.end()),
                                 *std::max_element(values.begin(), values.end()),
                                 values.size() > 1 ? stats::robust_cv(values) : 0.0};
  }
  return a;
}

// Each treatment against the first arm (the baseline), oriented so that > 1 means better.
std::vector<RatioSummary> ratios_of(const ExperimentEntry& e, const std::map<std::string, std::vector<double>>& values,
                                    double confidence) {
  std::vector<RatioSummary> out;
  if (e.kind != "comparison" || e.arms.empty() || !values.count(e.arms.front().name)) return out;
  const auto& base = values.at(e.arms.front().name);
  const bool lower_better = e.better == "lower";
  for (std::size_t i = 1; i < e.arms.size(); ++i) {
    const auto it = values.find(e.arms[i].name);
    if (it == values.end()) continue;
    const auto r =
        lower_better ? stats::ratio_of(base, it->second, confidence) : stats::ratio_of(it->second, base, confidence);
    const double base_median = stats::median(base), median = stats::median(it->second);
    out.push_back({e.arms[i].name, r.ratio, r.ci_low, r.ci_high, r.confidence_achieved,
                   lower_better ? base_median / median : median / base_median});
  }
  return out;
}

// Secondary counters' ratio of medians to the first arm's, > 1 = better by that counter.
void secondary_ratios(PointSummary& p) {
  if (p.arms.empty() || p.arms[0].secondary.empty()) return;
  const auto& base = p.arms[0].secondary;
  for (std::size_t i = 1; i < p.arms.size(); ++i) {
    for (auto& [name, m] : p.arms[i].secondary) {
      const auto it = base.find(name);
      if (it == base.end()) continue;
      const double b = it->second.median, t = m.median;
      if (b > 0 && t > 0) m.ratio = m.better == "higher" ? t / b : b / t;
    }
  }
}

std::vector<TargetResult> targets_of(const ExperimentEntry& e, const Params& params,
                                     const std::map<std::string, double>& medians) {
  std::vector<TargetResult> out;
  for (const TargetEntry& t : e.targets) {
    const auto it = medians.find(t.arm);
    if (!matches(params, t.where) || it == medians.end()) continue;
    const bool met = e.better == "lower" ? it->second <= t.bound : it->second >= t.bound;
    out.push_back({t.arm, t.text, t.bound, it->second, met});
  }
  return out;
}

PointSummary summarise_point(const ExperimentEntry& e, const Params& params,
                             std::map<std::string, std::vector<const Sample*>>& by_benchmark, double confidence) {
  PointSummary p;
  p.params = params;
  std::map<std::string, std::vector<double>> values;  // arm -> good samples
  std::map<std::string, double> medians;
  for (const ArmEntry& arm : e.arms) {
    const BenchmarkEntry* b = nullptr;
    for (const auto& cand : e.benchmarks) {
      if (cand.arm == arm.name && cand.params == params) b = &cand;
    }
    if (!b) continue;  // the arm does not apply at this point
    std::vector<double> good_values;
    p.arms.push_back(summarise_arm(e, arm, *b, by_benchmark[b->name], good_values));
    if (!good_values.empty()) {
      medians[arm.name] = p.arms.back().statistics->median;
      values[arm.name] = std::move(good_values);
    }
  }
  p.ratios = ratios_of(e, values, confidence);
  secondary_ratios(p);
  p.targets = targets_of(e, params, medians);
  return p;
}

// A measured benchmark that may be the limit: its median in the limit's unit.
struct LimitCandidate {
  std::string benchmark;
  double median = 0;
};

// The value of `arm` placed against a limit: its deciding metric's median, or the named
// secondary counter's, with that value's direction.
std::optional<std::pair<double, std::string>> placed_value(const ArmSummary& arm, const std::string& counter,
                                                           const std::string& metric_better) {
  if (counter.empty()) {
    if (!arm.statistics) return std::nullopt;
    return std::pair{arm.statistics->median, metric_better};
  }
  const auto it = arm.secondary.find(counter);
  if (it == arm.secondary.end()) return std::nullopt;
  return std::pair{it->second.median, it->second.better};
}

// Every benchmark of the limit's sources that has a median in this run.
std::vector<LimitCandidate> external_candidates(const LimitEntry& l, const std::vector<ExperimentSummary>& summary) {
  std::vector<LimitSourceEntry> sources = {{l.experiment, l.arm, l.where}};
  sources.insert(sources.end(), l.also.begin(), l.also.end());
  std::vector<LimitCandidate> out;
  for (const LimitSourceEntry& source : sources) {
    for (const ExperimentSummary& other : summary) {
      if (other.name != source.experiment) continue;
      for (const PointSummary& p : other.points) {
        if (!matches(p.params, source.where)) continue;
        for (const ArmSummary& a : p.arms) {
          if ((source.arm.empty() || a.arm == source.arm) && a.statistics)
            out.push_back({a.benchmark, a.statistics->median});
        }
      }
    }
  }
  return out;
}

// Second pass: each arm with a LimitRef gets the best candidate's median as its limit, and its own
// percentage of it. A figure more than kLimitDefectMargin above its limit is a measurement defect
// (the limit was not the best this machine can do): flagged, never shown as a plain percentage.
// The margin is on the medians: 5 %, above a bandwidth median's run-to-run noise and far below
// what a wrong limit is exceeded by (docs/experiments.md).
void attach_limits(const std::vector<ExperimentEntry>& experiments, std::vector<ExperimentSummary>& summary) {
  for (std::size_t i = 0; i < experiments.size(); ++i) {
    for (const LimitEntry& l : experiments[i].limits) {
      const std::vector<LimitCandidate> external = external_candidates(l, summary);
      if (external.empty()) continue;  // the limit was not run (not selected, or failed)
      for (PointSummary& p : summary[i].points) {
        if (!matches(p.params, l.when)) continue;
        std::vector<LimitCandidate> candidates = external;
        if (l.own_arms) {
          for (const ArmSummary& a : p.arms) {
            if (const auto v = placed_value(a, l.counter, summary[i].better))
              candidates.push_back({a.benchmark, v->first});
          }
        }
        for (ArmSummary& a : p.arms) {
          const bool wanted = l.arms.empty() || std::find(l.arms.begin(), l.arms.end(), a.arm) != l.arms.end();
          if (!wanted || a.limit) continue;
          const auto ours = placed_value(a, l.counter, summary[i].better);
          if (!ours) continue;
          const bool lower_better = ours->second == "lower";
          const LimitCandidate& best = *std::max_element(
              candidates.begin(), candidates.end(), [&](const LimitCandidate& x, const LimitCandidate& y) {
                return lower_better ? x.median > y.median : x.median < y.median;
              });
          a.limit = LimitPlacement{best.benchmark, best.median, candidates.size(), l.counter};
          // Percent of the limit: for lower-is-better metrics the limit is a floor, so invert.
          const double m = ours->first;
          const double percent = 100.0 * (lower_better ? best.median / m : m / best.median);
          a.percent_of_limit = percent;
          if (percent > 100.0 * (1 + kLimitDefectMargin)) {
            char text[320];
            std::snprintf(text, sizeof text, "measured %.0f %% of %s: a limit must be the best this machine can do",
                          percent, best.benchmark.c_str());
            a.limit_defect = text;
          }
        }
      }
    }
  }
}

nlohmann::json to_json(const ArmSummary& a) {
  nlohmann::json j = {{"arm", a.arm},
                      {"role", a.role},
                      {"benchmark", a.benchmark},
                      {"unit", a.unit},
                      {"verification", to_string(a.verification)},
                      {"samples", a.samples}};
  if (!a.secondary.empty()) {
    j["secondary"] = nlohmann::json::object();
    for (const auto& [name, m] : a.secondary) {
      j["secondary"][name] = {{"median", m.median}, {"unit", m.unit}, {"better", m.better}};
      if (m.ratio) j["secondary"][name]["ratio"] = *m.ratio;
    }
  }
  if (a.harness_overhead) j["harness_overhead"] = *a.harness_overhead;
  if (a.environment_arm) j["environment_arm"] = true;
  if (!a.label.empty()) j["label"] = a.label;
  if (a.labels_differ) j["labels_differ"] = true;
  if (!a.reason.empty()) j["reason"] = a.reason;
  if (a.statistics) {
    j["median"] = a.statistics->median;
    j["min"] = a.statistics->min;
    j["max"] = a.statistics->max;
    j["cv"] = a.statistics->cv;
  }
  if (a.limit) {
    j["limit"] = {{"benchmark", a.limit->benchmark}, {"median", a.limit->median}, {"best_of", a.limit->best_of}};
    if (!a.limit->counter.empty()) j["limit"]["counter"] = a.limit->counter;
  }
  if (a.percent_of_limit) j["percent_of_limit"] = *a.percent_of_limit;
  if (!a.limit_defect.empty()) j["limit_defect"] = a.limit_defect;
  return j;
}

nlohmann::json to_json(const PointSummary& p) {
  nlohmann::json j = {{"params", nlohmann::json::object()},
                      {"arms", nlohmann::json::array()},
                      {"ratios", nlohmann::json::array()},
                      {"targets", nlohmann::json::array()}};
  for (const auto& [k, v] : p.params) j["params"][k] = v;
  for (const ArmSummary& a : p.arms) j["arms"].push_back(to_json(a));
  for (const RatioSummary& r : p.ratios) {
    j["ratios"].push_back({{"treatment", r.treatment},
                           {"ratio", r.ratio},
                           {"ci_low", r.ci_low},
                           {"ci_high", r.ci_high},
                           {"confidence", r.confidence},
                           {"ratio_of_medians", r.ratio_of_medians},
                           {"estimator", "hodges_lehmann_log"}});
  }
  for (const TargetResult& t : p.targets) {
    j["targets"].push_back(
        {{"arm", t.arm}, {"text", t.text}, {"bound", t.bound}, {"median", t.median}, {"met", t.met}});
  }
  return j;
}

}  // namespace

nlohmann::json to_json(const ExperimentSummary& e) {
  nlohmann::json j = {{"name", e.name},
                      {"question", e.question},
                      {"claim", e.claim},
                      {"kind", e.kind},
                      {"metric", e.metric},
                      {"unit", e.unit},
                      {"better", e.better},
                      {"timing", e.timing},
                      {"time_relation", e.time_relation},
                      {"points", nlohmann::json::array()}};
  if (e.gate_threshold > 0) j["gate_threshold"] = e.gate_threshold;
  if (e.instructions_gate_threshold > 0) j["instructions_gate_threshold"] = e.instructions_gate_threshold;
  // The checks that decided its claim travel with the run: its verdicts can be judged again.
  if (!e.verdict.empty()) {
    j["verdict"] = nlohmann::json::array();
    for (const VerdictCheckEntry& c : e.verdict) j["verdict"].push_back(verdict_check_to_json(c));
  }
  if (e.figure) j["figure"] = figure_to_json(*e.figure);  // how the report draws it
  for (const PointSummary& p : e.points) j["points"].push_back(to_json(p));
  return j;
}

std::vector<ExperimentSummary> summarise_experiments(const std::vector<ExperimentEntry>& experiments,
                                                     const std::vector<Sample>& samples, double confidence) {
  std::map<std::string, std::vector<const Sample*>> by_benchmark;
  for (const Sample& s : samples) {
    if (s.instrument == Instrument::time)
      by_benchmark[s.benchmark].push_back(&s);  // instruction counts are gated, not summarised
  }
  std::vector<ExperimentSummary> out;
  for (const ExperimentEntry& e : experiments) {
    ExperimentSummary x{e.name,
                        e.question,
                        e.claim,
                        e.kind,
                        e.metric,
                        e.unit,
                        e.better,
                        e.timing,
                        e.time_relation,
                        e.gate_threshold,
                        e.instructions_gate_threshold,
                        e.verdict,
                        {}};
    // Grid points in grid order: the distinct params of its benchmarks.
    std::vector<Params> points;
    for (const auto& b : e.benchmarks) {
      if (std::find(points.begin(), points.end(), b.params) == points.end()) points.push_back(b.params);
    }
    for (const Params& params : points) x.points.push_back(summarise_point(e, params, by_benchmark, confidence));
    x.figure = e.figure;
    out.push_back(std::move(x));
  }
  attach_limits(experiments, out);
  return out;
}

nlohmann::json summarise(const std::vector<ExperimentEntry>& experiments, const std::vector<Sample>& samples,
                         double confidence) {
  return experiments_to_json(summarise_experiments(experiments, samples, confidence));
}

nlohmann::json experiments_to_json(const std::vector<ExperimentSummary>& summary) {
  nlohmann::json out = nlohmann::json::array();
  for (const ExperimentSummary& e : summary) out.push_back(to_json(e));
  return out;
}

namespace {

// Read-back helpers for summary_from_json: absent or null takes the fallback (the run-file
// reader's defaults); present, a field must have its type.
std::string text_or(const JsonField& j, const std::string& key, const std::string& fallback = "") {
  const auto f = j.find(key);
  if (!f || f->json().is_null()) return fallback;
  return f->string();
}

// A figure: absent or null is NaN (to_json writes a non-finite figure as null).
double figure_or_nan(const JsonField& j, const std::string& key) {
  const auto f = j.find(key);
  if (!f || f->json().is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (!f->json().is_number()) f->fail("a number");
  return f->json().get<double>();
}

// An optional figure: absent is none, null is NaN.
std::optional<double> optional_figure(const JsonField& j, const std::string& key) {
  if (!j.find(key)) return std::nullopt;
  return figure_or_nan(j, key);
}

bool flag_or(const JsonField& j, const std::string& key, bool fallback) {
  const auto f = j.find(key);
  return f && !f->json().is_null() ? f->boolean() : fallback;
}

std::size_t count_or_zero(const JsonField& j, const std::string& key) {
  const auto f = j.find(key);
  if (!f || f->json().is_null()) return 0;
  const std::int64_t n = f->integer();
  if (n < 0) f->fail("a count (0 or more)");
  return static_cast<std::size_t>(n);
}

// The elements of an array member; absent or null: none.
std::vector<JsonField> elements_or_none(const JsonField& j, const std::string& key) {
  const auto f = j.find(key);
  if (!f || f->json().is_null()) return {};
  return f->elements();
}

Verification verification_of(const JsonField& arm) {
  const auto f = arm.find("verification");
  if (!f || f->json().is_null()) return Verification::not_run;
  const auto v = verification_from_string(f->string());
  if (!v) f->fail("one of passed, incorrect, not_verified, not_supported, failed, not_run");
  return *v;
}

ArmSummary arm_from_json(const JsonField& j) {
  ArmSummary a;
  a.arm = text_or(j, "arm"), a.role = text_or(j, "role", "treatment"), a.benchmark = text_or(j, "benchmark");
  a.unit = text_or(j, "unit");
  a.verification = verification_of(j);
  a.reason = text_or(j, "reason");
  a.samples = count_or_zero(j, "samples");
  if (j.find("median")) {
    a.statistics = ArmStatistics{figure_or_nan(j, "median"), figure_or_nan(j, "min"), figure_or_nan(j, "max"),
                                 figure_or_nan(j, "cv")};
  }
  if (const auto secondary = j.find("secondary")) {
    for (const auto& [name, m] : secondary->members()) {
      a.secondary[name] = {figure_or_nan(m, "median"), text_or(m, "unit"), text_or(m, "better"),
                           optional_figure(m, "ratio")};
    }
  }
  a.harness_overhead = optional_figure(j, "harness_overhead");
  a.environment_arm = flag_or(j, "environment_arm", false);
  a.label = text_or(j, "label");
  a.labels_differ = flag_or(j, "labels_differ", false);
  if (const auto limit = j.find("limit")) {
    a.limit = LimitPlacement{text_or(*limit, "benchmark"), figure_or_nan(*limit, "median"),
                             count_or_zero(*limit, "best_of"), text_or(*limit, "counter")};
  }
  a.percent_of_limit = optional_figure(j, "percent_of_limit");
  a.limit_defect = text_or(j, "limit_defect");
  return a;
}

PointSummary point_from_json(const JsonField& j) {
  PointSummary p;
  if (const auto params = j.find("params"); params && !params->json().is_null()) {
    for (const auto& [axis, value] : params->members()) {
      // Grid values are strings; files of some ages wrote numbers.
      if (!value.json().is_string() && !value.json().is_number()) value.fail("a grid value (a string or a number)");
      p.params.emplace_back(axis, value.json().is_string() ? value.string() : value.json().dump());
    }
  }
  for (const JsonField& a : elements_or_none(j, "arms")) p.arms.push_back(arm_from_json(a));
  for (const JsonField& r : elements_or_none(j, "ratios")) {
    p.ratios.push_back({text_or(r, "treatment"), figure_or_nan(r, "ratio"), figure_or_nan(r, "ci_low"),
                        figure_or_nan(r, "ci_high"), figure_or_nan(r, "confidence"),
                        figure_or_nan(r, "ratio_of_medians")});
  }
  for (const JsonField& t : elements_or_none(j, "targets")) {
    p.targets.push_back({text_or(t, "arm"), text_or(t, "text"), figure_or_nan(t, "bound"), figure_or_nan(t, "median"),
                         flag_or(t, "met", false)});
  }
  return p;
}

// The figure as declared; not checked against the experiment (the catalogue did that when the run was made).
FigureEntry figure_from_json(const JsonField& j) {
  FigureEntry f;
  f.kind = text_or(j, "kind", f.kind), f.x_axis = text_or(j, "x_axis");
  f.x_scale = text_or(j, "x_scale", f.x_scale), f.y_scale = text_or(j, "y_scale", f.y_scale);
  f.counter = text_or(j, "counter"), f.arm_axis = text_or(j, "arm_axis");
  if (const auto values = j.find("arm_values")) {
    for (const auto& [arm, value] : values->members()) f.arm_values.emplace_back(arm, value.number());
  }
  return f;
}

ExperimentSummary experiment_from_json(const JsonField& j) {
  ExperimentSummary e;
  e.name = text_or(j, "name"), e.question = text_or(j, "question"), e.claim = text_or(j, "claim");
  e.kind = text_or(j, "kind", "comparison"), e.metric = text_or(j, "metric"), e.unit = text_or(j, "unit");
  e.better = text_or(j, "better"), e.timing = text_or(j, "timing"),
  e.time_relation = text_or(j, "time_relation", "none");
  e.gate_threshold = j.number_or("gate_threshold", 0);
  e.instructions_gate_threshold = j.number_or("instructions_gate_threshold", 0);
  for (const JsonField& c : elements_or_none(j, "verdict")) e.verdict.push_back(parse_verdict_check(c));
  for (const JsonField& p : elements_or_none(j, "points")) e.points.push_back(point_from_json(p));
  if (const auto figure = j.find("figure"); figure && !figure->json().is_null()) e.figure = figure_from_json(*figure);
  return e;
}

}  // namespace

std::vector<ExperimentSummary> summary_from_json(const nlohmann::json& experiments, const std::string& source) {
  std::vector<ExperimentSummary> out;
  if (experiments.is_null()) return out;  // a run file without experiments: nothing was summarised
  for (const JsonField& e : JsonField(experiments, source, "pairbench.experiments").elements()) {
    out.push_back(experiment_from_json(e));
  }
  return out;
}

namespace {

// One arm's line of the table, and the lines under it (secondary counters, overhead, label).
void print_arm(std::ostream& out, const ExperimentSummary& e, const PointSummary& p, const ArmSummary& a,
               const std::string& point) {
  std::string median = "-", cv = "-", ratio;
  if (a.statistics) {
    median = format_quantity(a.statistics->median, e.unit);
    char c[32];
    std::snprintf(c, sizeof c, "%.1f%%", 100 * a.statistics->cv);
    cv = c;
  }
  for (const RatioSummary& r : p.ratios) {
    if (r.treatment != a.arm) continue;
    char c[128];
    std::snprintf(c, sizeof c, "%.3gx [%.3g, %.3g]", r.ratio, r.ci_low, r.ci_high);
    ratio = c;
    // With few samples the 95% level cannot be reached; say what the interval covers.
    if (r.confidence < 0.949) {
      std::snprintf(c, sizeof c, " (%.0f%% CI)", 100 * r.confidence);
      ratio += c;
    }
  }
  if (a.percent_of_limit) {
    char c[48];
    // Above its limit beyond the margin: a measurement defect, never a plain percentage.
    std::snprintf(c, sizeof c, "%s%.0f%% of limit", a.limit_defect.empty() ? "" : "DEFECT ", *a.percent_of_limit);
    std::string pct = c;
    if (a.limit && !a.limit->counter.empty()) pct = a.limit->counter + " " + pct;
    ratio = ratio.empty() ? pct : ratio + "; " + pct;
  }
  if (!a.reason.empty() && a.verification != Verification::passed) ratio = a.reason;
  char line[512];
  std::snprintf(line, sizeof line, "  %-34s %-22s %12s %7s %3d  %-13s %s\n", point.c_str(), a.arm.c_str(),
                median.c_str(), cv.c_str(), static_cast<int>(a.samples), to_string(a.verification).c_str(),
                ratio.c_str());
  out << line;
  if (!a.secondary.empty()) {
    std::string extra;
    for (const auto& [name, m] : a.secondary) {
      extra += (extra.empty() ? "" : ", ") + name + " " + format_quantity(m.median, m.unit);
      if (m.ratio) {
        char c[32];
        std::snprintf(c, sizeof c, " (%.3gx)", *m.ratio);
        extra += c;
      }
    }
    out << "  " << std::string(35, ' ') << "  " << extra << "\n";
  }
  if (a.environment_arm && a.harness_overhead) {
    char c[96];
    std::snprintf(c, sizeof c, "harness overhead %.0f%% of the process's wall time", 100 * *a.harness_overhead);
    out << "  " << std::string(35, ' ') << "  " << c << "\n";
  }
  if (!a.label.empty()) {
    // The label's first fields say what was verified in effect; the run file has all of it.
    std::string label = a.label;
    if (label.size() > 90) label = label.substr(0, 87) + "...";
    out << "  " << std::string(35, ' ') << "  [" << label << "]\n";
  }
}

}  // namespace

void print_summary(std::ostream& out, const std::vector<ExperimentSummary>& summary) {
  char line[512];
  for (const ExperimentSummary& e : summary) {
    out << "\n" << e.name << (e.claim.empty() ? "" : " (" + e.claim + ")") << ": " << e.question << "\n";
    std::snprintf(line, sizeof line, "  %-34s %-22s %12s %7s %3s  %-13s %s\n", "point", "arm",
                  ("median " + e.metric).c_str(), "cv", "n", "verification",
                  e.kind == "limit" ? "" : "vs baseline (>1: treatment better) [95% CI]");
    out << line;
    for (const PointSummary& p : e.points) {
      // Axes by name, as the run file's params object orders them (the table has always read it so).
      const std::map<std::string, std::string> params(p.params.begin(), p.params.end());
      std::string point;
      for (const auto& [k, v] : params) point += (point.empty() ? "" : " ") + k + ":" + v;
      if (point.empty()) point = "-";
      for (std::size_t i = 0; i < p.arms.size(); ++i) print_arm(out, e, p, p.arms[i], i == 0 ? point : "");
      for (const TargetResult& t : p.targets) {
        out << "    target " << (t.met ? "met:    " : "MISSED: ") << t.text << " (median "
            << format_quantity(t.median, e.unit) << ")\n";
      }
    }
  }
}

}  // namespace pairbench::harness
