// Scheduling and running bench processes; collecting their Google Benchmark JSON.
#include "harness/runner.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>

#include "harness/process.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

namespace {

struct Job {
  const ExperimentEntry* experiment;
  const BenchmarkEntry* benchmark;
  int repetition;
  int side;
};

std::string verification_from_error(const std::string& message) {
  for (const char* status : {"not_supported", "incorrect", "failed"}) {
    if (message.rfind(std::string(status) + ":", 0) == 0) return status;
  }
  return "failed";
}

std::string strip_status(const std::string& message) {
  const auto colon = message.find(": ");
  return colon == std::string::npos ? message : message.substr(colon + 2);
}

std::string format_duration(double s) {
  char buf[32];
  const long total = static_cast<long>(s + 0.5);
  std::snprintf(buf, sizeof buf, "%ld:%02ld", total / 60, total % 60);
  return buf;
}

// The last non-empty line of a process's output: usually the reason it died.
std::string last_line(const std::string& output) {
  std::istringstream in(output);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return last.size() > 200 ? last.substr(0, 200) : last;
}

}  // namespace

Sample sample_from_gbench(const nlohmann::json& out, const ExperimentEntry& e, const BenchmarkEntry& b,
                          int repetition) {
  Sample s;
  s.benchmark = b.name;
  s.experiment = e.name;
  s.arm = b.arm;
  s.repetition = repetition;
  const nlohmann::json* run = nullptr;
  if (out.contains("benchmarks")) {
    for (const auto& entry : out["benchmarks"]) {
      if (entry.value("run_type", "iteration") == "iteration") run = &entry;
    }
  }
  if (!run) {
    s.verification = "failed";
    s.reason = "no result in the benchmark's JSON output";
    return s;
  }
  if (run->value("error_occurred", false)) {
    const std::string message = run->value("error_message", "");
    s.verification = verification_from_error(message);
    s.reason = strip_status(message);
    return s;
  }
  s.gbench = *run;
  if (!run->contains(e.metric) || !(*run)[e.metric].is_number()) {
    s.verification = "failed";
    s.reason = "benchmark did not report its metric '" + e.metric + "'";
    return s;
  }
  s.metric_value = (*run)[e.metric].get<double>();
  s.has_value = std::isfinite(s.metric_value) && s.metric_value > 0;
  if (!s.has_value) {
    s.verification = "failed";
    s.reason = "metric '" + e.metric + "' is not a positive number";
    return s;
  }
  s.verification = run->value("verified", 0.0) == 1.0 ? "passed" : "not_verified";
  return s;
}

RunOutcome run_experiments(const std::vector<ExperimentEntry>& experiments, const RunOptions& options) {
  return run_sides({Side{"", experiments, {}}}, options);
}

