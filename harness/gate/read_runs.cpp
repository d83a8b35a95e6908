// What the gate reads from two run files: each benchmark's process values per instrument, the
// experiments' declarations, the benchmarks that broke, and whether a run was cut short.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "harness/gate/decide.h"
#include "harness/stats/stats.h"

namespace pairbench::harness::gate_detail {
namespace {

double checked_value(const nlohmann::json& v, const std::string& name, const char* field) {
  if (!v.is_number()) throw std::invalid_argument(name + ": " + field + " is not a number");
  const double x = v.get<double>();
  if (!std::isfinite(x) || x <= 0) {
    std::ostringstream m;
    m << name << ": " << field << " is " << v.dump() << ", must be finite and > 0";
    throw std::invalid_argument(m.str());
  }
  return x;
}

Experiments experiments_in(const nlohmann::json& doc) {
  Experiments out;
  for (const auto& e : doc.at("pairbench").at("experiments")) {
    out[e.at("name")] = {e.at("metric"),
                         e.at("unit"),
                         e.at("better"),
                         e.value("time_relation", "proportional"),
                         e.value("gate_threshold", 0.0),
                         e.value("instructions_gate_threshold", 0.0),
                         e.value("kind", "") == "limit"};
  }
  return out;
}

}  // namespace

Sides time_sides(const nlohmann::json& doc) {
  Sides out;
  for (const auto& b : doc.at("benchmarks")) {
    const std::string name = b.at("name").get<std::string>();
    Side& s = out[name];
    s.experiment = b.at("experiment").get<std::string>();
    std::vector<double> batches;
    if (b.contains("metric_batches")) {
      for (const auto& x : b["metric_batches"]) batches.push_back(checked_value(x, name, "metric_batches"));
    }
    const double overall = checked_value(b.at("metric_value"), name, "metric_value");
    // The process's value: the median of its in-process samples (robust to a burst inside the
    // process), else its overall metric.
    s.values.push_back(batches.size() >= 3 ? stats::median(batches) : overall);
    s.batches.push_back(std::move(batches));
    s.pairs.push_back(b.value("duet_pair", -1));
    if (b.contains("iterations") && b["iterations"].is_number_integer())
      s.iterations.insert(b["iterations"].get<std::int64_t>());
  }
  return out;
}

Sides instruction_sides(const nlohmann::json& doc) {
  Sides out;
  for (const auto& b : doc.at("pairbench").value("instructions", nlohmann::json::array())) {
    const std::string name = b.at("name").get<std::string>();
    Side& s = out[name];
    s.experiment = b.at("experiment").get<std::string>();
    s.values.push_back(checked_value(b.at("instructions_per_iteration"), name, "instructions_per_iteration"));
    if (const auto f = b.find("functions"); f != b.end() && f->is_object() && f->contains("top")) {
      ProcessFunctions p;
      const auto& top = f->at("top");
      for (const auto& e : top)
        p.per_iteration[e.at("function").get<std::string>()] += e.at("instructions_per_iteration").get<double>();
      const bool listed_all = f->value("functions_counted", -1) == static_cast<int>(top.size());
      double least = 0;
      for (const auto& e : top) {
        const double x = e.at("instructions_per_iteration").get<double>();
        least = least == 0 ? x : std::min(least, x);
      }
      p.floor = listed_all ? 0 : std::min(least, f->value("other_per_iteration", least));
      s.functions.push_back(std::move(p));
    }
  }
  return out;
}

Experiments experiments_of(const nlohmann::json& baseline, const nlohmann::json& current) {
  Experiments info = experiments_in(baseline);
  for (const auto& [name, e] : experiments_in(current)) info[name] = e;
  return info;
}

std::map<std::string, std::string> broken_in(const nlohmann::json& doc, Instrument instrument) {
  std::map<std::string, std::string> out;
  for (const auto& n : doc.at("pairbench").value("not_run", nlohmann::json::array())) {
    const std::string v = n.value("verification", "");
    if (instrument_from_string(n.value("instrument", "time")) != instrument) continue;
    if (v == "failed" || v == "incorrect") out[n.at("name")] = v + ": " + n.value("reason", "");
  }
  return out;
}

std::map<std::string, std::string> not_measured_in(const nlohmann::json& doc, Instrument instrument) {
  std::map<std::string, std::string> out;
  for (const auto& n : doc.at("pairbench").value("not_run", nlohmann::json::array())) {
    if (instrument_from_string(n.value("instrument", "time")) != instrument) continue;
    if (n.value("verification", "") == "not_supported") out[n.at("name")] = n.value("reason", "");
  }
  return out;
}

std::vector<std::string> partial_runs(const nlohmann::json& baseline, const nlohmann::json& current) {
  std::vector<std::string> out;
  for (const auto& [side, doc] : {std::pair{"baseline", &baseline}, std::pair{"current", &current}}) {
    const auto& pb = doc->at("pairbench");
    if (const auto it = pb.find("interrupted"); it != pb.end() && it->is_object()) {
      out.push_back(std::string(side) + " run interrupted by " + it->value("signal", "a signal") + " after " +
                    it->value("completed_processes", nlohmann::json()).dump() + " of " +
                    it->value("planned_processes", nlohmann::json()).dump() + " processes");
    }
  }
  return out;
}

bool same_ab_run(const nlohmann::json& baseline, const nlohmann::json& current) {
  const std::string run_a = baseline.at("pairbench").value("ab_run_id", ""),
                    run_b = current.at("pairbench").value("ab_run_id", "");
  return !run_a.empty() && run_a == run_b;
}

}  // namespace pairbench::harness::gate_detail
