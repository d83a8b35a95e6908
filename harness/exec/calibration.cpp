// The iteration-count policy and the per-machine calibration cache.
#include "harness/exec/calibration.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "harness/store/file_checks.h"
#include "harness/store/json_field.h"
#include "harness/store/run_file.h"

namespace pairbench::harness {

std::int64_t planned_iterations(const Calibration& c, const SamplingPlan& plan) {
  const double per_iteration = std::max(c.measured_s_per_iteration, 1e-12);
  // An iteration longer than a batch makes fewer, longer batches (the bench forms min(batches, N)):
  // repeating a 0.3 s iteration five times would buy five in-process samples at 1.5 s a process.
  double n = std::ceil(plan.batches * plan.sample_time_s / per_iteration);
  if (c.wall_s_per_iteration > 0) n = std::min(n, std::floor(plan.max_loop_wall_s / c.wall_s_per_iteration));
  return static_cast<std::int64_t>(std::clamp(n, 1.0, 1e12));
}

std::int64_t instruction_iterations(const Calibration& c, std::int64_t time_iterations) {
  const double per_iteration = std::max(c.measured_s_per_iteration, 1e-12);
  // At least 2: the first region is a warm-up the count leaves out.
  const auto n = static_cast<std::int64_t>(std::clamp(std::ceil(2e-3 / per_iteration), 1.0, 1e12));
  return std::max<std::int64_t>(2, std::min(n, time_iterations) + 1);
}

bool calibration_drifted(const Calibration& c, double observed) {
  if (!(observed > 0) || !(c.measured_s_per_iteration > 0)) return false;
  const double ratio = observed / c.measured_s_per_iteration;
  return ratio > 3 || ratio < 1.0 / 3;
}

bool wildly_off(double a, double b) {
  if (!(a > 0) || !(b > 0)) return false;
  return a / b > kWildlyOffRatio || b / a > kWildlyOffRatio;
}

CalibrationCache::CalibrationCache(std::string path) : path_(std::move(path)) {
  if (path_.empty()) return;
  const std::string why = non_regular_reason(path_);
  if (why == "does not exist") return;
  if (!why.empty()) {
    // Never opened: reading a FIFO would block the run.
    load_problem_ = path_ + ": " + why + ", not a calibration cache; ignored, calibrating again";
    return;
  }
  try {
    std::ifstream in(path_);
    std::stringstream text;
    text << in.rdbuf();
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(text.str());
    } catch (const nlohmann::json::parse_error& e) {
      throw std::runtime_error(path_ + ": not valid JSON at byte " + std::to_string(e.byte));
    }
    const JsonField root(doc, path_);
    const JsonField version = root["schema_version"];
    if (version.integer() != 1) version.fail("1 (the cache version this pairbench writes)");
    for (const auto& [name, e] : root["benchmarks"].members()) {
      Calibration c{e["measured_s_per_iteration"].number(), e["wall_s_per_iteration"].number(),
                    e.string_or("calibrated_at", "")};
      if (c.measured_s_per_iteration > 0 && c.wall_s_per_iteration >= 0) entries_[name] = c;
    }
    if (const auto failed = root.find("uncalibratable")) {
      for (const auto& [name, e] : failed->members()) {
        failures_[name] = {e["reason"].string(), e.string_or("at", "")};
      }
    }
  } catch (const std::exception& e) {
    // Errors name the file and the field (JsonField); a bad cache only costs a calibration.
    entries_.clear();
    failures_.clear();
    load_problem_ = std::string(e.what()) + "; ignored, calibrating again";
  }
}

const Calibration* CalibrationCache::find(const std::string& benchmark) const {
  const auto it = entries_.find(benchmark);
  return it == entries_.end() ? nullptr : &it->second;
}

void CalibrationCache::put(const std::string& benchmark, const Calibration& c) {
  entries_[benchmark] = c;
  failures_.erase(benchmark);
}

void CalibrationCache::forget(const std::string& benchmark) { entries_.erase(benchmark); }

const CalibrationCache::Failure* CalibrationCache::failure(const std::string& benchmark) const {
  const auto it = failures_.find(benchmark);
  return it == failures_.end() ? nullptr : &it->second;
}

void CalibrationCache::put_failure(const std::string& benchmark, const std::string& reason) {
  entries_.erase(benchmark);
  failures_[benchmark] = {reason, utc_stamp("%Y-%m-%dT%H:%M:%SZ")};
}

std::string CalibrationCache::save() const {
  if (path_.empty()) return "";
  nlohmann::json doc = {{"schema_version", 1}, {"benchmarks", nlohmann::json::object()}};
  for (const auto& [name, c] : entries_) {
    doc["benchmarks"][name] = {{"measured_s_per_iteration", c.measured_s_per_iteration},
                               {"wall_s_per_iteration", c.wall_s_per_iteration},
                               {"calibrated_at", c.calibrated_at}};
  }
  if (!failures_.empty()) {
    doc["uncalibratable"] = nlohmann::json::object();
    for (const auto& [name, f] : failures_) doc["uncalibratable"][name] = {{"reason", f.reason}, {"at", f.at}};
  }
  try {
    std::error_code ec;
    const auto parent = std::filesystem::path(path_).parent_path();
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    write_json_atomically(path_, doc);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace pairbench::harness