RunOutcome run_sides(const std::vector<Side>& sides, const RunOptions& options) {
  using Clock = std::chrono::steady_clock;
  RunOutcome outcome;
  outcome.seed = options.seed ? options.seed
                              : static_cast<std::uint64_t>(Clock::now().time_since_epoch().count()) ^ getpid();
  std::mt19937_64 rng(outcome.seed);

  // Arms that cannot run here are recorded once and never launched.
  std::vector<Job> runnable;
  for (std::size_t side = 0; side < sides.size(); ++side) {
    for (const auto& e : sides[side].experiments) {
      for (const auto& b : e.benchmarks) {
        if (b.available) {
          runnable.push_back({&e, &b, 0, static_cast<int>(side)});
        } else {
          Sample s;
          s.benchmark = b.name;
          s.experiment = e.name;
          s.arm = b.arm;
          s.verification = "not_supported";
          s.reason = b.reason;
          s.side = static_cast<int>(side);
          outcome.samples.push_back(s);
        }
      }
    }
  }
  // Blocked randomisation: each round runs every benchmark once, in a fresh random order, so that
  // drift over the run spreads evenly over the arms instead of favouring whichever ran first.
  std::vector<Job> jobs;
  for (int r = 0; r < options.repetitions; ++r) {
    std::vector<Job> round = runnable;
    std::shuffle(round.begin(), round.end(), rng);
    for (Job& j : round) j.repetition = r;
    jobs.insert(jobs.end(), round.begin(), round.end());
  }

  char tmpl[] = "/tmp/pairbench-run-XXXXXX";
  const char* tmp_dir = mkdtemp(tmpl);
  if (!tmp_dir) throw std::runtime_error("cannot create a temporary directory under /tmp");
  const auto start = Clock::now();
  char min_time[32];
  std::snprintf(min_time, sizeof min_time, "%g", options.min_time_s);  // 1.7.1 takes "0.05", not "0.05s"

  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const Job& job = jobs[i];
    const std::string out_path = std::string(tmp_dir) + "/sample-" + std::to_string(i) + ".json";
    std::map<std::string, std::string> env = sides[job.side].extra_env;
    for (const auto& arm : job.experiment->arms) {
      if (arm.name == job.benchmark->arm) {
        for (const auto& [k, v] : arm.env) env[k] = v;
      }
    }
    const ProcessResult pr = run_process(
        {job.experiment->binary, "--pairbench_profile=" + options.profile, "--pairbench_only=" + job.benchmark->name,
         "--benchmark_out=" + out_path, "--benchmark_out_format=json", std::string("--benchmark_min_time=") + min_time,
         "--benchmark_repetitions=1"},
        env, std::chrono::duration<double>(options.timeout_s));

    Sample s;
    nlohmann::json parsed;
    bool have_json = false;
    if (std::ifstream in(out_path); in) {
      try {
        parsed = nlohmann::json::parse(in);
        have_json = true;
      } catch (const nlohmann::json::exception&) {
      }
    }
    fs::remove(out_path);
    if (pr.status == ProcessResult::Status::kExited && have_json) {
      s = sample_from_gbench(parsed, *job.experiment, *job.benchmark, job.repetition);
    } else {
      s.benchmark = job.benchmark->name;
      s.experiment = job.experiment->name;
      s.arm = job.benchmark->arm;
      s.repetition = job.repetition;
      s.verification = "failed";
      s.reason = pr.describe();
      if (const std::string tail = last_line(pr.output); !tail.empty() && pr.status != ProcessResult::Status::kTimedOut) {
        s.reason += ": " + tail;
      }
    }
    s.process_wall_s = pr.wall_s;
    s.side = job.side;
    const bool bad = s.verification == "failed" || s.verification == "incorrect";
    if (bad) ++outcome.failed_processes;

    const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    const double eta = elapsed / static_cast<double>(i + 1) * static_cast<double>(jobs.size() - i - 1);
    char head[64];
    std::snprintf(head, sizeof head, "[%zu/%zu]", i + 1, jobs.size());
    std::string what = s.has_value && !bad ? s.verification : s.verification + ": " + s.reason;
    if (sides.size() > 1) what = sides[job.side].name + " " + what;
    if (options.progress_tty) {
      if (bad) std::cerr << "\r\033[K" << job.benchmark->name << " rep " << job.repetition << ": " << what << "\n";
      std::string line = std::string(head) + " " + job.benchmark->name;
      if (line.size() > 90) line = line.substr(0, 87) + "...";
      std::cerr << "\r\033[K" << line << "  ETA " << format_duration(eta) << std::flush;
    } else {
      std::cerr << head << " " << job.benchmark->name << " rep " << job.repetition << ": " << what << " ("
                << std::fixed;
      std::cerr.precision(2);
      std::cerr << pr.wall_s << " s) ETA " << format_duration(eta) << "\n";
      std::cerr.unsetf(std::ios::fixed);
    }
    outcome.samples.push_back(std::move(s));
  }
  if (options.progress_tty) std::cerr << "\r\033[K";
  fs::remove_all(tmp_dir);
  outcome.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return outcome;
}

}  // namespace pairbench::harness
