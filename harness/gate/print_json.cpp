// The gate as JSON (`--json`): the report's every field, names as the outputs spell them.
#include <cmath>

#include "harness/gate/print.h"

namespace pairbench::harness {

namespace {

nlohmann::json run_json(const GateRun& run) {
  return {{"run_id", run.run_id},
          {"machine_key", run.machine_key},
          {"git_sha", run.git_sha},
          {"started_at", run.started_at}};
}

}  // namespace

nlohmann::json gate_json(const GateReport& r) {
  // JSON has no infinity or NaN: an unbounded interval or an undefined t is written as null.
  auto num = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); };
  nlohmann::json j = {
      {"headline", r.headline()},
      {"outcome", to_string(r.outcome())},
      {"exit_status", r.exit_status()},
      {"baseline", r.baseline_label},
      {"current", r.current_label},
      {"baseline_build", r.baseline_build},
      {"current_build", r.current_build},
      {"baseline_run", run_json(r.baseline_run)},
      {"current_run", run_json(r.current_run)},
      {"failed", r.failed()},
      {"forced", r.forced},
      {"fingerprint_differences", r.fingerprint_differences},
      {"partial_runs", r.partial_runs},
      {"run_shift",
       {{"moved", r.run_shift.moved},
        {"rows", r.run_shift.rows},
        {"with_median", r.run_shift.with_median},
        {"median", r.run_shift.median},
        {"limit_rows", r.run_shift.limit_rows},
        {"limit_median", r.run_shift.limit_median},
        {"held", r.run_shift.held},
        {"text", r.run_shift.text()}}},
      {"threshold", r.options.threshold},
      {"instructions_threshold", r.options.instructions_threshold},
      {"alpha", r.options.alpha},
      {"correction", to_string(r.options.correction)},
      {"interval_level", r.options.interval_level},
      {"undecided_policy", to_string(r.options.undecided)},
      {"run_variance_source", r.options.run_variance_source},
      {"resolution_policy", r.options.resolution},
      {"pooled_run_variance", num(r.pooled_run_variance)},
      {"pooled_run_benchmarks", r.pooled_run_benchmarks},
      {"noise_prior", {{"benchmarks", r.prior.count}, {"df", num(r.prior.df)}, {"variance", r.prior.variance}}},
      {"benchmarks", nlohmann::json::array()}};
  for (const auto& v : r.rows) {
    j["benchmarks"].push_back({{"name", v.benchmark},
                               {"instrument", to_string(v.instrument)},
                               {"experiment", v.experiment},
                               {"verdict", to_string(v.verdict)},
                               {"note", v.note},
                               {"metric", v.metric},
                               {"unit", v.unit},
                               {"better", v.better},
                               {"baseline_samples", v.baseline_samples},
                               {"current_samples", v.current_samples},
                               {"baseline_median", v.baseline_median},
                               {"current_median", v.current_median},
                               {"slowdown", num(v.slowdown)},
                               {"slowdown_low", num(v.slowdown_low)},
                               {"slowdown_high", num(v.slowdown_high)},
                               {"t", num(v.t)},
                               {"df", num(v.df)},
                               {"se", num(v.se)},
                               {"p_value", v.p_value},
                               {"p_adjusted", v.p_adjusted},
                               {"noise_cv", v.noise_cv},
                               {"inprocess_cv", v.inprocess_cv},
                               {"threshold", v.threshold},
                               {"paired", v.paired},
                               {"processes_needed", v.processes_needed},
                               {"run_noise", num(v.run_noise)},
                               {"run_noise_pooled", v.run_noise_pooled},
                               {"resolution", v.resolution},
                               {"gated_at", v.gated_at},
                               {"suspect", is_suspect(v)}});
    // Regressions and improvements: the functions that added (removed) the most instructions per
    // iteration, else why there is no such diff.
    auto& row = j["benchmarks"].back();
    row["function_diff"] = function_diff_json(v.functions);
    row["function_diff_total_change"] = v.functions_total_change;
    row["function_diff_note"] = v.functions_note;
  }
  return j;
}

nlohmann::json function_diff_json(const std::vector<FunctionChange>& functions) {
  nlohmann::json out = nlohmann::json::array();
  for (const FunctionChange& f : functions) {
    out.push_back({{"function", f.function},
                   {"baseline", f.baseline},
                   {"current", f.current},
                   {"change", f.change()},
                   {"baseline_bound", f.baseline_bound},
                   {"current_bound", f.current_bound}});
  }
  return out;
}

}  // namespace pairbench::harness
