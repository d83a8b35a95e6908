// The pairbench subcommands, one function each; main.cpp only parses the command line.
// Each returns the process exit status and throws UsageError for bad input (exit 2).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/exec/catalogue.h"
#include "harness/exec/environment.h"
#include "harness/gate/gate.h"
#include "harness/analysis/change_points.h"
#include "harness/store/history.h"
#include "harness/store/run_file.h"
#include "harness/exec/runner.h"

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
// Appends a run to the history database (once: a run already there by its pairbench.run_id is
// not stored again), retrying with backoff while another writer holds the lock, for up to
// PAIRBENCH_HISTORY_RETRY_S seconds (default 120) or until SIGINT/SIGTERM. Returns what the run
// file records as `pairbench.history_write`: {"db", "status": stored | already_stored | failed,
// "history_run_id" or "error", "attempts"}.
nlohmann::json record_history(const std::string& history_path, const nlohmann::json& doc, const std::string& run_file);
// PAIRBENCH_HISTORY_RETRY_S in seconds (default 120); throws UsageError when it is not a number of seconds.
double history_retry_s();

// `format` table | json | markdown | claims-markdown (docs/claims.md) | claims-json (the claims
// catalogue compiled in, harness/analysis/claims.json, as the report reads it). With markdown,
// `update_file` rewrites that file's table between the marker lines (catalogue.h) and
// `check_file` compares it: exit 1 when it is stale, naming the command that refreshes it.
int cmd_list(const std::string& bench_dir, const std::string& profile, const std::string& format,
             const std::string& update_file = "", const std::string& check_file = "");
int cmd_env(const std::string& format);
int cmd_run(const RunArgs& args, const std::string& command_line);

struct GateArgs {
  GateOptions options;
  std::string markdown, junit, json;  // extra outputs, written atomically where given
  // History database for each benchmark's run-to-run noise: "auto" = results/history.sqlite
  // where it exists (gate), "" = none (compare's default), else a path.
  std::string history;
};
// Refuses (UsageError) --markdown/--junit/--json paths that are directories, FIFOs or devices,
// before anything is read or measured.
void check_gate_outputs(const GateArgs& args);
int cmd_compare(const std::string& baseline, const std::string& current, const GateArgs& args);
// --baseline "" picks results/baselines/<machine_key>.json; --current "" picks the newest run file.
int cmd_gate(const std::string& baseline, const std::string& current, const std::string& results_dir,
             const GateArgs& args);
// `gate --commit SHA`: every machine's latest run of that commit in the history against that
// machine's baseline there; one table (machine x verdict counts). Machines without a run of the
// commit or without a baseline are named. Exit status the worst: 1 regression > 3 could not be
// gated > 4 undecided or no baseline > 0.
int cmd_gate_commit(const std::string& git_sha, const std::string& results_dir, const GateArgs& args);
// Each benchmark's run-to-run and process noise on machine `key`, from its last 30 runs in `db`.
void add_run_variance(GateOptions& options, History& db, const std::string& key);
// `history`: "auto" = results/history.sqlite where it exists (marked there only when it holds
// the run); a named database stores the run and holds the baseline.
int cmd_baseline_update(const std::string& run, const std::string& results_dir, const std::string& history);

// Opens the history `db` (a path or postgresql:// URL) named by option `what`; UsageError for
// what is not a history, or (`must_exist`) an SQLite path with nothing there.
std::unique_ptr<History> open_history_db(const std::string& db, const std::string& what, bool must_exist);
// What `history` shows for one machine (or one of its benchmarks): per benchmark its per-run
// medians and the change points found, which are stored. Empty where the machine has no history.
struct Trend {
  History::Series series;
  std::vector<FoundChangePoint> change_points;
};
std::vector<Trend> history_trends(History& db, const std::string& machine, const std::string& benchmark, int last_runs);
int cmd_history(const std::string& benchmark, const std::string& db, const std::string& machine, int last_runs,
                const std::string& format);
// `history --machines`: every machine key with its kind, run count, last run and baseline.
int cmd_history_machines(const std::string& db, const std::string& format);
// The history export (format pairbench-history-export/1; contract in README), all that the
// report draws of a history, from either back end: machines (with their baseline run),
// per-machine series of medians and process values (the last `last_runs` runs, 0 = all), each
// machine's latest claims, and change points found over the exported series.
nlohmann::json history_export(History& db, int last_runs);
// Fills `db` (holding no runs) with `runs` synthetic nightly runs of one machine, then times what
// `history` and `gate` (from the database) do over it. Returns {db, runs, benchmarks,
// samples_per_run, fill_s, history_s, gate_s, ...}. `progress` is called every 1000 runs stored.
nlohmann::json measure_history_speed(const std::string& db, int runs, int benchmarks, int samples,
                                     const std::function<void(int)>& progress = {});
// `history speed`: measure_history_speed on a new history (`db`, or a temporary SQLite file).
int cmd_history_speed(const std::string& db, int runs, int benchmarks, int samples, const std::string& out);
// `history export --out FILE`: history_export written atomically.
int cmd_history_export(const std::string& db, int last_runs, const std::string& out);
// `history import RUN.json...`: stores run files in the history (each once, however often
// imported); exit 2 for a bad or partial run file (nothing stored), 3 when a write failed.
int cmd_history_import(const std::vector<std::string>& run_files, const std::string& db);

struct AbArgs {
  std::string baseline_build, candidate_build, experiments, arms, profile = "quick", out_dir;
  std::string pairing = "duet";  // duet (both sides at once, one core each) | sequential
  int repetitions = 0;
  double min_time_s = 0, timeout_s = 0;
  std::uint64_t seed = 0;
  GateArgs gate;
};
int cmd_ab(const AbArgs& args, const std::string& command_line);

// Both sides of an ab run as run files, marked as the two halves of one run (ab_run_id).
struct AbResult {
  nlohmann::json baseline, candidate;
};
AbResult run_ab(const std::vector<Side>& sides, const std::vector<Environment>& envs, const RunOptions& options,
                const std::string& command);

struct SelftestArgs {
  std::string experiments, arms, profile = "quick", out;
  int trials = 200, repetitions = 0, instruction_processes = 2;  // trials: A/A gate draws (planted: half)
  double min_time_s = 0;
  std::uint64_t seed = 0;
  bool pairing_study = false;  // measure ab's duet pairing against sequential interleaving instead
  int baseline_runs = 4;       // runs of the same build (A1..): A/A pairs and the run-to-run noise
  std::string runs_dir;        // where the run files go (default results/selftest)
  bool from_runs = false;      // analyse the run files already in runs_dir; run nothing
  GateArgs gate;
};
int cmd_selftest(const SelftestArgs& args, const std::string& bench_dir);

// Adds `pairbench.claims` to a run file written before the harness judged claims (true when it
// did): from its experiment summary, with the checks this build's bench binaries in `bench_dir`
// declare where the file carries none.
bool ensure_claims(nlohmann::json& doc, const std::string& bench_dir);
// `pairbench summarise --run F [--out G]`: the claims' verdicts of a run file, printed, and with
// --out the run file with them written to G.
int cmd_summarise(const std::string& run, const std::string& out, const std::string& bench_dir);

// Runs plots/report.py with a time limit; exit 3 when it is killed at the limit, 130/143 on SIGINT/SIGTERM.
// It hands the report, in temporary files, the claims catalogue compiled in and, with a history
// `history` (either back end), its export of the last kReportExportRuns runs per machine.
int cmd_report(const std::string& run, const std::string& history, const std::string& out_dir, double timeout_s);

}  // namespace pairbench::harness
