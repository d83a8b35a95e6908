// Per-benchmark comparison of two runs (compare_runs) and the gate's outcome. The steps: rows for
// every benchmark of each instrument, those in one run only decided here (missing, broken, new),
// the rest in decide_time.cpp and decide_instructions.cpp. The outputs: print_*.cpp.
#include "harness/gate/gate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <stdexcept>

#include "harness/gate/decide.h"
#include "harness/store/run_file.h"

namespace pairbench::harness {
namespace {

using gate_detail::ExperimentInfo;
using gate_detail::Experiments;
using gate_detail::Matched;
using gate_detail::Side;
using gate_detail::Sides;

void check_options(const GateOptions& options) {
  if (!(options.alpha > 0 && options.alpha < 1) || !(options.threshold > 0) || !(options.instructions_threshold > 0) ||
      !(options.interval_level > 0 && options.interval_level < 1)) {
    throw std::invalid_argument("gate options: alpha and the interval level must lie in (0, 1), thresholds > 0");
  }
}

GateRun gate_run(const nlohmann::json& doc) {
  auto text = [](const nlohmann::json& object, const char* key) {
    const auto it = object.find(key);
    return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  const auto& pb = doc.at("pairbench");
  const auto env = pb.find("environment");
  const nlohmann::json none = nlohmann::json::object();
  const auto& e = env != pb.end() && env->is_object() ? *env : none;
  return {text(pb, "run_id"), text(e, "machine_key"), text(e, "git_sha"), text(pb, "started_at")};
}

// A report with no rows yet: what was compared, with what, and whether it may be compared at all.
GateReport empty_report(const nlohmann::json& baseline, const nlohmann::json& current, const GateOptions& options,
                        const std::string& baseline_label, const std::string& current_label) {
  GateReport report;
  report.options = options;
  report.baseline_label = baseline_label;
  report.current_label = current_label;
  report.baseline_run = gate_run(baseline);
  report.current_run = gate_run(current);
  report.fingerprint_differences =
      fingerprint_differences(baseline.at("pairbench").at("environment"), current.at("pairbench").at("environment"));
  if (!report.fingerprint_differences.empty()) {
    // Two GPU models are two machines whose figures answer different questions (an H100's
    // bandwidth is not an H200's): no comparison between them, forced or not.
    const std::string gpu_a = baseline["pairbench"]["environment"].value("gpu_name", ""),
                      gpu_b = current["pairbench"]["environment"].value("gpu_name", "");
    if (!gpu_a.empty() && !gpu_b.empty() && gpu_a != gpu_b) {
      throw std::invalid_argument("refusing to compare runs from different GPU models ('" + gpu_a + "' vs '" + gpu_b +
                                  "'): --force does not override this");
    }
    if (!options.force) {
      std::string fields;
      for (const auto& d : report.fingerprint_differences) fields += (fields.empty() ? "" : "; ") + d;
      throw std::invalid_argument("refusing to compare runs from different machines or builds (--force to override): " +
                                  fields);
    }
    report.forced = true;
  }
  report.partial_runs = gate_detail::partial_runs(baseline, current);
  return report;
}

// What differs between the instruments' rows before they are decided.
struct InstrumentRows {
  Instrument instrument;
  const char* missing_note;  // a baseline benchmark the current run lacks, and not broken there
  const char* new_note;      // a current benchmark the baseline lacks
};
constexpr InstrumentRows kTimeRows{Instrument::time, "not in the current run", "not in the baseline"};
constexpr InstrumentRows kInstructionRows{Instrument::instructions, "no instruction count in the current run",
                                          "no instruction count in the baseline"};

// A baseline benchmark's row: what it measures, its threshold, its baseline processes.
BenchmarkVerdict baseline_row(Instrument instrument, const std::string& name, const Side& b, const Experiments& info,
                              const GateOptions& options) {
  BenchmarkVerdict v;
  v.instrument = instrument;
  v.benchmark = name;
  v.experiment = b.experiment;
  const auto found = info.find(b.experiment);
  const ExperimentInfo e = found != info.end() ? found->second : ExperimentInfo{};
  if (instrument == Instrument::time) {
    v.metric = e.metric, v.unit = e.unit, v.better = e.better;
    v.threshold = threshold_for(e.threshold, options.threshold);
  } else {
    v.metric = "instructions_per_iteration", v.unit = "instructions", v.better = "lower";
    v.threshold = threshold_for(e.instructions_threshold, options.instructions_threshold);
  }
  v.baseline_samples = static_cast<int>(b.values.size());
  v.baseline_median = stats::median(b.values);
  return v;
}

// A row for every benchmark of one instrument, in the order the outputs show them: the
// baseline's by name, then those new in the current run. A benchmark in one run only is decided
// here (broken where the current run says it failed, else missing; or new); the rest are
// returned, to be decided.
std::vector<Matched> match_benchmarks(GateReport& report, const InstrumentRows& kind, const Sides& base,
                                      const Sides& cur, const std::map<std::string, std::string>& broken,
                                      const std::map<std::string, std::string>& not_measured, const Experiments& info) {
  std::vector<Matched> matched;
  for (const auto& [name, b] : base) {
    BenchmarkVerdict v = baseline_row(kind.instrument, name, b, info, report.options);
    const auto it = cur.find(name);
    if (it == cur.end()) {
      const auto br = broken.find(name);
      v.verdict = br != broken.end() ? Verdict::broken : Verdict::missing;
      v.note = br != broken.end() ? br->second : kind.missing_note;
      // Where the current run says why it did not measure it (no device, too slow to simulate,
      // counted at a cheaper grid point of its arm), the row says so.
      if (const auto nm = not_measured.find(name);
          br == broken.end() && nm != not_measured.end() && !nm->second.empty()) {
        v.note += ": " + nm->second;
      }
    } else {
      v.current_samples = static_cast<int>(it->second.values.size());
      v.current_median = stats::median(it->second.values);
      matched.push_back({report.rows.size(), &b, &it->second});
    }
    report.rows.push_back(v);
  }
  for (const auto& [name, c] : cur) {
    if (base.count(name)) continue;
    BenchmarkVerdict v;
    v.instrument = kind.instrument;
    v.benchmark = name;
    v.experiment = c.experiment;
    v.current_samples = static_cast<int>(c.values.size());
    v.current_median = stats::median(c.values);
    v.verdict = Verdict::new_;
    v.note = kind.new_note;
    report.rows.push_back(v);
  }
  return matched;
}

}  // namespace

// "<git sha>" or "<git sha>-dirty" from pairbench.environment; "" where the run file has none.
static std::string build_identity(const nlohmann::json& doc) {
  const auto p = doc.find("pairbench");
  if (p == doc.end() || !p->is_object()) return "";
  const auto env = p->find("environment");
  if (env == p->end() || !env->is_object()) return "";
  const auto sha = env->find("git_sha");
  if (sha == env->end() || !sha->is_string() || sha->get<std::string>().empty()) return "";
  const auto dirty = env->find("git_dirty");
  return sha->get<std::string>() + (dirty != env->end() && dirty->is_boolean() && dirty->get<bool>() ? "-dirty" : "");
}

bool is_suspect(const BenchmarkVerdict& v) {
  if (v.verdict == Verdict::regression || v.verdict == Verdict::undecided) return true;
  // Unchanged only at its resolution, yet its estimate slower than the threshold: a screen, not a
  // verdict. A false suspect costs a few seconds of one ab run; a missed one a regression that two
  // noisy runs could not see (a planted 10 % measured +15 to +45 % with p 0.05 to 0.16 beside a
  // neighbour's build), so no significance is asked of it.
  return v.instrument == Instrument::time && (v.verdict == Verdict::unchanged || v.verdict == Verdict::not_gated) &&
         v.gated_at > v.threshold && v.slowdown > v.threshold;
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
  switch (outcome()) {
    case GateOutcome::regression:
      return 1;
    case GateOutcome::undecided:
      return options.undecided == UndecidedPolicy::fail ? kGateExitUndecided : 0;
    case GateOutcome::pass:
      break;
  }
  return 0;
}

double threshold_for(double declared, double gate_threshold) { return declared > 0 ? declared : gate_threshold; }

std::map<std::string, ExperimentDirection> experiment_directions(const std::vector<const nlohmann::json*>& run_files,
                                                                 double gate_threshold) {
  std::map<std::string, ExperimentDirection> out;
  for (const nlohmann::json* doc : run_files) {
    for (const auto& e : (*doc)["pairbench"]["experiments"]) {
      out[e.value("name", "")] = {e.value("better", "lower") != "higher",
                                  threshold_for(e.value("gate_threshold", 0.0), gate_threshold)};
    }
  }
  return out;
}

RunShift detect_run_shift(const std::vector<BenchmarkVerdict>& rows, const std::set<std::string>& limit_experiments,
                          double threshold) {
  std::vector<double> all, limits;
  for (const BenchmarkVerdict& v : rows) {
    if (v.instrument != Instrument::time || v.baseline_samples == 0 || v.current_samples == 0) continue;
    if (!std::isfinite(v.slowdown) || v.slowdown <= -1) continue;
    const double log_change = std::log1p(v.slowdown);
    all.push_back(log_change);
    if (limit_experiments.count(v.experiment)) limits.push_back(log_change);
  }
  RunShift s;
  s.rows = static_cast<int>(all.size());
  s.limit_rows = static_cast<int>(limits.size());
  if (all.empty()) return s;
  const double m = stats::median(all);
  s.median = std::expm1(m);
  s.with_median =
      static_cast<int>(std::count_if(all.begin(), all.end(), [&](double x) { return m != 0 && x * m > 0; }));
  if (!limits.empty()) s.limit_median = std::expm1(stats::median(limits));
  const double lm = std::log1p(s.limit_median);
  s.moved = s.rows >= kRunShiftMinRows && s.with_median >= kRunShiftMajority * s.rows &&
            std::abs(m) >= std::log1p(threshold / 2) && s.limit_rows > 0 && lm * m > 0 &&
            std::abs(lm) >= std::abs(m) / 2;
  return s;
}

void hold_run_shift(GateReport& report) {
  RunShift& s = report.run_shift;
  if (!s.moved) return;
  const Verdict with_run = s.median > 0 ? Verdict::regression : Verdict::improvement;
  char note[200];
  std::snprintf(note, sizeof note,
                "held: the whole run moved %+.1f %% (the machine, not necessarily the code); confirm on one runner",
                100 * s.median);
  const std::string held_prefix = "held: the whole run moved";
  s.held = 0;
  for (BenchmarkVerdict& v : report.rows) {
    if (v.instrument == Instrument::time && v.verdict == with_run) {
      v.verdict = Verdict::undecided;
      v.note = v.note.empty() ? note : std::string(note) + "; " + v.note;
    }
    if (v.verdict == Verdict::undecided && v.note.rfind(held_prefix, 0) == 0)
      ++s.held;  // held now, by this call or an earlier one
  }
}

GateReport compare_runs(const nlohmann::json& baseline, const nlohmann::json& current, const GateOptions& options,
                        const std::string& baseline_label, const std::string& current_label) {
  check_options(options);
  GateReport report = empty_report(baseline, current, options, baseline_label, current_label);
  report.baseline_build = build_identity(baseline);
  report.current_build = build_identity(current);
  const Experiments info = gate_detail::experiments_of(baseline, current);
  // Duet pairs mean something only between the two halves of one `ab` run.
  const bool try_pairs = gate_detail::same_ab_run(baseline, current);

  // Read in this order (baseline before current, time before instructions) so that of two bad
  // values the same one is named as before.
  const Sides base = gate_detail::time_sides(baseline), cur = gate_detail::time_sides(current);
  const auto time_rows =
      match_benchmarks(report, kTimeRows, base, cur, gate_detail::broken_in(current, Instrument::time),
                       gate_detail::not_measured_in(current, Instrument::time), info);
  gate_detail::decide_time_rows(report, time_rows, info, try_pairs);
  if (!try_pairs) {
    std::set<std::string> limits;
    for (const auto& [name, e] : info) {
      if (e.is_limit) limits.insert(name);
    }
    report.run_shift = detect_run_shift(report.rows, limits, report.options.threshold);
    hold_run_shift(report);
  }

  const Sides ibase = gate_detail::instruction_sides(baseline), icur = gate_detail::instruction_sides(current);
  const auto instruction_rows =
      match_benchmarks(report, kInstructionRows, ibase, icur, gate_detail::broken_in(current, Instrument::instructions),
                       gate_detail::not_measured_in(current, Instrument::instructions), info);
  gate_detail::decide_instruction_rows(report, instruction_rows);
  attach_function_diffs(report, baseline, current);
  return report;
}

void list_differences(GateReport& report, const std::vector<std::string>& differences) {
  for (const std::string& d : differences) {
    if (std::ranges::find(report.fingerprint_differences, d) != report.fingerprint_differences.end()) continue;
    report.fingerprint_differences.push_back(d);
    report.forced = true;
  }
}

}  // namespace pairbench::harness
