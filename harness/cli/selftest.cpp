// `pairbench selftest`: the gate measured as users meet it, with real benchmarks of this suite on
// this machine.
//   1. A run X of the selected benchmarks (2n processes each, n = the profile's processes per
//      benchmark), then, later, a run Y interleaving four sides: A' (the same build again) and
//      the same build with 5, 10 and 20 % of real work planted inside every timed region (2n each).
//      Instruction counts the same way: 3 counting processes in X, 2 per side in Y, the planted
//      work there an exact number of work loops per region (5/10/20 % of X's count).
//   2. Gates are drawn from these processes as users would meet them: baseline n processes of X,
//      current n processes of A' (A/A) or of a planted side, many times over; each draw is a
//      whole gate over every selected benchmark (Holm over all of them).
//   3. Reported per instrument: whole-gate A/A false-regression rate, detection rate of each
//      planted change (by noise band), seconds of processes per decision; and Google Benchmark's
//      compare.py rule (two-sided U test, p < 0.05, no correction) on the same draws.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <numeric>
#include <set>

#include "harness/analysis/change_points.h"
#include "harness/cli/command.h"
#include "harness/cli/gate_inputs.h"
#include "harness/cli/history_access.h"
#include "harness/cli/options.h"
#include "harness/cli/run_record.h"
#include "harness/exec/interrupt.h"
#include "harness/exec/say.h"
#include "harness/selftest/ab_studies.h"
#include "harness/selftest/gate_draws.h"
#include "harness/selftest/runs.h"
#include "harness/stats/stats.h"
#include "harness/store/file_checks.h"
#include "harness/store/history.h"
#include "harness/store/run_file.h"
#include "pairbench/build_info.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

struct SelftestArgs {
  std::string experiments, arms, profile = "quick", out;
  int trials = 200, repetitions = 0, instruction_processes = 2;  // trials: A/A gate draws (planted: half)
  double min_time_s = 0;
  std::uint64_t seed = 0;
  bool pairing_study = false;  // measure ab's duet pairing against sequential interleaving instead
  int baseline_runs = 4;       // runs of the same build (A1..): A/A pairs and the run-to-run noise
  std::string runs_dir;        // where the run files go (default results/selftest)
  bool from_runs = false;      // analyse the run files already in runs_dir; run nothing
  int ab_aa = 0;               // > 0: ab of the build against itself this many times instead
  int nights = 0;              // > 0: this many runs at the profile's own plan, every pair gated as the nightly gates
  int ab_deep = 0;             // > 0: ab of the build against itself, each benchmark alone, this many times each
  std::string benchmarks;      // --ab-deep: a regular expression the benchmarks' names must match
  int per_experiment = 0;      // --ab-deep: > 0: this many benchmarks of each experiment, drawn with --seed
  double ab_budget_s = -1;     // their --budget (< 0: ab's default)
  GateArgs gate;
};

// What the studies that make runs take of the command's options.
SelftestPlan plan_of(const SelftestArgs& args) {
  return {args.profile, args.out,  args.baseline_runs, args.instruction_processes,
          args.nights,  args.seed, args.gate.options};
}

// `history` and a gate from the database over 1000 nightly runs x 300 benchmarks (SQLite);
// `pairbench history speed` measures any size on either back end.
nlohmann::json selftest_history_speed() {
  char speed_dir[] = "/tmp/pairbench-selftest-history-XXXXXX";
  if (!mkdtemp(speed_dir)) throw std::runtime_error("selftest: cannot create a temporary directory");
  nlohmann::json speed;
  try {
    speed = measure_history_speed(std::string(speed_dir) + "/history.sqlite", 1000, 300, 9);
  } catch (...) {
    fs::remove_all(speed_dir);
    throw;
  }
  fs::remove_all(speed_dir);
  return speed;
}

