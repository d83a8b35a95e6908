// Claim verdicts from a run's experiment summary: the rules of docs/claims.md, applied to the
// checks each experiment declares (bench/*/*.cpp, `verdict`), combined per claim of claims.json.
#include "harness/analysis/claims.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

#include "harness/exec/catalogue.h"
#include "harness/store/json_field.h"
#include "pairbench/claims_catalogue.h"

namespace pairbench::harness {

std::vector<ClaimSpec> parse_claims(const nlohmann::json& doc, const std::string& source) {
  const JsonField root(doc, source);
  std::vector<ClaimSpec> out;
  std::set<std::string> ids;
  for (const JsonField& c : root["claims"].elements()) {
    ClaimSpec spec;
    spec.id = c["id"].string();
    if (spec.id.empty() || !ids.insert(spec.id).second) c["id"].fail("a claim id no other claim has");
    spec.text = c["claim"].string();
    if (const auto experiments = c.find("experiments")) {
      for (const JsonField& x : experiments->elements()) {
        spec.experiments.push_back({x["name"].string(), x.boolean_or("planned", false)});
      }
    }
    const JsonField verdict = c["verdict"];
    spec.kind = verdict.string_or("kind", "ratio");
    if (spec.kind != "ratio" && spec.kind != "environment" && spec.kind != "limits") {
      verdict["kind"].fail("ratio, environment or limits");
    }
    if (verdict.find("checks")) {
      verdict["checks"].fail("no checks here: each experiment declares its own (`verdict` in bench/<area>/<experiment>.cpp)");
    }
    if (spec.kind == "environment") {
      spec.field = verdict["field"].string();
      spec.absent_reason_field = verdict.string_or("absent_reason_field", "");
    }
    out.push_back(std::move(spec));
  }
  return out;
}

const nlohmann::json& builtin_claims_document() {
  static const nlohmann::json doc = nlohmann::json::parse(kClaimsCatalogueText);
  return doc;
}

const std::vector<ClaimSpec>& builtin_claims() {
  static const std::vector<ClaimSpec> claims = parse_claims(builtin_claims_document(), "harness/analysis/claims.json");
  return claims;
}

namespace {

// Reasons an arm could not run that mean "this machine has no GPU" (bench/common/devices.h).
bool gpu_only(const std::string& reason) {
  return reason.find("no CUDA device") != std::string::npos || reason.find("not compiled with CUDA") != std::string::npos;
}

// The run-file reader's defaults (plots/pairbench_report/runfile.py): text fields may be absent
// or numbers (grid values), numbers may be absent or null.
std::string text(const nlohmann::json& j, const std::string& key, const std::string& fallback = "") {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return it->is_string() ? it->get<std::string>() : it->dump();
}

std::optional<double> number(const nlohmann::json& j, const std::string& key) {
  const auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

const nlohmann::json& member_or_empty(const nlohmann::json& j, const std::string& key, const nlohmann::json& empty) {
  const auto it = j.find(key);
  return it == j.end() ? empty : *it;
}

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

std::vector<std::string> sorted_unique(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

struct Arm {
  std::string name, role, benchmark, verification, reason;
  std::optional<double> median, percent_of_limit;
  bool has_limit = false;
  std::string limit_benchmark, limit_counter, limit_defect;
};

struct Ratio {
  std::string treatment;
  std::optional<double> ratio, ci_low, ci_high, confidence;
};

struct Point {
  std::vector<std::pair<std::string, std::string>> params;  // in the file's order
  std::vector<Arm> arms;
  std::vector<Ratio> ratios;
  std::string label;  // "axis:value axis:value" in the benchmark names' axis order

  const Arm* arm(const std::string& name) const {
    for (const Arm& a : arms) {
      if (a.name == name) return &a;
    }
    return nullptr;
  }
  const Ratio* ratio(const std::string& treatment) const {
    for (const Ratio& r : ratios) {
      if (r.treatment == treatment) return &r;
    }
    return nullptr;
  }
  const std::string* param(const std::string& axis) const {
    for (const auto& [k, v] : params) {
      if (k == axis) return &v;
    }
    return nullptr;
  }
};

struct Experiment {
  std::string name, claim, kind;
  std::vector<Point> points;
  std::vector<VerdictCheckEntry> checks;
};

// A limit more than 5 % below the median is a measurement defect (summary.h kLimitDefectMargin);
// run files written before `limit_defect` existed are judged the same way.
constexpr double kDefectPercent = 105.0;

Experiment read_experiment(const nlohmann::json& e) {
  static const nlohmann::json kEmpty = nlohmann::json::array();
  Experiment x{text(e, "name"), text(e, "claim"), text(e, "kind", "comparison"), {}, {}};
  std::vector<std::string> axes;
  for (const auto& p : member_or_empty(e, "points", kEmpty)) {
    Point point;
    for (const auto& [k, v] : member_or_empty(p, "params", nlohmann::json::object()).items()) {
      point.params.emplace_back(k, v.is_string() ? v.get<std::string>() : v.dump());
    }
    for (const auto& a : member_or_empty(p, "arms", kEmpty)) {
      Arm arm{text(a, "arm"), text(a, "role", "treatment"), text(a, "benchmark"), text(a, "verification", "not_run"),
              text(a, "reason"), number(a, "median"), number(a, "percent_of_limit")};
      if (const auto lim = a.find("limit"); lim != a.end() && lim->is_object() && number(*lim, "median")) {
        arm.has_limit = true;
        arm.limit_benchmark = text(*lim, "benchmark");
        arm.limit_counter = text(*lim, "counter");
      }
      arm.limit_defect = text(a, "limit_defect");
      if (arm.limit_defect.empty() && arm.percent_of_limit && *arm.percent_of_limit > kDefectPercent) {
        arm.limit_defect = "above its limit";
      }
      // Axis order as the benchmark names give it (`exp/arm/a:1/b:2`), then any other parameter.
      std::size_t from = 0;
      for (int slash = 0; slash < 2 && from != std::string::npos; ++slash) {
        from = arm.benchmark.find('/', from);
        if (from != std::string::npos) ++from;
      }
      while (from != std::string::npos && from < arm.benchmark.size()) {
        const std::size_t end = arm.benchmark.find('/', from);
        const std::string part = arm.benchmark.substr(from, end == std::string::npos ? std::string::npos : end - from);
        if (const std::size_t colon = part.find(':'); colon != std::string::npos) {
          const std::string axis = part.substr(0, colon);
          if (std::find(axes.begin(), axes.end(), axis) == axes.end()) axes.push_back(axis);
        }
        from = end == std::string::npos ? end : end + 1;
      }
      point.arms.push_back(std::move(arm));
    }
    for (const auto& [k, v] : point.params) {
      if (std::find(axes.begin(), axes.end(), k) == axes.end()) axes.push_back(k);
    }
    for (const auto& r : member_or_empty(p, "ratios", kEmpty)) {
      Ratio ratio{text(r, "treatment"), number(r, "ratio"), number(r, "ci_low"), number(r, "ci_high"),
                  number(r, "confidence")};
      if (ratio.ratio && *ratio.ratio > 0) point.ratios.push_back(ratio);  // a ratio of nothing decides nothing
    }
    x.points.push_back(std::move(point));
  }
  // Labels once every point's axes are known (the reader derives them over the whole experiment).
  for (Point& point : x.points) {
    std::vector<std::string> parts;
    for (const std::string& axis : axes) {
      if (const std::string* v = point.param(axis)) parts.push_back(axis + ":" + *v);
    }
    point.label = parts.empty() ? "(single point)" : join(parts, " ");
  }
  if (const auto verdict = e.find("verdict"); verdict != e.end()) {
    const JsonField checks(*verdict, "pairbench.experiments", x.name + ".verdict");
    for (const JsonField& c : checks.elements()) x.checks.push_back(parse_verdict_check(c));
  }
  return x;
}

bool matches(const Point& p, const std::map<std::string, std::vector<std::string>>& spec, bool fallback) {
  if (spec.empty()) return fallback;
  for (const auto& [axis, values] : spec) {
    const std::string* v = p.param(axis);
    if (!v || std::find(values.begin(), values.end(), *v) == values.end()) return false;
  }
  return true;
}

bool selected(const Point& p, const VerdictCheckEntry& check) {
  if (!matches(p, check.where, true)) return false;
  return check.exclude.empty() || !matches(p, check.exclude, false);
}

std::string arm_reason(const Arm* arm) {
  if (!arm) return "not run";
  if (!arm->reason.empty()) {
    const std::string& v = arm->verification;
    return v == "not_supported" || v == "not_run" || v.empty() ? arm->reason : v + ": " + arm->reason;
  }
  if (arm->verification != "passed") return arm->verification;
  return "no ratio";
}

const Arm* baseline_of(const Point& p) {
  for (const Arm& a : p.arms) {
    if (a.role == "baseline") return &a;
  }
  return nullptr;
}

std::pair<std::string, std::string> judge_point(const Ratio& r, const VerdictCheckEntry& check) {
  if (!r.ci_low || !r.ci_high) return {kInconclusive, "no interval"};
  const double low = *r.ci_low, high = *r.ci_high;
  if (check.test == "same") {
    const double tol = check.tolerance;
    const std::string band = "[" + fmt("%.3g", 1 / tol) + ", " + fmt("%.3g", tol) + "]";
    if (1 / tol <= low && high <= tol) return {kHeld, "interval inside " + band};
    if (low > tol || high < 1 / tol) return {kNotHeld, "interval outside " + band};
    return {kInconclusive, "interval overlaps the edge of " + band};
  }
  const double threshold = check.threshold, eq = check.equivalence;
  if (low > threshold) return {kHeld, "interval above " + fmt("%g", threshold)};
  if (high < threshold) return {kNotHeld, "interval below " + fmt("%g", threshold) + ": the treatment is worse"};
  if (1 / eq <= low && high <= eq) {
    return {kNotHeld, "interval inside [" + fmt("%.3g", 1 / eq) + ", " + fmt("%.3g", eq) + "]: no meaningful difference"};
  }
  return {kInconclusive, "interval spans " + fmt("%g", threshold)};
}

// The ordered treatments' ratios at one point: does the last stop beating an earlier one k?
// last/k is bounded by [low_last / high_k, high_last / low_k] (both intervals at once).
std::pair<std::string, std::string> judge_plateau(const std::vector<const Ratio*>& rows, double eq) {
  for (const Ratio* r : rows) {
    if (!r->ci_low || !r->ci_high || *r->ci_low <= 0) return {kInconclusive, "no interval"};
  }
  const Ratio& last = *rows.back();
  for (std::size_t k = 0; k + 1 < rows.size(); ++k) {
    if (*last.ci_high / *rows[k]->ci_low <= eq) {
      return {kHeld, last.treatment + " is at most " + fmt("%g", eq) + "x " + rows[k]->treatment +
                         ": more stopped helping by " + rows[k]->treatment};
    }
  }
  bool beats_all = true;
  for (std::size_t k = 0; k + 1 < rows.size(); ++k) beats_all = beats_all && *last.ci_low / *rows[k]->ci_high > 1.0;
  if (beats_all) return {kNotHeld, last.treatment + " beats every earlier treatment: still helping"};
  return {kInconclusive, "the intervals are too wide to tell whether more stopped helping"};
}

ClaimRow measured_row(const Experiment& e, const Point& p, const Ratio& r, const VerdictCheckEntry& check,
                      std::pair<std::string, std::string> verdict) {
  const Arm* baseline = baseline_of(p);
  return {e.name, p.label, r.treatment, baseline ? baseline->name : "", r.ratio, r.ci_low, r.ci_high, r.confidence,
          std::move(verdict.first), std::move(verdict.second), check.test, check.analogue};
}

void plateau_rows(const Experiment& e, const VerdictCheckEntry& check, std::vector<ClaimRow>& measured,
                  std::vector<NotRunRow>& missing) {
  for (const Point& p : e.points) {
    if (!selected(p, check)) continue;
    std::vector<const Ratio*> rows;
    for (const std::string& t : check.treatments) {
      const Ratio* r = p.ratio(t);
      if (!r) {
        missing.push_back({e.name, p.label, t, arm_reason(p.arm(t))});
        break;
      }
      rows.push_back(r);
    }
    if (rows.size() != check.treatments.size()) continue;
    measured.push_back(measured_row(e, p, *rows.back(), check, judge_plateau(rows, check.equivalence)));
  }
}

void check_rows(const Experiment& e, const VerdictCheckEntry& check, std::vector<ClaimRow>& measured,
                std::vector<NotRunRow>& missing) {
  for (const Point& p : e.points) {
    if (!selected(p, check)) continue;
    const Arm* baseline = baseline_of(p);
    for (const Arm& arm : p.arms) {
      if (arm.role != "treatment") continue;
      if (!check.treatments.empty() &&
          std::find(check.treatments.begin(), check.treatments.end(), arm.name) == check.treatments.end()) {
        continue;
      }
      const Ratio* r = p.ratio(arm.name);
      if (!r) {
        std::string reason = arm_reason(&arm);
        // The treatment ran: the baseline is what is missing.
        if (arm.verification == "passed" && baseline) reason = "baseline " + baseline->name + ": " + arm_reason(baseline);
        missing.push_back({e.name, p.label, arm.name, reason});
        continue;
      }
      measured.push_back(measured_row(e, p, *r, check, judge_point(*r, check)));
    }
  }
}

void rows_of(const Experiment& e, std::vector<ClaimRow>& measured, std::vector<NotRunRow>& missing) {
  static const std::vector<VerdictCheckEntry> kDefault = {VerdictCheckEntry{}};
  for (const VerdictCheckEntry& check : e.checks.empty() ? kDefault : e.checks) {
    if (check.test == "plateau") {
      plateau_rows(e, check, measured, missing);
    } else {
      check_rows(e, check, measured, missing);
    }
  }
}

void judge_ratio_claim(const ClaimSpec& claim, const std::vector<Experiment>& run, ClaimVerdict& out) {
  std::map<std::string, const Experiment*> by_name;
  for (const Experiment& e : run) by_name.emplace(e.name, &e);
  std::vector<NotRunRow> missing;
  std::set<std::string> listed;
  for (const ClaimExperiment& x : claim.experiments) {
    listed.insert(x.name);
    const auto it = by_name.find(x.name);
    if (it == by_name.end()) {
      out.absent.push_back(x.name + ": " + (x.planned ? "planned, not implemented yet" : "not in this run"));
    } else if (it->second->kind == "limit") {
      out.excluded.push_back(x.name + ": a machine limit, not a comparison: not counted");
    } else if (it->second->claim != claim.id) {
      // copy.stores (store types) once decided C6 (pinned vs pageable): an experiment decides
      // only the claim it declares.
      out.excluded.push_back(x.name + ": tests " + (it->second->claim.empty() ? "no claim" : it->second->claim) +
                             ", not " + claim.id + ": not counted");
    } else {
      rows_of(*it->second, out.rows, missing);
    }
  }
  for (const Experiment& e : run) {
    if (e.claim == claim.id && e.kind != "limit" && !listed.count(e.name)) {
      out.excluded.push_back(e.name + ": declares " + claim.id +
                             " but claims.json does not list it as testing it: not counted");
    }
  }
  out.not_run = missing;
  if (out.rows.empty()) {
    std::vector<std::string> reasons, short_reasons, needs;
    for (const NotRunRow& m : missing) {
      reasons.push_back(m.experiment + " " + m.point + ": " + m.reason);
      short_reasons.push_back(m.reason);
      needs.push_back(m.experiment);
    }
    reasons = sorted_unique(reasons), short_reasons = sorted_unique(short_reasons), needs = sorted_unique(needs);
    out.details = reasons;
    const bool all_gpu = !short_reasons.empty() && std::all_of(short_reasons.begin(), short_reasons.end(), gpu_only);
    if (all_gpu) {
      out.verdict = kNotTestableHere;
      out.detail = join(short_reasons, "; ") + " (" + join(needs, ", ") + (needs.size() == 1 ? " needs" : " need") +
                   " one)";
    } else {
      out.verdict = kNotRunHere;
      out.detail = !short_reasons.empty() ? join(short_reasons, "; ")
                   : !out.absent.empty()  ? "no experiment ran: " + join(out.absent, "; ")
                                          : "no experiment tests this claim yet";
    }
    return;
  }
  std::size_t held = 0;
  std::vector<const ClaimRow*> failed;
  for (const ClaimRow& r : out.rows) {
    if (r.verdict == kHeld) ++held;
    if (r.verdict == kNotHeld) failed.push_back(&r);
  }
  const std::string n = std::to_string(out.rows.size());
  if (!failed.empty()) {
    out.verdict = kNotHeld;
    std::vector<std::string> where;
    for (std::size_t i = 0; i < failed.size() && i < 4; ++i) where.push_back(failed[i]->point + " (" + failed[i]->treatment + ")");
    out.detail = "held at " + std::to_string(held) + " of " + n + " points; not at " + join(where, "; ");
    if (failed.size() > 4) out.detail += " and " + std::to_string(failed.size() - 4) + " more";
  } else if (held == out.rows.size()) {
    out.verdict = kHeld;
    out.detail = "held at all " + n + " points measured";
  } else {
    out.verdict = kInconclusive;
    out.detail = held ? "held at " + std::to_string(held) + " of " + n + " points; the other intervals are too wide to decide"
                      : "the intervals are too wide to decide at " + std::string(out.rows.size() == 1 ? "the" : "all") +
                            " " + n + " point" + (out.rows.size() == 1 ? "" : "s") + " measured";
  }
  if (!missing.empty()) {
    std::vector<std::string> reasons;
    for (const NotRunRow& m : missing) reasons.push_back(m.reason);
    out.detail += "; " + std::to_string(missing.size()) + " not run here (" + join(sorted_unique(reasons), "; ") + ")";
  }
  std::vector<std::string> analogues;
  bool all_analogue = true;
  for (const ClaimRow& r : out.rows) {
    if (r.analogue.empty()) all_analogue = false;
    else analogues.push_back(r.analogue);
  }
  out.analogue = all_analogue && !analogues.empty();
  if (out.analogue) out.detail = "from a CPU analogue only (" + join(sorted_unique(analogues), "; ") + "): " + out.detail;
}

void judge_environment(const ClaimSpec& claim, const nlohmann::json& environment, ClaimVerdict& out) {
  const auto it = environment.find(claim.field);
  const bool absent = it == environment.end() || it->is_null() || (it->is_string() && it->get<std::string>().empty()) ||
                      (it->is_number() && it->get<double>() == 0);
  if (absent) {
    std::string reason = text(environment, claim.absent_reason_field);
    if (reason.empty()) reason = "no GPU in this run";
    out.verdict = gpu_only(reason) ? kNotTestableHere : kNotRunHere;
    out.detail = reason;
    return;
  }
  const std::string value = it->is_string() ? it->get<std::string>() : it->dump();
  std::string recorded = claim.field + ": " + value;
  // Compute capability major >= 7 (Volta) has tensor cores.
  const std::string major = value.substr(0, value.find('.'));
  char* end = nullptr;
  const double m = std::strtod(major.c_str(), &end);
  if (!major.empty() && end && *end == '\0') recorded += m >= 7 ? " (has tensor cores)" : " (no tensor cores)";
  const std::string gpu = text(environment, "gpu_name");
  if (!gpu.empty()) recorded = gpu + ", " + recorded;
  out.verdict = kRecorded;
  out.detail = "environment capture only; " + recorded;
  out.recorded = {recorded};
}

void judge_limits(const ClaimSpec& claim, const std::vector<Experiment>& run, ClaimVerdict& out) {
  std::vector<std::string> limits;
  for (const Experiment& e : run) {
    if (e.kind != "limit") continue;
    bool measured = false;
    for (const Point& p : e.points) {
      for (const Arm& a : p.arms) measured = measured || a.median.has_value();
    }
    if (measured) limits.push_back(e.name);
  }
  for (const Experiment& e : run) {
    for (const Point& p : e.points) {
      for (const Arm& a : p.arms) {
        if (!a.percent_of_limit || !a.has_limit) continue;
        // Above its limit: a measurement defect, never a plain figure.
        out.recorded.push_back((a.benchmark.empty() ? e.name : a.benchmark) + ": " +
                               (a.limit_defect.empty() ? "" : "DEFECT ") +
                               (a.limit_counter.empty() ? "" : a.limit_counter + " ") + fmt("%.0f", *a.percent_of_limit) +
                               " % of " + a.limit_benchmark);
      }
    }
  }
  // Comparisons that say they test this claim (the BLAS kernel choice) are shown beside it.
  for (const Experiment& e : run) {
    if (e.claim == claim.id && e.kind != "limit") rows_of(e, out.rows, out.not_run);
  }
  if (limits.empty()) {
    out.verdict = kNotRunHere;
    out.detail = "no machine limit was measured in this run";
    return;
  }
  out.verdict = kRecorded;
  out.detail = std::to_string(limits.size()) + " limit experiment(s) measured (" + join(limits, ", ") + "); " +
               std::to_string(out.recorded.size()) + " result(s) placed against them";
}

nlohmann::json optional_number(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }

}  // namespace

std::vector<ClaimVerdict> judge_claims(const std::vector<ClaimSpec>& claims, const nlohmann::json& experiments,
                                       const nlohmann::json& environment) {
  std::vector<Experiment> run;
  if (experiments.is_array()) {
    for (const auto& e : experiments) run.push_back(read_experiment(e));
  }
  const nlohmann::json env = environment.is_object() ? environment : nlohmann::json::object();
  std::vector<ClaimVerdict> out;
  for (const ClaimSpec& claim : claims) {
    ClaimVerdict v;
    v.id = claim.id, v.claim = claim.text, v.kind = claim.kind;
    for (const ClaimExperiment& x : claim.experiments) v.experiments.push_back(x.name);
    if (claim.kind == "environment") {
      judge_environment(claim, env, v);
    } else if (claim.kind == "limits") {
      judge_limits(claim, run, v);
    } else {
      judge_ratio_claim(claim, run, v);
    }
    out.push_back(std::move(v));
  }
  return out;
}

nlohmann::json to_json(const ClaimVerdict& v) {
  nlohmann::json rows = nlohmann::json::array(), not_run = nlohmann::json::array();
  for (const ClaimRow& r : v.rows) {
    rows.push_back({{"experiment", r.experiment}, {"point", r.point}, {"treatment", r.treatment},
                    {"baseline", r.baseline}, {"ratio", optional_number(r.ratio)},
                    {"ci_low", optional_number(r.ci_low)}, {"ci_high", optional_number(r.ci_high)},
                    {"confidence", optional_number(r.confidence)}, {"verdict", r.verdict}, {"why", r.why},
                    {"test", r.test}, {"analogue", r.analogue}});
  }
  for (const NotRunRow& m : v.not_run) {
    not_run.push_back({{"experiment", m.experiment}, {"point", m.point}, {"treatment", m.treatment}, {"reason", m.reason}});
  }
  return {{"id", v.id},           {"claim", v.claim},     {"kind", v.kind},       {"verdict", v.verdict},
          {"detail", v.detail},   {"analogue", v.analogue}, {"experiments", v.experiments}, {"rows", rows},
          {"not_run", not_run},   {"absent", v.absent},   {"excluded", v.excluded}, {"recorded", v.recorded},
          {"details", v.details}};
}

nlohmann::json claims_to_json(const std::vector<ClaimVerdict>& verdicts) {
  nlohmann::json out = nlohmann::json::array();
  for (const ClaimVerdict& v : verdicts) out.push_back(to_json(v));
  return out;
}

namespace {

std::string axis_text(const std::map<std::string, std::vector<std::string>>& m) {
  std::vector<std::string> parts;
  for (const auto& [axis, values] : m) parts.push_back(axis + ":" + join(values, "|"));
  return join(parts, " ");
}

std::string check_text(const VerdictCheckEntry& c) {
  // The tests' wording is in "The rules" above: here only what this check chooses.
  std::string out;
  if (c.test == "better") {
    out = "**better** than " + fmt("%g", c.threshold) + " (no meaningful difference within " + fmt("%g", c.equivalence) + "x)";
  } else if (c.test == "same") {
    out = "**same** within " + fmt("%g", c.tolerance) + "x";
  } else {
    out = "**plateau** of " + join(c.treatments, " < ") + " (more stopped helping within " + fmt("%g", c.equivalence) + "x)";
  }
  if (c.test != "plateau") out += "; treatments: " + (c.treatments.empty() ? std::string("all") : join(c.treatments, ", "));
  out += "; grid points: " + (c.where.empty() ? std::string("all") : axis_text(c.where));
  if (!c.exclude.empty()) out += " except " + axis_text(c.exclude);
  if (!c.why.empty()) out += ". Why: " + c.why;
  if (!c.analogue.empty()) out += ". **CPU analogue**: " + c.analogue;
  return out;
}

std::string seed_text(const nlohmann::json& doc, const nlohmann::json& claim) {
  std::vector<std::string> parts;
  std::string seeds = text(claim, "seed");
  std::size_t from = 0;
  while (from < seeds.size()) {
    std::size_t end = seeds.find(',', from);
    if (end == std::string::npos) end = seeds.size();
    std::string id = seeds.substr(from, end - from);
    id.erase(0, id.find_first_not_of(' '));
    const nlohmann::json& titles = doc.contains("seeds") ? doc["seeds"] : nlohmann::json::object();
    parts.push_back(id + " (" + text(titles, id, "unknown seed") + ")");
    from = end + 1;
  }
  std::string out = "seed " + join(parts, "; ");
  if (!text(claim, "section").empty()) out += ", " + text(claim, "section");
  return out;
}

}  // namespace

std::string claims_markdown(const nlohmann::json& doc, const std::vector<ExperimentEntry>& experiments) {
  const std::vector<ClaimSpec> claims = parse_claims(doc, "harness/analysis/claims.json");
  std::map<std::string, const ExperimentEntry*> by_name;
  for (const ExperimentEntry& e : experiments) by_name.emplace(e.name, &e);
  const nlohmann::json& rules = doc.contains("verdict_rules") ? doc["verdict_rules"] : nlohmann::json::object();
  std::string md =
      "# Claims: what pairbench tests and how each verdict is decided\n\n"
      "<!-- Generated by `pairbench list --format claims-markdown` from harness/analysis/claims.json and the experiments'\n"
      "     declarations (bench/<area>/<experiment>.cpp, `verdict`); the test docs.claims_current fails when\n"
      "     this file is stale. Edit those, then regenerate. -->\n\n"
      "Each claim of the seed documents, paraphrased, with its source, the experiments that test it and the\n"
      "rule that turns this machine's ratios into a verdict. The harness judges every claim at the end of a\n"
      "run (`harness/analysis/claims.cpp`) and writes the verdicts into the run file (`pairbench.claims`); the terminal\n"
      "summary prints them and the report draws them.\n\n"
      "## The rules\n\n";
  for (const char* key : {"ratio", "selection", "analogue", "combine"}) {
    if (rules.contains(key)) md += "- " + text(rules, key) + "\n";
  }
  if (rules.contains("tests")) {
    for (const char* key : {"better", "same", "plateau"}) {
      if (rules["tests"].contains(key)) md += "- `" + std::string(key) + "`: " + text(rules["tests"], key) + "\n";
    }
  }
  md += "\nVerdicts: held, did not hold, inconclusive, not run here (with the reasons), not testable here (every\n"
        "arm that could decide it needs a CUDA device this machine lacks), recorded (environment and limits\n"
        "claims, which have no ratio).\n";
  for (std::size_t i = 0; i < claims.size(); ++i) {
    const ClaimSpec& c = claims[i];
    const nlohmann::json& entry = doc["claims"][i];
    md += "\n## " + c.id + ": " + c.text + "\n\n";
    md += "- Source: " + seed_text(doc, entry) + ".\n";
    if (!text(entry, "baseline_vs_treatment").empty()) md += "- Compared: " + text(entry, "baseline_vs_treatment") + ".\n";
    md += "- CPU: " + text(entry, "cpu", "-") + "; GPU: " + text(entry, "gpu", "-") + ".\n";
    if (entry.contains("quoted_figures")) {
      for (const auto& q : entry["quoted_figures"]) {
        md += "- The seed quotes: " + text(q, "text");
        if (q.contains("implied_ratio")) md += " (implied ratio " + text(q, "implied_ratio") + ": " + text(q, "implied_ratio_meaning") + ")";
        md += ".\n";
      }
    }
    if (c.kind == "environment") {
      md += "- Decided: not by a ratio. The environment fingerprint records `" + c.field +
            "`; the verdict is **recorded** with its value (tensor cores from 7.0 on), or not testable here with `" +
            c.absent_reason_field + "` where there is no such device.\n";
    } else if (c.kind == "limits") {
      md += "- Decided: not by a ratio. Every result placed against a limit measured in the same run is **recorded** "
            "with its percentage of that limit (a median more than 5 % above its limit is a measurement defect, "
            "flagged DEFECT); not run here when the run measured no limit. Limits and comparisons listed:\n";
    } else {
      md += "- Decided by (any point that did not hold decides; all held: held; else inconclusive):\n";
    }
    if (c.experiments.empty() && c.kind == "ratio") md += "  - no experiment yet: not run here.\n";
    for (const ClaimExperiment& x : c.experiments) {
      const auto it = by_name.find(x.name);
      if (it == by_name.end()) {
        md += "  - `" + x.name + "`: " + (x.planned ? "planned, not implemented yet" : "not declared by any bench binary") + ".\n";
        continue;
      }
      const ExperimentEntry& e = *it->second;
      md += "  - `" + e.name + "`: " + e.question;
      if (e.kind == "limit") {
        md += " (a machine limit)\n";
        continue;
      }
      if (e.claim != c.id) {
        md += " (declares " + (e.claim.empty() ? std::string("no claim") : e.claim) + ": not counted)\n";
        continue;
      }
      md += "\n";
      if (e.verdict.empty()) {
        md += "    - " + check_text(VerdictCheckEntry{}) + " (the default check)\n";
      }
      for (const VerdictCheckEntry& check : e.verdict) md += "    - " + check_text(check) + "\n";
    }
    for (const ExperimentEntry& e : experiments) {
      const bool listed = std::any_of(c.experiments.begin(), c.experiments.end(),
                                      [&](const ClaimExperiment& x) { return x.name == e.name; });
      if (e.claim == c.id && !listed) md += "  - `" + e.name + "` declares " + c.id + " but is not listed: not counted.\n";
    }
  }
  return md;
}

void print_claims(std::ostream& out, const nlohmann::json& claims) {
  out << "\nclaims (harness/analysis/claims.json; how each is decided: docs/claims.md)\n";
  for (const auto& c : claims) {
    std::string detail = text(c, "detail");
    if (detail.size() > 160) detail = detail.substr(0, 157) + "...";  // the run file has all of it
    char line[96];
    std::snprintf(line, sizeof line, "  %-4s %-17s ", text(c, "id").c_str(), text(c, "verdict").c_str());
    out << line << detail << "\n";
  }
}

}  // namespace pairbench::harness
