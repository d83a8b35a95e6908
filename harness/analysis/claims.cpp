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
      verdict["checks"].fail(
          "no checks here: each experiment declares its own (`verdict` in bench/<area>/<experiment>.cpp)");
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
  return reason.find("no CUDA device") != std::string::npos ||
         reason.find("not compiled with CUDA") != std::string::npos;
}

// A text field of claims.json or the environment: absent or null takes the fallback, a number is
// written as JSON.
std::string text(const nlohmann::json& j, const std::string& key, const std::string& fallback = "") {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return it->is_string() ? it->get<std::string>() : it->dump();
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

// The rules' view of a grid point of the typed summary: its label, and only the ratios that can
// decide (a ratio of nothing decides nothing).
struct Point {
  const std::vector<std::pair<std::string, std::string>>& params;
  const std::vector<ArmSummary>& arms;
  std::vector<const RatioSummary*> ratios;
  std::string label;  // "axis:value axis:value" in the benchmark names' axis order

  const ArmSummary* arm(const std::string& name) const {
    for (const ArmSummary& a : arms) {
      if (a.arm == name) return &a;
    }
    return nullptr;
  }
  const RatioSummary* ratio(const std::string& treatment) const {
    for (const RatioSummary* r : ratios) {
      if (r->treatment == treatment) return r;
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
  const std::string &name, &claim, &kind;
  const std::vector<VerdictCheckEntry>& checks;
  std::vector<Point> points;
};

// A figure that can decide: finite (a run file writes a non-finite one as null, read back as NaN).
std::optional<double> finite(double v) { return std::isfinite(v) ? std::optional<double>(v) : std::nullopt; }

bool has_median(const ArmSummary& a) { return a.statistics && std::isfinite(a.statistics->median); }

bool placed_against_limit(const ArmSummary& a) {
  return a.percent_of_limit && std::isfinite(*a.percent_of_limit) && a.limit && std::isfinite(a.limit->median);
}

// A limit more than 5 % below the median is a measurement defect (summary.h kLimitDefectMargin);
// run files written before `limit_defect` existed are judged the same way.
constexpr double kDefectPercent = 105.0;

bool limit_defect(const ArmSummary& a) {
  return !a.limit_defect.empty() || (a.percent_of_limit && *a.percent_of_limit > kDefectPercent);
}

// Axis order as the benchmark names give it (`exp/arm/a:1/b:2`), appended to `axes`.
void add_name_axes(const std::string& benchmark, std::vector<std::string>& axes) {
  std::size_t from = 0;
  for (int slash = 0; slash < 2 && from != std::string::npos; ++slash) {
    from = benchmark.find('/', from);
    if (from != std::string::npos) ++from;
  }
  while (from != std::string::npos && from < benchmark.size()) {
    const std::size_t end = benchmark.find('/', from);
    const std::string part = benchmark.substr(from, end == std::string::npos ? std::string::npos : end - from);
    if (const std::size_t colon = part.find(':'); colon != std::string::npos) {
      const std::string axis = part.substr(0, colon);
      if (std::find(axes.begin(), axes.end(), axis) == axes.end()) axes.push_back(axis);
    }
    from = end == std::string::npos ? end : end + 1;
  }
}

Experiment view_of(const ExperimentSummary& e) {
  Experiment x{e.name, e.claim, e.kind, e.verdict, {}};
  std::vector<std::string> axes;
  for (const PointSummary& p : e.points) {
    Point point{p.params, p.arms, {}, ""};
    for (const ArmSummary& a : p.arms) add_name_axes(a.benchmark, axes);
    // Then any other parameter, by name (as a run file's params object orders them).
    const std::map<std::string, std::string> by_name(p.params.begin(), p.params.end());
    for (const auto& [k, v] : by_name) {
      if (std::find(axes.begin(), axes.end(), k) == axes.end()) axes.push_back(k);
    }
    for (const RatioSummary& r : p.ratios) {
      if (std::isfinite(r.ratio) && r.ratio > 0) point.ratios.push_back(&r);
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

std::string arm_reason(const ArmSummary* arm) {
  if (!arm) return "not run";
  const Verification v = arm->verification;
  if (!arm->reason.empty()) {
    return v == Verification::not_supported || v == Verification::not_run ? arm->reason
                                                                          : to_string(v) + ": " + arm->reason;
  }
  if (v != Verification::passed) return to_string(v);
  return "no ratio";
}

const ArmSummary* baseline_of(const Point& p) {
  for (const ArmSummary& a : p.arms) {
    if (a.role == "baseline") return &a;
  }
  return nullptr;
}

std::pair<ClaimVerdict, std::string> judge_point(const RatioSummary& r, const VerdictCheckEntry& check) {
  if (!std::isfinite(r.ci_low) || !std::isfinite(r.ci_high)) return {ClaimVerdict::inconclusive, "no interval"};
  const double low = r.ci_low, high = r.ci_high;
  if (check.test == "same") {
    const double tol = check.tolerance;
    const std::string band = "[" + fmt("%.3g", 1 / tol) + ", " + fmt("%.3g", tol) + "]";
    if (1 / tol <= low && high <= tol) return {ClaimVerdict::held, "interval inside " + band};
    if (low > tol || high < 1 / tol) return {ClaimVerdict::did_not_hold, "interval outside " + band};
    return {ClaimVerdict::inconclusive, "interval overlaps the edge of " + band};
  }
  const double threshold = check.threshold, eq = check.equivalence;
  if (low > threshold) return {ClaimVerdict::held, "interval above " + fmt("%g", threshold)};
  if (high < threshold)
    return {ClaimVerdict::did_not_hold, "interval below " + fmt("%g", threshold) + ": the treatment is worse"};
  if (1 / eq <= low && high <= eq) {
    return {ClaimVerdict::did_not_hold,
            "interval inside [" + fmt("%.3g", 1 / eq) + ", " + fmt("%.3g", eq) + "]: no meaningful difference"};
  }
  return {ClaimVerdict::inconclusive, "interval spans " + fmt("%g", threshold)};
}

// The ordered treatments' ratios at one point: does the last stop beating an earlier one k?
// last/k is bounded by [low_last / high_k, high_last / low_k] (both intervals at once).
std::pair<ClaimVerdict, std::string> judge_plateau(const std::vector<const RatioSummary*>& rows, double eq) {
  for (const RatioSummary* r : rows) {
    if (!std::isfinite(r->ci_low) || !std::isfinite(r->ci_high) || r->ci_low <= 0) {
      return {ClaimVerdict::inconclusive, "no interval"};
    }
  }
  const RatioSummary& last = *rows.back();
  for (std::size_t k = 0; k + 1 < rows.size(); ++k) {
    if (last.ci_high / rows[k]->ci_low <= eq) {
      return {ClaimVerdict::held, last.treatment + " is at most " + fmt("%g", eq) + "x " + rows[k]->treatment +
                                      ": more stopped helping by " + rows[k]->treatment};
    }
  }
  bool beats_all = true;
  for (std::size_t k = 0; k + 1 < rows.size(); ++k) beats_all = beats_all && last.ci_low / rows[k]->ci_high > 1.0;
  if (beats_all) return {ClaimVerdict::did_not_hold, last.treatment + " beats every earlier treatment: still helping"};
  return {ClaimVerdict::inconclusive, "the intervals are too wide to tell whether more stopped helping"};
}

ClaimRow measured_row(const Experiment& e, const Point& p, const RatioSummary& r, const VerdictCheckEntry& check,
                      std::pair<ClaimVerdict, std::string> verdict) {
  const ArmSummary* baseline = baseline_of(p);
  return {e.name,
          p.label,
          r.treatment,
          baseline ? baseline->arm : "",
          finite(r.ratio),
          finite(r.ci_low),
          finite(r.ci_high),
          finite(r.confidence),
          verdict.first,
          std::move(verdict.second),
          check.test,
          check.analogue};
}

void plateau_rows(const Experiment& e, const VerdictCheckEntry& check, std::vector<ClaimRow>& measured,
                  std::vector<NotRunRow>& missing) {
  for (const Point& p : e.points) {
    if (!selected(p, check)) continue;
    std::vector<const RatioSummary*> rows;
    for (const std::string& t : check.treatments) {
      const RatioSummary* r = p.ratio(t);
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
    const ArmSummary* baseline = baseline_of(p);
    for (const ArmSummary& arm : p.arms) {
      if (arm.role != "treatment") continue;
      if (!check.treatments.empty() &&
          std::find(check.treatments.begin(), check.treatments.end(), arm.arm) == check.treatments.end()) {
        continue;
      }
      const RatioSummary* r = p.ratio(arm.arm);
      if (!r) {
        std::string reason = arm_reason(&arm);
        // The treatment ran: the baseline is what is missing.
        if (arm.verification == Verification::passed && baseline) {
          reason = "baseline " + baseline->arm + ": " + arm_reason(baseline);
        }
        missing.push_back({e.name, p.label, arm.arm, reason});
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

void judge_ratio_claim(const ClaimSpec& claim, const std::vector<Experiment>& run, ClaimJudgement& out) {
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
      out.verdict = ClaimVerdict::not_testable_here;
      out.detail =
          join(short_reasons, "; ") + " (" + join(needs, ", ") + (needs.size() == 1 ? " needs" : " need") + " one)";
    } else {
      out.verdict = ClaimVerdict::not_run_here;
      out.detail = !short_reasons.empty() ? join(short_reasons, "; ")
                   : !out.absent.empty()  ? "no experiment ran: " + join(out.absent, "; ")
                                          : "no experiment tests this claim yet";
    }
    return;
  }
  std::size_t held = 0;
  std::vector<const ClaimRow*> failed;
  for (const ClaimRow& r : out.rows) {
    if (r.verdict == ClaimVerdict::held) ++held;
    if (r.verdict == ClaimVerdict::did_not_hold) failed.push_back(&r);
  }
  const std::string n = std::to_string(out.rows.size());
  if (!failed.empty()) {
    out.verdict = ClaimVerdict::did_not_hold;
    std::vector<std::string> where;
    for (std::size_t i = 0; i < failed.size() && i < 4; ++i)
      where.push_back(failed[i]->point + " (" + failed[i]->treatment + ")");
    out.detail = "held at " + std::to_string(held) + " of " + n + " points; not at " + join(where, "; ");
    if (failed.size() > 4) out.detail += " and " + std::to_string(failed.size() - 4) + " more";
  } else if (held == out.rows.size()) {
    out.verdict = ClaimVerdict::held;
    out.detail = "held at all " + n + " points measured";
  } else {
    out.verdict = ClaimVerdict::inconclusive;
    out.detail =
        held ? "held at " + std::to_string(held) + " of " + n + " points; the other intervals are too wide to decide"
             : "the intervals are too wide to decide at " + std::string(out.rows.size() == 1 ? "the" : "all") + " " +
                   n + " point" + (out.rows.size() == 1 ? "" : "s") + " measured";
  }
  if (!missing.empty()) {
    std::vector<std::string> reasons;
    for (const NotRunRow& m : missing) reasons.push_back(m.reason);
    out.detail += "; " + std::to_string(missing.size()) + " not run here (" + join(sorted_unique(reasons), "; ") + ")";
  }
  std::vector<std::string> analogues;
  bool all_analogue = true;
  for (const ClaimRow& r : out.rows) {
    if (r.analogue.empty())
      all_analogue = false;
    else
      analogues.push_back(r.analogue);
  }
  out.analogue = all_analogue && !analogues.empty();
  if (out.analogue)
    out.detail = "from a CPU analogue only (" + join(sorted_unique(analogues), "; ") + "): " + out.detail;
}

void judge_environment(const ClaimSpec& claim, const nlohmann::json& environment, ClaimJudgement& out) {
  const auto it = environment.find(claim.field);
  const bool absent = it == environment.end() || it->is_null() || (it->is_string() && it->get<std::string>().empty()) ||
                      (it->is_number() && it->get<double>() == 0);
  if (absent) {
    std::string reason = text(environment, claim.absent_reason_field);
    if (reason.empty()) reason = "no GPU in this run";
    out.verdict = gpu_only(reason) ? ClaimVerdict::not_testable_here : ClaimVerdict::not_run_here;
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
  out.verdict = ClaimVerdict::recorded;
  out.detail = "environment capture only; " + recorded;
  out.recorded = {recorded};
}

void judge_limits(const ClaimSpec& claim, const std::vector<Experiment>& run, ClaimJudgement& out) {
  std::vector<std::string> limits;
  for (const Experiment& e : run) {
    if (e.kind != "limit") continue;
    bool measured = false;
    for (const Point& p : e.points) {
      for (const ArmSummary& a : p.arms) measured = measured || has_median(a);
    }
    if (measured) limits.push_back(e.name);
  }
  for (const Experiment& e : run) {
    for (const Point& p : e.points) {
      for (const ArmSummary& a : p.arms) {
        if (!placed_against_limit(a)) continue;
        // Above its limit: a measurement defect, never a plain figure.
        out.recorded.push_back((a.benchmark.empty() ? e.name : a.benchmark) + ": " +
                               (limit_defect(a) ? "DEFECT " : "") +
                               (a.limit->counter.empty() ? "" : a.limit->counter + " ") +
                               fmt("%.0f", *a.percent_of_limit) + " % of " + a.limit->benchmark);
      }
    }
  }
  // Comparisons that say they test this claim (the BLAS kernel choice) are shown beside it.
  for (const Experiment& e : run) {
    if (e.claim == claim.id && e.kind != "limit") rows_of(e, out.rows, out.not_run);
  }
  if (limits.empty()) {
    out.verdict = ClaimVerdict::not_run_here;
    out.detail = "no machine limit was measured in this run";
    return;
  }
  out.verdict = ClaimVerdict::recorded;
  out.detail = std::to_string(limits.size()) + " limit experiment(s) measured (" + join(limits, ", ") + "); " +
               std::to_string(out.recorded.size()) + " result(s) placed against them";
}

nlohmann::json optional_number(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }

}  // namespace

std::vector<ClaimJudgement> judge_claims(const std::vector<ClaimSpec>& claims,
                                         const std::vector<ExperimentSummary>& experiments,
                                         const nlohmann::json& environment) {
  std::vector<Experiment> run;
  for (const ExperimentSummary& e : experiments) run.push_back(view_of(e));
  const nlohmann::json env = environment.is_object() ? environment : nlohmann::json::object();
  std::vector<ClaimJudgement> out;
  for (const ClaimSpec& claim : claims) {
    ClaimJudgement v;
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

nlohmann::json to_json(const ClaimJudgement& v) {
  nlohmann::json rows = nlohmann::json::array(), not_run = nlohmann::json::array();
  for (const ClaimRow& r : v.rows) {
    rows.push_back({{"experiment", r.experiment},
                    {"point", r.point},
                    {"treatment", r.treatment},
                    {"baseline", r.baseline},
                    {"ratio", optional_number(r.ratio)},
                    {"ci_low", optional_number(r.ci_low)},
                    {"ci_high", optional_number(r.ci_high)},
                    {"confidence", optional_number(r.confidence)},
                    {"verdict", to_string(r.verdict)},
                    {"why", r.why},
                    {"test", r.test},
                    {"analogue", r.analogue}});
  }
  for (const NotRunRow& m : v.not_run) {
    not_run.push_back(
        {{"experiment", m.experiment}, {"point", m.point}, {"treatment", m.treatment}, {"reason", m.reason}});
  }
  return {{"id", v.id},
          {"claim", v.claim},
          {"kind", v.kind},
          {"verdict", to_string(v.verdict)},
          {"detail", v.detail},
          {"analogue", v.analogue},
          {"experiments", v.experiments},
          {"rows", rows},
          {"not_run", not_run},
          {"absent", v.absent},
          {"excluded", v.excluded},
          {"recorded", v.recorded},
          {"details", v.details}};
}

nlohmann::json claims_to_json(const std::vector<ClaimJudgement>& verdicts) {
  nlohmann::json out = nlohmann::json::array();
  for (const ClaimJudgement& v : verdicts) out.push_back(to_json(v));
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
    out = "**better** than " + fmt("%g", c.threshold) + " (no meaningful difference within " +
          fmt("%g", c.equivalence) + "x)";
  } else if (c.test == "same") {
    out = "**same** within " + fmt("%g", c.tolerance) + "x";
  } else {
    out = "**plateau** of " + join(c.treatments, " < ") + " (more stopped helping within " + fmt("%g", c.equivalence) +
          "x)";
  }
  if (c.test != "plateau")
    out += "; treatments: " + (c.treatments.empty() ? std::string("all") : join(c.treatments, ", "));
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
      "<!-- Generated by `pairbench list --format claims-markdown` from harness/analysis/claims.json and the "
      "experiments'\n"
      "     declarations (bench/<area>/<experiment>.cpp, `verdict`); the test docs.claims_current fails when\n"
      "     this file is stale. Edit those, then regenerate. -->\n\n"
      "Each claim of the seed documents, paraphrased, with its source, the experiments that test it and the\n"
      "rule that turns this machine's ratios into a verdict. The harness judges every claim at the end of a\n"
      "run (`harness/analysis/claims.cpp`) and writes the verdicts into the run file (`pairbench.claims`); the "
      "terminal\n"
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
  md +=
      "\nVerdicts: held, did not hold, inconclusive, not run here (with the reasons), not testable here (every\n"
      "arm that could decide it needs a CUDA device this machine lacks), recorded (environment and limits\n"
      "claims, which have no ratio).\n";
  for (std::size_t i = 0; i < claims.size(); ++i) {
    const ClaimSpec& c = claims[i];
    const nlohmann::json& entry = doc["claims"][i];
    md += "\n## " + c.id + ": " + c.text + "\n\n";
    md += "- Source: " + seed_text(doc, entry) + ".\n";
    if (!text(entry, "baseline_vs_treatment").empty())
      md += "- Compared: " + text(entry, "baseline_vs_treatment") + ".\n";
    md += "- CPU: " + text(entry, "cpu", "-") + "; GPU: " + text(entry, "gpu", "-") + ".\n";
    if (entry.contains("quoted_figures")) {
      for (const auto& q : entry["quoted_figures"]) {
        md += "- The seed quotes: " + text(q, "text");
        if (q.contains("implied_ratio"))
          md += " (implied ratio " + text(q, "implied_ratio") + ": " + text(q, "implied_ratio_meaning") + ")";
        md += ".\n";
      }
    }
    if (c.kind == "environment") {
      md += "- Decided: not by a ratio. The environment fingerprint records `" + c.field +
            "`; the verdict is **recorded** with its value (tensor cores from 7.0 on), or not testable here with `" +
            c.absent_reason_field + "` where there is no such device.\n";
    } else if (c.kind == "limits") {
      md +=
          "- Decided: not by a ratio. Every result placed against a limit measured in the same run is **recorded** "
          "with its percentage of that limit (a median more than 5 % above its limit is a measurement defect, "
          "flagged DEFECT); not run here when the run measured no limit. Limits and comparisons listed:\n";
    } else {
      md += "- Decided by (any point that did not hold decides; all held: held; else inconclusive):\n";
    }
    if (c.experiments.empty() && c.kind == "ratio") md += "  - no experiment yet: not run here.\n";
    for (const ClaimExperiment& x : c.experiments) {
      const auto it = by_name.find(x.name);
      if (it == by_name.end()) {
        md += "  - `" + x.name +
              "`: " + (x.planned ? "planned, not implemented yet" : "not declared by any bench binary") + ".\n";
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
      if (e.claim == c.id && !listed)
        md += "  - `" + e.name + "` declares " + c.id + " but is not listed: not counted.\n";
    }
  }
  return md;
}

namespace {

ClaimVerdict verdict_of(const JsonField& j) {
  const JsonField f = j["verdict"];
  const auto v = claim_verdict_from_string(f.string());
  if (!v) f.fail("a claim verdict (held, did not hold, inconclusive, not run here, not testable here, recorded)");
  return *v;
}

// A row's figure: null where it had none.
std::optional<double> nullable_number(const JsonField& j, const std::string& key) {
  const auto f = j.find(key);
  if (!f || f->json().is_null()) return std::nullopt;
  return f->number();
}

std::vector<std::string> strings_or_none(const JsonField& j, const std::string& key) {
  const auto f = j.find(key);
  return f ? f->strings() : std::vector<std::string>{};
}

ClaimJudgement judgement_from_json(const JsonField& c) {
  ClaimJudgement v;
  v.id = c.string_or("id", ""), v.claim = c.string_or("claim", ""), v.kind = c.string_or("kind", "ratio");
  v.verdict = verdict_of(c);
  v.detail = c.string_or("detail", ""), v.analogue = c.boolean_or("analogue", false);
  v.experiments = strings_or_none(c, "experiments");
  if (const auto rows = c.find("rows")) {
    for (const JsonField& r : rows->elements()) {
      v.rows.push_back({r.string_or("experiment", ""), r.string_or("point", ""), r.string_or("treatment", ""),
                        r.string_or("baseline", ""), nullable_number(r, "ratio"), nullable_number(r, "ci_low"),
                        nullable_number(r, "ci_high"), nullable_number(r, "confidence"), verdict_of(r),
                        r.string_or("why", ""), r.string_or("test", ""), r.string_or("analogue", "")});
    }
  }
  if (const auto not_run = c.find("not_run")) {
    for (const JsonField& m : not_run->elements()) {
      v.not_run.push_back({m.string_or("experiment", ""), m.string_or("point", ""), m.string_or("treatment", ""),
                           m.string_or("reason", "")});
    }
  }
  v.absent = strings_or_none(c, "absent"), v.excluded = strings_or_none(c, "excluded");
  v.recorded = strings_or_none(c, "recorded"), v.details = strings_or_none(c, "details");
  return v;
}

}  // namespace

std::vector<ClaimJudgement> claims_from_json(const nlohmann::json& claims, const std::string& source) {
  std::vector<ClaimJudgement> out;
  for (const JsonField& c : JsonField(claims, source, "pairbench.claims").elements())
    out.push_back(judgement_from_json(c));
  return out;
}

void print_claims(std::ostream& out, const std::vector<ClaimJudgement>& claims) {
  out << "\nclaims (harness/analysis/claims.json; how each is decided: docs/claims.md)\n";
  for (const ClaimJudgement& c : claims) {
    std::string detail = c.detail;
    if (detail.size() > 160) detail = detail.substr(0, 157) + "...";  // the run file has all of it
    char line[96];
    std::snprintf(line, sizeof line, "  %-4s %-17s ", c.id.c_str(), to_string(c.verdict).c_str());
    out << line << detail << "\n";
  }
}

}  // namespace pairbench::harness
