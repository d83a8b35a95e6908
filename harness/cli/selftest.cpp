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
#include <random>
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
    std::vector<std::string> names;
    std::mt19937_64 rng(args.seed);
    for (const auto& e :
         keep_benchmarks_matching(select_experiments(load_catalogue(find_bench_binaries(bench_dir), args.profile),
                                                     args.experiments, args.arms),
                                  args.benchmarks)) {
      std::vector<std::string> here;
      for (const auto& b : e.benchmarks) {
        if (b.available) here.push_back(b.name);
      }
      if (here.empty()) continue;
      if (args.per_experiment > 0 && here.size() > static_cast<std::size_t>(args.per_experiment)) {
        std::shuffle(here.begin(), here.end(), rng);
        here.resize(static_cast<std::size_t>(args.per_experiment));
      }
      names.insert(names.end(), here.begin(), here.end());
    }
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
  const GateOptions& gate = gates.gate;
  const std::map<std::string, double> noise = process_noise(runs.a_pools[0]);
  std::vector<double> noises, run_noises;
  for (const auto& [name, cv] : noise) noises.push_back(cv);
  for (const auto& [name, v] : gate.run_variance) run_noises.push_back(std::sqrt(v));
  const SelftestTallies tallies = draw_gates(args.trials, args.seed, runs, gates, noise, n, ni);
  const nlohmann::json speed = selftest_history_speed();

  nlohmann::json result;
  result["machine"] = {{"cpu_model", env.fingerprint.value("cpu_model", "")},
                       {"cpu_count", env.fingerprint.value("cpu_count", 0)},
                       {"machine_key", env.fingerprint.value("machine_key", "")}};
  result["runs"] = {
      {"directory", dir}, {"same_build_runs", runs.a_runs.size()}, {"planted_levels_pct", kPlantedLevels}};
  result["profile"] = args.profile;
  result["processes_per_side"] = n;
  result["instruction_processes_per_side"] = ni;
  result["benchmarks"] = noise.size();
  result["draws"] = {{"aa", args.trials}, {"planted", std::max(1, args.trials / 2)}};
  result["gate"] = {{"threshold", gate.threshold},
                    {"instructions_threshold", gate.instructions_threshold},
                    {"alpha", gate.alpha},
                    {"correction", to_string(gate.correction)},
                    {"moderation", to_string(gate.moderation)},
                    {"run_variance_source", gate.run_variance_source}};
  result["instruction_counter"] = runs.a_runs[0]["pairbench"]["sampling"].value("instruction_counter", "none");
  result["time_noise"] = {{"process_to_process_median", noises.empty() ? 0.0 : stats::median(noises)},
                          {"run_to_run_median", run_noises.empty() ? 0.0 : stats::median(run_noises)},
                          {"run_to_run_q75", run_noises.empty() ? 0.0 : stats::quantile(run_noises, 0.75)}};
  for (const auto& [instrument, by_kind] : tallies.by_instrument) {
    for (const auto& [kind, t] : by_kind) result["results"][instrument][kind] = tally_json(t);
  }
  result["results"]["time"]["aa_without_run_to_run_noise"] = tally_json(tallies.aa_without_history);
  if (!tallies.aa_gated_at.empty()) {
    const auto& g = tallies.aa_gated_at;
    result["results"]["time"]["aa_gated_at"] = {{"rows", g.size()},
                                                {"share_at_threshold", share_at_most(g, gate.threshold * (1 + 1e-12))},
                                                {"median", stats::median(g)},
                                                {"q90", stats::quantile(g, 0.9)}};
  }
  result["results"]["whole gate"]["first_ten_aa"] = {{"gates", tallies.first_ten},
                                                     {"passed", tallies.first_ten_passed}};
  result["planted_as_measured"] = planted_as_measured(runs);
  result["instruction_count_cv"] = instruction_count_spread(runs.a_pools);
  result["seconds_per_decision"] = {{"time", 2 * n * mean_wall(runs.a_pools, false)},
                                    {"instructions", 2 * ni * mean_wall(runs.a_pools, true)}};
  result["history_and_gate_speed"] = speed;
  result["analysis_wall_s"] = std::chrono::duration<double>(Clock::now() - start).count();
  result["note"] =
      "Gates are drawn from real processes: for A/A, n processes of one run and n of another run of the same "
      "build (runs A1.. and Y's A'); for detection, a baseline run against Y's planted side. Draws share "
      "processes, so the rates are resampling estimates from these runs.";
  print_selftest(result, tallies, env.fingerprint.value("cpu_model", ""));
  if (!args.out.empty()) {
    write_json_atomically(args.out, result);
    std::printf("wrote %s (run files in %s)\n", args.out.c_str(), dir.c_str());
  }
  return kExitOk;
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
        cmd.add_option("--experiments", a->experiments,
                       "comma-separated experiment names or areas (default: every comparison experiment)")
            ->check(name_list("experiment names or areas"));
        cmd.add_option("--arms", a->arms, "comma-separated arm names to keep")->check(name_list("arm names"));
        cmd.add_option("--profile", a->profile)->check(CLI::IsMember(kProfiles));
        cmd.add_option("--trials", a->trials, "A/A gates drawn (planted: half as many per level)")
            ->check(CLI::Range(1, 100000));
        cmd.add_option("--repetitions", a->repetitions, "processes per benchmark and side")->check(CLI::Range(2, 1000));
        cmd.add_option("--instruction-processes", a->instruction_processes,
                       "instruction-counting processes per benchmark and side")
            ->check(CLI::Range(2, 100));
        cmd.add_option("--min-time", a->min_time_s)->check(finite_in(0.0001, 600.0));
        cmd.add_option("--seed", a->seed, "seed of the gate draws")->check(unsigned_64());
        cmd.add_option("--runs", a->baseline_runs, "runs of the same build before the planted run")
            ->check(CLI::Range(2, 50));
        cmd.add_option("--runs-dir", a->runs_dir, "where the run files go (default results/selftest)")
            ->check(path_is(directory_or_absent_problem, "DIR"));
        cmd.add_flag("--from", a->from_runs, "analyse the run files already in --runs-dir; run nothing");
        cmd.add_flag("--pairing-study", a->pairing_study,
                     "measure ab's duet pairing against sequential interleaving (noise, A/A, a planted 5 %)");
        cmd.add_option("--ab-aa", a->ab_aa,
                       "run ab of this build against itself N times at its defaults (--experiments, --profile "
                       "and --ab-budget as given) and count every decided change (exit 1 if any)")
            ->check(CLI::Range(1, 1000));
        cmd.add_option("--ab-deep", a->ab_deep,
                       "run ab of this build against itself with each selected benchmark alone, N times each, "
                       "over the same directory, a copy in another directory and the copy as baseline in turn, "
                       "each sampled as deep as --ab-budget and the cap allow; every decided change is listed "
                       "(exit 1 if any)")
            ->check(CLI::Range(1, 1000));
        cmd.add_option("--benchmarks", a->benchmarks, "--ab-deep: only benchmarks whose names match this regex");
        cmd.add_option("--per-experiment", a->per_experiment,
                       "--ab-deep: at most K benchmarks of each selected experiment, drawn with --seed (default: all)")
            ->check(CLI::Range(1, 10000));
        cmd.add_option("--nights", a->nights,
                       "run the selected experiments N times at the profile's own plan (budgets included) and gate "
                       "every pair as the nightly gates a night; exit 1 unless every gate exits 0 (--from: re-gate "
                       "the runs in --runs-dir, default results/selftest-nights)")
            ->check(CLI::Range(3, 50));
        cmd.add_option("--ab-budget", a->ab_budget_s, "--budget of each ab of --ab-aa or --ab-deep (default: ab's)")
            ->check(finite_in(0, 86400.0));
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
