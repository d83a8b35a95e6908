// The pairbench subcommands, one function each; main.cpp only parses the command line.
// Each returns the process exit status and throws UsageError for bad input (exit 2).
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/catalogue.h"
#include "harness/environment.h"
#include "harness/gate.h"
#include "harness/runner.h"

namespace pairbench::harness {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRegression = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitBenchmarkFailed = 3;
inline constexpr int kExitUndecided = kGateExitUndecided;  // 4: the gate could not decide (--undecided fail)

// Bad input or usage: printed as one line, exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string default_bench_dir();
std::string utc_stamp(const char* format);
std::vector<std::string> split_csv(const std::string& s);
std::vector<ExperimentEntry> select_experiments(std::vector<ExperimentEntry> all, const std::string& experiments,
                                                const std::string& arms);

// Profile defaults (processes per benchmark, in-process samples and their length, instruction
// processes, time limit), then overrides.
struct RunArgs {
  std::string profile = "quick", experiments, arms, out, bench_dir;
  std::string history = "results/history.sqlite";  // "" = do not record
  int repetitions = 0, batches = 0, instruction_processes = -1;
  double min_time_s = 0, timeout_s = 0;  // min_time_s: measured seconds per process
  std::uint64_t seed = 0;
  std::string instruction_counter;  // perf | callgrind | none | "" = detect
  std::string calibration = "auto";  // the iteration cache: auto = results/calibration/<machine_key>.json
  bool recalibrate = false;
  std::string pairing = "duet";      // for two sides (ab): duet | sequential
};
// `machine_key` names the calibration cache when args.calibration is "auto".
RunOptions run_options(const RunArgs& args, const std::string& machine_key = "");

// A run file from the samples of one side of a run.
nlohmann::json build_run_doc(const std::vector<ExperimentEntry>& experiments, const std::vector<Sample>& samples,
                             const RunOptions& options, const RunOutcome& outcome, const Environment& env,
                             const std::string& started, const std::string& command, int side = 0);
// Appends a run file to the history database, if `history_path` is not empty; a failure warns.
void record_history(const std::string& history_path, const nlohmann::json& doc, const std::string& run_file);

int cmd_list(const std::string& bench_dir, const std::string& profile, const std::string& format);
int cmd_env(const std::string& format);
int cmd_run(const RunArgs& args, const std::string& command_line);

struct GateArgs {
  GateOptions options;
  std::string markdown, junit, json;  // extra outputs, written atomically where given
};
int cmd_compare(const std::string& baseline, const std::string& current, const GateArgs& args);
// --baseline "" picks results/baselines/<machine_key>.json; --current "" picks the newest run file.
int cmd_gate(const std::string& baseline, const std::string& current, const std::string& results_dir,
             const GateArgs& args);
int cmd_baseline_update(const std::string& run, const std::string& results_dir, const std::string& history);
int cmd_history(const std::string& benchmark, const std::string& db, const std::string& machine, int last_runs,
                const std::string& format);

struct AbArgs {
  std::string baseline_build, candidate_build, experiments, arms, profile = "quick", out_dir;
  int repetitions = 0;
  double min_time_s = 0, timeout_s = 0;
  std::uint64_t seed = 0;
  GateArgs gate;
};
int cmd_ab(const AbArgs& args, const std::string& command_line);

struct SelftestArgs {
  std::string experiments, arms, profile = "quick", out;
  int trials = 4, repetitions = 0;
  double slowdown_pct = 5, min_time_s = 0, max_noise = 0.015;
  GateArgs gate;
};
int cmd_selftest(const SelftestArgs& args, const std::string& bench_dir);

int cmd_report(const std::string& run, const std::string& history, const std::string& out_dir);

}  // namespace pairbench::harness
