// The gate's JSON read back (read_json.h): the fields print_json.cpp writes, checked.
#include "harness/gate/read_json.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "harness/store/file_checks.h"
#include "harness/store/json_field.h"

namespace pairbench::harness {
namespace {

constexpr std::uintmax_t kMaxGateJsonBytes = std::uintmax_t{1} << 30;  // a gate of 10,000 rows is ~10 MB

// A number the gate may have written as null (an unbounded interval): NaN.
double number_or_nan(const JsonField& row, const std::string& key) {
  const auto f = row.find(key);
  if (!f || f->json().is_null()) return std::numeric_limits<double>::quiet_NaN();
  return f->number();
}

GateRun run_of(const JsonField& doc, const std::string& key) {
  const auto f = doc.find(key);
  if (!f) return {};
  return {(*f)["run_id"].string(), (*f)["machine_key"].string(), (*f)["git_sha"].string(), (*f)["started_at"].string()};
}

// The gate JSON at `path`, parsed: a regular file of at most 1 GiB holding valid JSON.
nlohmann::json read_gate_document(const std::string& path) {
  if (const std::string problem = regular_file_problem(path); !problem.empty()) throw JsonFieldError(problem);
  std::error_code ec;
  if (std::filesystem::file_size(path, ec) > kMaxGateJsonBytes) {
    throw JsonFieldError(path + ": expected a gate JSON of at most 1 GiB, is larger");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw JsonFieldError(path + ": cannot open");
  std::ostringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  if (s.find_first_not_of(" \t\r\n") == std::string::npos)
    throw JsonFieldError(path + ": not valid JSON: the file is empty");
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(s);
  } catch (const nlohmann::json::parse_error& e) {
    throw JsonFieldError(path + ": not valid JSON at byte " + std::to_string(e.byte) +
                         (e.byte >= s.size() ? " (the text ends early: truncated?)" : ""));
  }
  return doc;
}

// One row of the gate's `benchmarks`, and whether the gate held it as a suspect.
BenchmarkVerdict read_gate_row(const JsonField& row, bool& suspect) {
  BenchmarkVerdict v;
  v.benchmark = row["name"].string();
  if (v.benchmark.empty()) row["name"].fail("a benchmark name");
  const auto verdict = verdict_from_string(row["verdict"].string());
  if (!verdict) row["verdict"].fail("one of the gate's verdicts (regression, improvement, unchanged, ...)");
  v.verdict = *verdict;
  if (const auto instrument = row.find("instrument")) {
    const auto i = instrument_from_string(instrument->string());
    if (!i) instrument->fail("time or instructions");
    v.instrument = *i;
  }
  if (v.verdict == Verdict::regression) {
    v.experiment = row.string_or("experiment", "");
    v.metric = row["metric"].string();
    v.unit = row["unit"].string();
    v.better = row["better"].string();
    if (v.better != "lower" && v.better != "higher") row["better"].fail("\"lower\" or \"higher\"");
    v.baseline_median = row["baseline_median"].number();
    v.current_median = row["current_median"].number();
    for (const char* key : {"baseline_median", "current_median"}) {
      if (!(row[key].number() > 0)) row[key].fail("a number > 0");
    }
    v.slowdown = row["slowdown"].number();
    v.slowdown_low = number_or_nan(row, "slowdown_low");
    v.slowdown_high = number_or_nan(row, "slowdown_high");
    v.threshold = row["threshold"].number();
    if (!(v.threshold > 0)) row["threshold"].fail("a threshold > 0");
  } else {
    // Any other row: its change and interval where written (NaN where not, or null).
    v.slowdown = number_or_nan(row, "slowdown");
    v.slowdown_low = number_or_nan(row, "slowdown_low");
    v.slowdown_high = number_or_nan(row, "slowdown_high");
  }
  v.note = row.string_or("note", "");
  if (v.experiment.empty()) v.experiment = row.string_or("experiment", "");
  v.p_value = number_or_nan(row, "p_value");
  v.p_adjusted = number_or_nan(row, "p_adjusted");
  for (const auto& [key, field] :
       {std::pair{"threshold", &v.threshold}, {"resolution", &v.resolution}, {"gated_at", &v.gated_at}}) {
    if (v.verdict == Verdict::regression && std::string(key) == "threshold") continue;  // read and checked above
    const auto f = row.find(key);
    if (f && !f->json().is_null()) *field = f->number();
  }
  if (const auto f = row.find("suspect")) suspect = f->boolean();
  if (const auto diff = row.find("function_diff")) {
    for (const JsonField& f : diff->elements()) {
      FunctionChange c;
      c.function = f["function"].string();
      c.baseline = f["baseline"].number();
      c.current = f["current"].number();
      c.baseline_bound = f.find("baseline_bound") ? f["baseline_bound"].boolean() : false;
      c.current_bound = f.find("current_bound") ? f["current_bound"].boolean() : false;
      v.functions.push_back(std::move(c));
    }
  }
  if (const auto total = row.find("function_diff_total_change"); total && !total->json().is_null()) {
    v.functions_total_change = total->number();
  }
  v.functions_note = row.string_or("function_diff_note", "");
  for (const auto& [key, field] :
       {std::pair{"baseline_samples", &v.baseline_samples}, {"current_samples", &v.current_samples}}) {
    const auto f = row.find(key);
    if (!f) continue;
    const std::int64_t n = f->integer();
    if (n < 0 || n > 1 << 30) f->fail("a process count from 0");
    *field = static_cast<int>(n);
  }
  return v;
}

}  // namespace

GateJson read_gate_json(const std::string& path) {
  const nlohmann::json doc = read_gate_document(path);
  const JsonField top(doc, path);
  if (doc.is_object() && !doc.contains("benchmarks") && doc.contains("machines")) {
    throw JsonFieldError(path +
                         ": benchmarks: missing (a `gate --commit` table has no rows: record each machine's "
                         "own gate JSON)");
  }
  GateJson out;
  out.baseline_run = run_of(top, "baseline_run");
  out.current_run = run_of(top, "current_run");
  out.headline = top.string_or("headline", "");
  if (const auto shift = top.find("run_shift"); shift && shift->json().is_object())
    out.run_shift = (*shift).string_or("text", "");
  for (const auto& [key, field] :
       {std::pair{"baseline_build", &out.baseline_build}, {"current_build", &out.current_build}}) {
    if (const auto f = top.find(key); f && !f->json().is_null()) *field = f->string();
  }
  if (const auto level = top.find("interval_level"); level && !level->json().is_null())
    out.interval_level = level->number();
  for (const JsonField& row : top["benchmarks"].elements()) {
    bool suspect = false;
    out.rows.push_back(read_gate_row(row, suspect));
    out.suspect.push_back(suspect);
  }
  return out;
}

}  // namespace pairbench::harness
