// The experiment summary of a run: per experiment and grid point, each arm's median and
// verification, each treatment's ratio to the baseline with a confidence interval, and targets.
#pragma once

#include <nlohmann/json.hpp>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "harness/exec/catalogue.h"
#include "harness/store/sample.h"
#include "harness/store/vocabulary.h"

namespace pairbench::harness {

// How far above its limit a median may be before the summary flags a measurement defect
// (`limit_defect`): 5 % on the medians, above a bandwidth median's run-to-run noise.
inline constexpr double kLimitDefectMargin = 0.05;

// ---- The experiment summary (`pairbench.experiments`), typed; to_json is its one serialiser. ----

// A secondary counter of an arm (peak RSS, page faults, error): its median over the processes,
// and its ratio to the baseline's, oriented by the counter's own direction (> 1: better).
struct SecondarySummary {
  double median = 0;
  std::string unit, better;
  std::optional<double> ratio;
};

// The limit an arm's figure is placed against: the best median among the candidates measured.
struct LimitPlacement {
  std::string benchmark;  // the best candidate
  double median = 0;
  std::size_t best_of = 0;  // how many candidates were weighed
  std::string counter;      // our secondary counter placed; empty = the deciding metric
};

// Median, spread and robust CV of the processes that passed (read back from an old run file, a
// figure written as null is NaN).
struct ArmStatistics {
  double median = 0, min = 0, max = 0, cv = 0;
};

struct ArmSummary {
  std::string arm, role, benchmark, unit;
  Verification verification = Verification::not_run;  // the worst of its processes; not_run when none ran
  std::string reason;                                 // the first failed process's reason
  std::size_t samples = 0;                            // processes that passed
  std::optional<ArmStatistics> statistics;            // none passed: absent
  std::map<std::string, SecondarySummary> secondary;
  std::optional<double> harness_overhead;  // share of the process's wall time outside the measurement
  bool environment_arm = false;
  std::string label;  // the label most processes reported (which kernel or allocator was in effect)
  bool labels_differ = false;
  std::optional<LimitPlacement> limit;
  std::optional<double> percent_of_limit;
  std::string limit_defect;  // more than kLimitDefectMargin above its limit: why it is a defect
};

// A treatment against the baseline, oriented so that > 1 means the treatment is better.
struct RatioSummary {
  std::string treatment;
  double ratio = 0, ci_low = 0, ci_high = 0;
  double confidence = 0;  // the level the interval reached
  double ratio_of_medians = 0;
};

struct TargetResult {
  std::string arm, text;
  double bound = 0, median = 0;
  bool met = false;
};

struct PointSummary {
  std::vector<std::pair<std::string, std::string>> params;  // in axis order
  std::vector<ArmSummary> arms;
  std::vector<RatioSummary> ratios;
  std::vector<TargetResult> targets;
};

struct ExperimentSummary {
  std::string name, question, claim, kind, metric, unit, better, timing, time_relation;
  double gate_threshold = 0, instructions_gate_threshold = 0;  // 0: the gate's default (not written)
  std::vector<VerdictCheckEntry> verdict;                      // the checks that decide its claim
  std::vector<PointSummary> points;
  std::optional<FigureEntry> figure;  // how the report draws it, as declared (absent: older binaries)
};

// The summary of every experiment from the run's samples; `confidence` for ratio intervals.
std::vector<ExperimentSummary> summarise_experiments(const std::vector<ExperimentEntry>& experiments,
                                                     const std::vector<Sample>& samples, double confidence = 0.95);
nlohmann::json to_json(const ExperimentSummary& e);
// `pairbench.experiments`: each experiment's to_json, in order.
nlohmann::json experiments_to_json(const std::vector<ExperimentSummary>& summary);
// experiments_to_json of summarise_experiments.
nlohmann::json summarise(const std::vector<ExperimentEntry>& experiments, const std::vector<Sample>& samples,
                         double confidence = 0.95);

// `pairbench.experiments` of a run file read back into the typed summary: the inverse of to_json,
// for run files written before the harness judged claims. Reads files of any age: an absent
// optional field takes the run-file reader's default (plots/pairbench_report/runfile.py), a grid
// value may be a number; a field of the wrong type or an unknown verification throws
// JsonFieldError naming `source` and the field.
std::vector<ExperimentSummary> summary_from_json(const nlohmann::json& experiments, const std::string& source);

// Prints the summary as a terminal table.
void print_summary(std::ostream& out, const std::vector<ExperimentSummary>& summary);

// "1.23 us", "85.2 ns", "12.3 GB/s": a value in the metric's base unit, with an SI prefix.
std::string format_quantity(double value, const std::string& unit);

}  // namespace pairbench::harness
