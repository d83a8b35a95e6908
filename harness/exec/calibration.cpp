// The iteration-count policy, the process-budget rule and the per-machine calibration cache.
#include "harness/exec/calibration.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <ctime>
#include <fstream>
#include <limits>
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

double run_spread(const std::vector<double>& per_run) {
  if (per_run.size() < 3) return 0;
  const double median = running_median(per_run);
  return median > 0 ? *std::max_element(per_run.begin(), per_run.end()) / median : 0;
}

double running_median(const std::vector<double>& per_run) {
  if (per_run.empty()) return 0;
  std::vector<double> v = per_run;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double projected_process_wall_s(const ProcessWalls* walls, const Calibration* c, std::int64_t iterations) {
  if (!walls || walls->overhead_s.empty()) return 0;
  double per_iteration = running_median(walls->loop_s_per_iteration);
  if (!(per_iteration > 0) && c) per_iteration = c->wall_s_per_iteration;
  return running_median(walls->overhead_s) + static_cast<double>(std::max<std::int64_t>(iterations, 0)) * per_iteration;
}

double projected_instruction_wall_s(const ProcessWalls* walls, const std::string& counter) {
  if (!walls) return 0;
  const auto it = walls->instruction_process_s.find(counter);
  return it == walls->instruction_process_s.end() ? 0 : running_median(it->second);
}

int budgeted_processes(double budget_s, double process_wall_s, int minimum, int maximum) {
  if (!(budget_s > 0) || !(process_wall_s > 0)) return maximum;
  const double fit = std::floor(budget_s / process_wall_s);
  return static_cast<int>(
      std::clamp(fit, static_cast<double>(std::min(minimum, maximum)), static_cast<double>(maximum)));
}

bool calibration_drifted(const Calibration& c, double observed) {
  if (!(observed > 0) || !(c.measured_s_per_iteration > 0)) return false;
  const double ratio = observed / c.measured_s_per_iteration;
  return ratio > 3 || ratio < 1.0 / 3;
}

bool ramp_may_hide_stall(double early_wall_s, double early_cpu_s) {
  if (!(early_wall_s > 0) || !(early_cpu_s > 0)) return true;
  return early_cpu_s < kOnCpuShare * early_wall_s;
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
      if (const auto work = e.find("work_per_iteration"); work && work->json().is_object())
        c.work = work->json().dump();
      if (c.measured_s_per_iteration > 0 && c.wall_s_per_iteration >= 0) entries_[name] = c;
    }
    if (const auto failed = root.find("uncalibratable")) {
      for (const auto& [name, e] : failed->members()) {
        failures_[name] = {e["reason"].string(), e.string_or("at", "")};
      }
    }
    // Absent in caches written before process walls were learnt.
    if (const auto walls = root.find("process_walls")) {
      const auto seconds = [](const JsonField& list) {
        std::vector<double> out;
        for (const JsonField& v : list.elements()) {
          if (v.number() >= 0) out.push_back(v.number());
        }
        if (out.size() > kWallRuns) out.erase(out.begin(), out.end() - static_cast<std::ptrdiff_t>(kWallRuns));
        return out;
      };
      for (const auto& [name, e] : walls->members()) {
        ProcessWalls w;
        if (const auto f = e.find("overhead_s")) w.overhead_s = seconds(*f);
        if (const auto f = e.find("loop_s_per_iteration")) w.loop_s_per_iteration = seconds(*f);
        if (const auto f = e.find("run_s_per_iteration")) w.run_s_per_iteration = seconds(*f);
        if (const auto f = e.find("duet_probe")) {
          w.duet_probe = ProcessWalls::DuetProbe{(*f)["apart"].boolean(), f->string_or("why", ""), (*f)["at"].string()};
        }
        if (const auto f = e.find("instruction_process_s")) {
          for (const auto& [counter, list] : f->members()) w.instruction_process_s[counter] = seconds(list);
        }
        walls_[name] = std::move(w);
      }
    }
  } catch (const std::exception& e) {
    // Errors name the file and the field (JsonField); a bad cache only costs a calibration.
    entries_.clear();
    failures_.clear();
    walls_.clear();
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

void CalibrationCache::forget_walls(const std::string& benchmark) { walls_.erase(benchmark); }

const CalibrationCache::Failure* CalibrationCache::failure(const std::string& benchmark) const {
  const auto it = failures_.find(benchmark);
  return it == failures_.end() ? nullptr : &it->second;
}

void CalibrationCache::put_failure(const std::string& benchmark, const std::string& reason) {
  entries_.erase(benchmark);
  failures_[benchmark] = {reason, utc_stamp("%Y-%m-%dT%H:%M:%SZ")};
}

const ProcessWalls* CalibrationCache::walls(const std::string& benchmark) const {
  const auto it = walls_.find(benchmark);
  return it == walls_.end() ? nullptr : &it->second;
}

double age_days(const std::string& utc, std::time_t now) {
  std::tm tm{};
  const char* end = strptime(utc.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (end == nullptr || *end != '\0') return std::numeric_limits<double>::infinity();
  return std::difftime(now, timegm(&tm)) / 86400.0;
}

namespace {
void push_run(std::vector<double>& per_run, double value) {
  per_run.push_back(value);
  if (per_run.size() > kWallRuns) per_run.erase(per_run.begin());
}
}  // namespace

void CalibrationCache::record_time_walls(const std::string& benchmark, double overhead_s, double loop_s_per_iteration) {
  ProcessWalls& w = walls_[benchmark];
  push_run(w.overhead_s, std::max(overhead_s, 0.0));
  push_run(w.loop_s_per_iteration, std::max(loop_s_per_iteration, 0.0));
}

void CalibrationCache::record_run_per_iteration(const std::string& benchmark, double s_per_iteration) {
  if (s_per_iteration > 0) push_run(walls_[benchmark].run_s_per_iteration, s_per_iteration);
}

void CalibrationCache::record_duet_probe(const std::string& benchmark, bool apart, const std::string& why) {
  walls_[benchmark].duet_probe = ProcessWalls::DuetProbe{apart, why, utc_stamp("%Y-%m-%dT%H:%M:%SZ")};
}

void CalibrationCache::record_instruction_wall(const std::string& benchmark, const std::string& counter,
                                               double wall_s) {
  push_run(walls_[benchmark].instruction_process_s[counter], std::max(wall_s, 0.0));
}

std::string CalibrationCache::save() const {
  if (path_.empty()) return "";
  nlohmann::json doc = {{"schema_version", 1}, {"benchmarks", nlohmann::json::object()}};
  for (const auto& [name, c] : entries_) {
    doc["benchmarks"][name] = {{"measured_s_per_iteration", c.measured_s_per_iteration},
                               {"wall_s_per_iteration", c.wall_s_per_iteration},
                               {"calibrated_at", c.calibrated_at}};
    if (!c.work.empty()) doc["benchmarks"][name]["work_per_iteration"] = nlohmann::json::parse(c.work);
  }
  if (!failures_.empty()) {
    doc["uncalibratable"] = nlohmann::json::object();
    for (const auto& [name, f] : failures_) doc["uncalibratable"][name] = {{"reason", f.reason}, {"at", f.at}};
  }
  if (!walls_.empty()) {
    doc["process_walls"] = nlohmann::json::object();
    for (const auto& [name, w] : walls_) {
      nlohmann::json e = {{"overhead_s", w.overhead_s}, {"loop_s_per_iteration", w.loop_s_per_iteration}};
      if (!w.instruction_process_s.empty()) e["instruction_process_s"] = w.instruction_process_s;
      if (!w.run_s_per_iteration.empty()) e["run_s_per_iteration"] = w.run_s_per_iteration;
      if (w.duet_probe)
        e["duet_probe"] = {{"apart", w.duet_probe->apart}, {"why", w.duet_probe->why}, {"at", w.duet_probe->at}};
      doc["process_walls"][name] = e;
    }
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