int cmd_selftest(const SelftestArgs& args, const std::string& bench_dir) {
  if (args.ab_deep > 0) {
    const std::vector<std::string> names = ab_deep_benchmarks(
        keep_benchmarks_matching(select_experiments(load_catalogue(find_bench_binaries(bench_dir), args.profile),
                                                    args.experiments, args.arms),
                                 args.benchmarks),
        args.per_experiment, args.seed);
    if (names.empty()) throw UsageError("--ab-deep: no benchmark that can run here is selected");
    return selftest_ab_deep({args.ab_deep, names, args.profile, args.ab_budget_s, bench_dir,
                             args.runs_dir.empty() ? "results/selftest-ab-deep" : args.runs_dir, args.out, args.seed});
  }
  if (args.ab_aa > 0) {
    return selftest_ab_aa({args.ab_aa, args.experiments, args.profile, args.ab_budget_s, bench_dir,
                           args.runs_dir.empty() ? "results/selftest-ab-aa" : args.runs_dir, args.out});
  }
  RunArgs run_args;
  run_args.profile = args.profile;
  run_args.repetitions = args.repetitions;
  run_args.min_time_s = args.min_time_s;
  const Environment env = capture_environment(PAIRBENCH_SOURCE_DIR);
  RunOptions profile = run_options(run_args, env.fingerprint.value("machine_key", ""));
  const std::string nights_dir = args.runs_dir.empty() ? "results/selftest-nights" : args.runs_dir;
  if (args.nights > 0 && args.from_runs) return selftest_nights(plan_of(args), nullptr, profile, env, nights_dir);
  if (args.nights > 0) {
    auto experiments =
        select_experiments(load_catalogue(find_bench_binaries(bench_dir), args.profile), args.experiments, args.arms);
    return selftest_nights(plan_of(args), &experiments, profile, env, nights_dir);
  }
  // The self-test's gates are drawn at the profile's count for every benchmark: no time budget.
  profile.process_budget_s = profile.instruction_budget_s = 0;
  const int n = profile.repetitions;
  const int ni = std::max(2, args.instruction_processes);
  const std::string dir = args.runs_dir.empty() ? "results/selftest" : args.runs_dir;
  const auto start = Clock::now();

  if (!args.from_runs) {
    auto experiments =
        select_experiments(load_catalogue(find_bench_binaries(bench_dir), args.profile), args.experiments, args.arms);
    // By default every comparison the catalogue declares, in every area; a machine limit has no
    // baseline to plant a change against.
    if (args.experiments.empty())
      std::erase_if(experiments, [](const ExperimentEntry& e) { return e.kind != "comparison"; });
    if (args.pairing_study) return pairing_study(plan_of(args), experiments, profile, env);
    if (const int status = measure_selftest_runs(plan_of(args), experiments, profile, env, dir)) return status;
  }

  // --- Analysis, from the run files (--from re-reads them) ------------------------------------
  const SelftestRuns runs = read_selftest_runs(dir);
  const SelftestGates gates = selftest_gates(args.gate.options, runs);
  const std::map<std::string, double> noise = process_noise(runs.a_pools[0]);
  const SelftestTallies tallies = draw_gates(args.trials, args.seed, runs, gates, noise, n, ni);
  nlohmann::json result = draws_result(runs, gates, tallies, noise, {env, dir, args.profile, n, ni, args.trials});
  result["history_and_gate_speed"] = selftest_history_speed();
  result["analysis_wall_s"] = std::chrono::duration<double>(Clock::now() - start).count();
  print_selftest(result, tallies, env.fingerprint.value("cpu_model", ""));
  if (!args.out.empty()) {
    write_json_atomically(args.out, result);
    std::printf("wrote %s (run files in %s)\n", args.out.c_str(), dir.c_str());
  }
  return kExitOk;
}

}  // namespace

