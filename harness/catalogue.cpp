// Loading and parsing the bench binaries' experiment catalogues.
#include "harness/catalogue.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <stdexcept>

#include "harness/process.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

namespace {
// A field that must be there, with the path to it in the error.
const nlohmann::json& field(const nlohmann::json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key)) throw std::runtime_error(where + ": missing field '" + key + "'");
  return j.at(key);
}
std::string str(const nlohmann::json& j, const char* key, const std::string& where) {
  const auto& v = field(j, key, where);
  if (!v.is_string()) throw std::runtime_error(where + ": field '" + key + "' is not a string");
  return v.get<std::string>();
}
}  // namespace

std::vector<ExperimentEntry> parse_catalogue(const nlohmann::json& listing, const std::string& binary) {
  std::vector<ExperimentEntry> out;
  const std::string where0 = binary + " --pairbench_list";
  if (field(listing, "schema_version", where0) != 1) {
    throw std::runtime_error(where0 + ": unsupported schema_version " + listing.at("schema_version").dump());
  }
  for (const auto& je : field(listing, "experiments", where0)) {
    ExperimentEntry e;
    e.binary = binary;
    e.name = str(je, "name", where0);
    const std::string where = where0 + ": experiment " + e.name;
    e.claim = str(je, "claim", where);
    e.question = str(je, "question", where);
    e.timing = str(je, "timing", where);
    e.kind = str(je, "kind", where);
    const auto& metric = field(je, "metric", where);
    e.metric = str(metric, "name", where + ".metric");
    e.unit = str(metric, "unit", where + ".metric");
    e.better = str(metric, "better", where + ".metric");
    e.time_relation = metric.value("time_relation", "none");
    if (e.time_relation != "proportional" && e.time_relation != "inverse" && e.time_relation != "none") {
      throw std::runtime_error(where + ".metric: time_relation '" + e.time_relation + "' is not proportional, inverse or none");
    }
    e.gate_threshold = je.value("gate_threshold", 0.0);
    e.instructions_gate_threshold = je.value("instructions_gate_threshold", 0.0);
    for (const auto& a : field(je, "axes", where)) {
      e.axes.emplace_back(str(a, "name", where + ".axes"), field(a, "values", where + ".axes").get<std::vector<std::string>>());
    }
    for (const auto& a : field(je, "arms", where)) {
      e.arms.push_back({str(a, "name", where + ".arms"), str(a, "role", where + ".arms"),
                        field(a, "env", where + ".arms").get<std::map<std::string, std::string>>()});
    }
    for (const auto& t : field(je, "targets", where)) {
      e.targets.push_back({str(t, "arm", where + ".targets"),
                           field(t, "where", where + ".targets").get<std::map<std::string, std::string>>(),
                           field(t, "bound", where + ".targets").get<double>(), str(t, "text", where + ".targets")});
    }
    if (je.contains("limits")) {
      for (const auto& l : je["limits"]) {
        const std::string at = where + ".limits";
        e.limits.push_back({str(l, "experiment", at), str(l, "arm", at),
                            field(l, "where", at).get<std::map<std::string, std::string>>(),
                            field(l, "arms", at).get<std::vector<std::string>>(),
                            field(l, "when", at).get<std::map<std::string, std::string>>(),
                            l.contains("counter") ? str(l, "counter", at) : std::string()});
      }
    }
    if (je.contains("secondary")) {
      for (const auto& m : je["secondary"]) {
        const std::string at = where + ".secondary";
        e.secondary.push_back({str(m, "name", at), str(m, "unit", at), str(m, "better", at)});
      }
    }
    for (const auto& b : field(je, "benchmarks", where)) {
      BenchmarkEntry be;
      be.name = str(b, "name", where + ".benchmarks");
      be.arm = str(b, "arm", where + ".benchmarks");
      for (const auto& [axis, values] : e.axes) {
        be.params.emplace_back(axis, str(field(b, "params", where + ".benchmarks"), axis.c_str(), be.name + ".params"));
      }
      be.available = field(b, "available", where + ".benchmarks").get<bool>();
      be.reason = str(b, "reason", where + ".benchmarks");
      be.instructions = b.value("instructions", false);
      e.benchmarks.push_back(std::move(be));
    }
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<std::string> find_bench_binaries(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string file = entry.path().filename().string();
    if (file.rfind("bench_", 0) == 0 && entry.is_regular_file() && access(entry.path().c_str(), X_OK) == 0) {
      out.push_back(fs::absolute(entry.path()).string());
    }
  }
  if (ec) throw std::runtime_error("bench directory " + dir + ": " + ec.message());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<ExperimentEntry> load_catalogue(const std::vector<std::string>& binaries,
                                            const std::string& profile) {
  std::vector<ExperimentEntry> all;
  for (const std::string& binary : binaries) {
    const ProcessResult r = run_process({binary, "--pairbench_list", "--pairbench_profile=" + profile}, {},
                                        std::chrono::seconds(60));
    if (r.status != ProcessResult::Status::kExited || r.exit_code != 0) {
      throw std::runtime_error(binary + " --pairbench_list: " + r.describe());
    }
    nlohmann::json listing;
    try {
      listing = nlohmann::json::parse(r.output);
    } catch (const nlohmann::json::exception& ex) {
      throw std::runtime_error(binary + " --pairbench_list: not JSON: " + ex.what());
    }
    for (auto& e : parse_catalogue(listing, binary)) all.push_back(std::move(e));
  }
  return all;
}

nlohmann::json catalogue_to_json(const std::vector<ExperimentEntry>& experiments) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& e : experiments) {
    nlohmann::json je = {{"name", e.name},   {"claim", e.claim},   {"question", e.question},
                         {"timing", e.timing}, {"kind", e.kind},
                         {"metric", {{"name", e.metric}, {"unit", e.unit}, {"better", e.better},
                                     {"time_relation", e.time_relation}}},
                         {"binary", fs::path(e.binary).filename().string()}};
    je["axes"] = nlohmann::json::array();
    for (const auto& [axis, values] : e.axes) je["axes"].push_back({{"name", axis}, {"values", values}});
    je["arms"] = nlohmann::json::array();
    for (const auto& a : e.arms) je["arms"].push_back({{"name", a.name}, {"role", a.role}, {"env", a.env}});
    je["benchmarks"] = nlohmann::json::array();
    for (const auto& b : e.benchmarks) {
      nlohmann::json params = nlohmann::json::object();
      for (const auto& [k, v] : b.params) params[k] = v;
      je["benchmarks"].push_back({{"name", b.name}, {"arm", b.arm}, {"params", params},
                                  {"available", b.available}, {"reason", b.reason},
                                  {"instructions", b.instructions}});
    }
    out.push_back(je);
  }
  return out;
}

}  // namespace pairbench::harness
