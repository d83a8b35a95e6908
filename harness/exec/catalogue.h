// The experiment catalogue, as the bench binaries list it (`bench_X --pairbench_list`): the
// harness keeps no second list of experiments to keep in sync.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/store/json_field.h"

namespace pairbench::harness {

struct BenchmarkEntry {
  std::string name;  // <experiment>/<arm>/<axis>:<value>/...
  std::string arm;
  std::vector<std::pair<std::string, std::string>> params;  // in axis order
  bool available = true;
  std::string reason;         // why not available here
  bool instructions = false;  // instruction counts are a meaningful gate metric here (deterministic CPU work)
  // Threads its process keeps busy, the timing thread included (bench Experiment::threads): a duet
  // side gets that many cores, or the two sides run one at a time where they would not fit.
  // Absent from listings of binaries built before it was declared: 1.
  int threads = 1;
  // Its process uses the CUDA device (bench uses_cuda): `ab`'s duet runs its two sides one at a
  // time, never both on one GPU at once. Absent from older listings: false.
  bool cuda = false;
  // Its process waits at `ab`'s duet start gate before its first timed region (bench
  // timed_region.h), so that both sides of a pair start timing together. Absent from older
  // listings: false, and a pair with such a side runs without the gate.
  bool start_gate = false;
  // It may run in one process with other benchmarks of its experiment (bench --pairbench_plan),
  // one sample each: its experiment does not measure the process's own history (heap, RSS, page
  // state). Absent from older listings: false, and it runs in a process of its own.
  bool shared_process = false;
  // Its arm checks before timing only where asked (bench --pairbench_check, experiment.h
  // check_due). Absent from older listings: false, and every process of it checks, on every side
  // of a run that has it (an older binary would refuse the flag).
  bool check_on_request = false;
};

struct ArmEntry {
  std::string name;
  std::string role;  // baseline | treatment | limit
  std::map<std::string, std::string> env;
};

struct TargetEntry {
  std::string arm;
  std::map<std::string, std::string> where;
  double bound = 0;
  std::string text;
};

struct LimitSourceEntry {
  std::string experiment, arm;  // arm empty = every arm
  std::map<std::string, std::string> where;
};

// The candidates of a limit: (experiment, arm, where), `also`, and with own_arms our own arms at
// the same point; the summary takes the best median among those measured (bench LimitRef).
struct LimitEntry {
  std::string experiment, arm;
  std::map<std::string, std::string> where;
  std::vector<std::string> arms;
  std::map<std::string, std::string> when;
  std::string counter;  // our secondary counter set against the limit; empty = the deciding metric
  std::vector<LimitSourceEntry> also;
  bool own_arms = false;
};

struct SecondaryMetric {
  std::string name, unit, better;
};

// How an experiment's ratios decide its claim (bench VerdictCheck; the rules: harness/analysis/claims.h).
struct VerdictCheckEntry {
  std::string test = "better";                                     // better | same | plateau
  std::vector<std::string> treatments;                             // empty = every treatment; plateau: >= 2, in order
  std::map<std::string, std::vector<std::string>> where, exclude;  // axis -> values
  double threshold = 1.0;                                          // better
  double equivalence = 1.02;  // better: no meaningful difference within it; plateau: 1.05
  double tolerance = 1.1;     // same
  std::string why, analogue;  // analogue: the argument why a CPU experiment tests a GPU claim
};

// How the report draws the experiment (bench Figure), carried into the run file as declared.
struct FigureEntry {
  std::string kind = "metric";                             // metric | accuracy | scaling | memory
  std::string x_axis;                                      // empty: the one numeric axis that varies
  std::string x_scale = "auto", y_scale = "auto";          // auto | linear | log
  std::string counter;                                     // the counter accuracy, scaling and memory draw
  std::string arm_axis;                                    // scaling: what an arm's number counts
  std::vector<std::pair<std::string, double>> arm_values;  // scaling: arm -> its number
};

struct ExperimentEntry {
  std::string binary;  // absolute path of the bench binary that runs it
  // The binary and its layout variants (bench_<area>.layout<k>, the same objects relinked with the
  // code and static data moved; harness/exec/layout.h): the binary first. Filled by load_catalogue.
  std::vector<std::string> layout_binaries;
  // How its binary was built (the listing's `build`: build_type, compiler, compiler_flags,
  // cuda_compiler, cuda_architectures, built_with_cuda); an empty object from binaries built before
  // they said.
  nlohmann::json build = nlohmann::json::object();
  std::string name, claim, question, timing, kind;
  std::string metric, unit, better;  // better: lower | higher
  // How the metric follows an iteration's measured time: proportional | inverse | none. It turns
  // batches of iterations into in-process samples; "none" gives one sample per process.
  std::string time_relation = "none";
  double gate_threshold = 0;               // 0 = the gate's default
  double instructions_gate_threshold = 0;  // 0 = the gate's default for instruction counts
  std::vector<std::pair<std::string, std::vector<std::string>>> axes;
  std::vector<ArmEntry> arms;
  std::vector<TargetEntry> targets;
  std::vector<LimitEntry> limits;
  std::vector<SecondaryMetric> secondary;
  std::vector<VerdictCheckEntry> verdict;  // empty = the default check (better, threshold 1)
  std::vector<BenchmarkEntry> benchmarks;
  // Absent from the listings of binaries built before figures were declared (`ab` runs old
  // builds): the run file then says nothing and the report falls back to its old rules.
  std::optional<FigureEntry> figure;
};

// A check as JSON (the catalogue's and the run file's `verdict` entries), and back; the reader
// throws JsonFieldError naming the field on a check that cannot be applied.
nlohmann::json verdict_check_to_json(const VerdictCheckEntry& c);
VerdictCheckEntry parse_verdict_check(const JsonField& j);
nlohmann::json figure_to_json(const FigureEntry& figure);

// Parses one binary's listing; throws std::runtime_error naming the binary and field on bad input.
std::vector<ExperimentEntry> parse_catalogue(const nlohmann::json& listing, const std::string& binary);

// Every bench_* executable in `dir` whose name has no dot, sorted by name (bench_X.layout<k> are
// bench_X's layout variants, not binaries of their own).
std::vector<std::string> find_bench_binaries(const std::string& dir);

// `binary` and its layout variants binary.layout1, .layout2, ... (up to the first one missing), as
// cmake/PairbenchHelpers.cmake builds them (PAIRBENCH_LAYOUT_VARIANTS).
std::vector<std::string> layout_variants_of(const std::string& binary);

// The directory of this pairbench executable, where the bench_* binaries are built beside it.
std::string default_bench_dir();
// Only the benchmarks whose names `regex` finds (ECMAScript, anywhere in the name, as Google
// Benchmark's --benchmark_filter; "" keeps all); experiments left without benchmarks are dropped.
std::vector<ExperimentEntry> keep_benchmarks_matching(std::vector<ExperimentEntry> experiments,
                                                      const std::string& regex);

// Asks each binary for its catalogue under `profile`; throws on a binary that fails to list.
std::vector<ExperimentEntry> load_catalogue(const std::vector<std::string>& binaries, const std::string& profile);

nlohmann::json catalogue_to_json(const std::vector<ExperimentEntry>& experiments);

// `pairbench list`'s table: each experiment, its arms and grid, and why what cannot run here
// cannot (the benchmarks' availability, so it is this machine's).
std::string catalogue_to_text(const std::vector<ExperimentEntry>& experiments, const std::string& profile);

// The experiment table (`pairbench list --format markdown`): experiment, claim, question, arms
// (baseline first), deciding metric, timing and the profile's grid, one row per experiment in
// catalogue order. Nothing in it depends on the machine (availability is not shown), so the
// README's copy stays the same wherever it is generated.
std::string catalogue_to_markdown(const std::vector<ExperimentEntry>& experiments, const std::string& profile);

// The marker lines around the generated table in docs/experiments.md.
inline constexpr const char* kTableBeginMarker = "<!-- pairbench list --format markdown -->";
inline constexpr const char* kTableEndMarker = "<!-- end pairbench list -->";

// `document` with the lines between the marker lines replaced by `section`; throws
// std::runtime_error "SOURCE: expected ..." when the markers are missing, repeated or out of order.
std::string replace_marked_section(const std::string& document, const std::string& section, const std::string& source);

}  // namespace pairbench::harness