namespace {

// selftest's options, in the order its --help lists them: what to run and how often,
void add_run_options(CLI::App& cmd, SelftestArgs& a) {
  cmd.add_option("--experiments", a.experiments,
                 "comma-separated experiment names or areas (default: every comparison experiment)")
      ->check(name_list("experiment names or areas"));
  cmd.add_option("--arms", a.arms, "comma-separated arm names to keep")->check(name_list("arm names"));
  cmd.add_option("--profile", a.profile)->check(CLI::IsMember(kProfiles));
  cmd.add_option("--trials", a.trials, "A/A gates drawn (planted: half as many per level)")
      ->check(CLI::Range(1, 100000));
  cmd.add_option("--repetitions", a.repetitions, "processes per benchmark and side")->check(CLI::Range(2, 1000));
  cmd.add_option("--instruction-processes", a.instruction_processes,
                 "instruction-counting processes per benchmark and side")
      ->check(CLI::Range(2, 100));
  cmd.add_option("--min-time", a.min_time_s)->check(finite_in(0.0001, 600.0));
  cmd.add_option("--seed", a.seed, "seed of the gate draws")->check(unsigned_64());
  cmd.add_option("--runs", a.baseline_runs, "runs of the same build before the planted run")->check(CLI::Range(2, 50));
  cmd.add_option("--runs-dir", a.runs_dir, "where the run files go (default results/selftest)")
      ->check(path_is(directory_or_absent_problem, "DIR"));
  cmd.add_flag("--from", a.from_runs, "analyse the run files already in --runs-dir; run nothing");
}

// and which study instead of the drawn gates (--pairing-study, --ab-aa, --ab-deep, --nights).
void add_study_options(CLI::App& cmd, SelftestArgs& a) {
  cmd.add_flag("--pairing-study", a.pairing_study,
               "measure ab's duet pairing against sequential interleaving (noise, A/A, a planted 5 %)");
  cmd.add_option("--ab-aa", a.ab_aa,
                 "run ab of this build against itself N times at its defaults (--experiments, --profile "
                 "and --ab-budget as given) and count every decided change (exit 1 if any)")
      ->check(CLI::Range(1, 1000));
  cmd.add_option("--ab-deep", a.ab_deep,
                 "run ab of this build against itself with each selected benchmark alone, N times each, "
                 "over the same directory, a copy in another directory and the copy as baseline in turn, "
                 "each sampled as deep as --ab-budget and the cap allow; every decided change is listed "
                 "(exit 1 if any)")
      ->check(CLI::Range(1, 1000));
  cmd.add_option("--benchmarks", a.benchmarks, "--ab-deep: only benchmarks whose names match this regex");
  cmd.add_option("--per-experiment", a.per_experiment,
                 "--ab-deep: at most K benchmarks of each selected experiment, drawn with --seed (default: all)")
      ->check(CLI::Range(1, 10000));
  cmd.add_option("--nights", a.nights,
                 "run the selected experiments N times at the profile's own plan (budgets included) and gate "
                 "every pair as the nightly gates a night; exit 1 unless every gate exits 0 (--from: re-gate "
                 "the runs in --runs-dir, default results/selftest-nights)")
      ->check(CLI::Range(3, 50));
  cmd.add_option("--ab-budget", a.ab_budget_s, "--budget of each ab of --ab-aa or --ab-deep (default: ab's)")
      ->check(finite_in(0, 86400.0));
}

}  // namespace

Command command_selftest() {
  return {
      "selftest", "measure the gate's false-alarm and detection rates on this machine",
      "0 measured (the rates are the result, not a verdict); with --ab-aa or --ab-deep: 0 no decided change, 1 some "
      "decided "
      "change, 3 an ab failed to run; with --nights: 0 every gate passed, 1 some did not; 2 bad input; 130/143 "
      "interrupted by SIGINT/SIGTERM (the run files written "
      "so far are kept)",
      "a bench binary's output, a calibration cache or a run file (selftest)", [](CLI::App& cmd) -> CommandAction {
        auto a = std::make_shared<SelftestArgs>();
        auto bench_dir = std::make_shared<std::string>(default_bench_dir());
        add_run_options(cmd, *a);
        add_study_options(cmd, *a);
        cmd.add_option("--out", a->out, "write the result as JSON")
            ->check(path_is(regular_file_or_absent_problem, "FILE"));
        cmd.add_option("--bench-dir", *bench_dir, "directory of the bench_* binaries")
            ->check(path_is(directory_problem, "DIR"));
        add_gate_options(&cmd, a->gate);
        return [a, bench_dir](const std::string&) {
          finish_up_on_interrupt();
          try {
            return exit_status_after_interrupt(cmd_selftest(*a, *bench_dir));
          } catch (const SelftestInputError& e) {
            throw UsageError(e.what());
          }
        };
      }};
}

}  // namespace pairbench::harness
