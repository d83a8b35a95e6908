// Where a regression's instructions went: the per-function diff of self instructions per
// iteration between the two runs' callgrind breakdowns, attached to every regression and
// improvement row, or why there is none.
#include <algorithm>
#include <cmath>
#include <set>

#include "harness/gate/decide.h"
#include "harness/stats/stats.h"

namespace pairbench::harness {
namespace {

using gate_detail::ProcessFunctions;
using gate_detail::Side;
using gate_detail::Sides;

// A side's value of one function: the median over its processes, a process that did not list it
// giving its bound (0 where it listed every function it had); `bound` when such a bound is above 0.
std::pair<double, bool> side_value(const std::vector<ProcessFunctions>& processes, const std::string& function) {
  std::vector<double> values;
  bool bound = false;
  for (const ProcessFunctions& p : processes) {
    const auto it = p.per_iteration.find(function);
    bound = bound || (it == p.per_iteration.end() && p.floor > 0);
    values.push_back(it == p.per_iteration.end() ? p.floor : it->second);
  }
  return {stats::median(values), bound};
}

// The functions that moved most in the direction of `sign` (+1: added instructions), largest first.
std::vector<FunctionChange> function_diff(const Side& base, const Side& cur, int sign) {
  std::set<std::string> names;
  for (const auto* side : {&base, &cur}) {
    for (const ProcessFunctions& p : side->functions) {
      for (const auto& [name, value] : p.per_iteration) names.insert(name);
    }
  }
  std::vector<FunctionChange> out;
  for (const std::string& name : names) {
    FunctionChange f{name};
    std::tie(f.baseline, f.baseline_bound) = side_value(base.functions, name);
    std::tie(f.current, f.current_bound) = side_value(cur.functions, name);
    if (sign * f.change() > 0) out.push_back(f);
  }
  std::sort(out.begin(), out.end(), [&](const FunctionChange& a, const FunctionChange& b) {
    return sign * a.change() != sign * b.change() ? sign * a.change() > sign * b.change() : a.function < b.function;
  });
  if (out.size() > static_cast<std::size_t>(kFunctionDiffRows)) out.resize(kFunctionDiffRows);
  return out;
}

// Why one run has no function breakdown of `benchmark`'s instructions.
std::string missing_breakdown(const nlohmann::json& doc, const std::string& benchmark, bool counted) {
  const nlohmann::json& pb = doc.at("pairbench");
  const nlohmann::json sampling = pb.value("sampling", nlohmann::json::object());
  const std::string counter = sampling.value("instruction_counter", "");
  if (counted) {
    if (counter == "perf")
      return "counted with perf: a hardware counter gives the total only, no per-function breakdown";
    return "its counts carry no per-function totals (a run file from before them)";
  }
  for (const auto& n : pb.value("not_run", nlohmann::json::array())) {
    if (n.value("name", "") == benchmark && n.value("instrument", "") == "instructions") {
      return "no instruction count: " + n.value("verification", "") + ": " + n.value("reason", "");
    }
  }
  if (counter.empty() || counter == "none" || sampling.value("instruction_processes", 0) == 0) {
    const std::string note = sampling.value("instruction_counter_note", "");
    return "no instruction counts in that run" + (note.empty() ? std::string() : ": " + note);
  }
  return "no instruction counts: its experiment declares them not meaningful (time only)";
}

bool changed(Verdict v) { return v == Verdict::regression || v == Verdict::improvement; }

}  // namespace

void attach_function_diffs(GateReport& report, const nlohmann::json& baseline, const nlohmann::json& current) {
  const Sides base = gate_detail::instruction_sides(baseline), cur = gate_detail::instruction_sides(current);
  std::set<std::string> instruction_rows_with_diff;
  for (BenchmarkVerdict& v : report.rows) {
    v.functions.clear();
    v.functions_note.clear();
    v.functions_total_change = 0;
  }
  // Instruction rows first: a time row whose instruction row carries the diff points to it.
  for (const Instrument instrument : {Instrument::instructions, Instrument::time}) {
    for (BenchmarkVerdict& v : report.rows) {
      if (v.instrument != instrument || !changed(v.verdict)) continue;
      if (instrument == Instrument::time && instruction_rows_with_diff.count(v.benchmark)) {
        v.functions_note = "function diff: under its [instructions] row";
        continue;
      }
      const auto b = base.find(v.benchmark), c = cur.find(v.benchmark);
      const bool b_counted = b != base.end(), c_counted = c != cur.end();
      const bool b_functions = b_counted && !b->second.functions.empty();
      const bool c_functions = c_counted && !c->second.functions.empty();
      if (!b_functions || !c_functions) {
        v.functions_note =
            "no function diff: " + (c_functions ? "the baseline: " + missing_breakdown(baseline, v.benchmark, b_counted)
                                                : missing_breakdown(current, v.benchmark, c_counted));
        continue;
      }
      const int sign = v.verdict == Verdict::regression ? 1 : -1;
      v.functions = function_diff(b->second, c->second, sign);
      v.functions_total_change = stats::median(c->second.values) - stats::median(b->second.values);
      if (v.functions.empty()) {
        v.functions_note = std::string("no function's instructions per iteration ") + (sign > 0 ? "rose" : "fell");
      } else if (instrument == Instrument::instructions) {
        instruction_rows_with_diff.insert(v.benchmark);
      }
    }
  }
}

}  // namespace pairbench::harness
