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

// `ab` of a build against itself, and against itself with 5 % planted work, in both pairings:
// the noise of the comparison (median standard error of the log change), whole-gate A/A false
// regressions and the planted change's detection, per pairing.
int pairing_study(const SelftestArgs& args, const std::vector<ExperimentEntry>& experiments, const RunOptions& profile,
                  const Environment& env) {
  GateOptions gate = args.gate.options;
  gate.force = true;
  gate.undecided = UndecidedPolicy::pass;
  nlohmann::json result;
  result["machine"] = {{"cpu_model", env.fingerprint.value("cpu_model", "")},
                       {"cpu_count", env.fingerprint.value("cpu_count", 0)}};
  result["processes_per_side"] = profile.repetitions;
  std::printf("\npairbench selftest --pairing-study: %d processes per side, on %s\n", profile.repetitions,
              env.fingerprint.value("cpu_model", "").c_str());
  for (const std::string pairing : {"sequential", "duet"}) {
    for (const bool planted : {false, true}) {
      RunOptions o = profile;
      o.progress_tty = false;
      o.instruction_processes = 0;
      o.pairing = pairing;
      std::vector<Side> sides = {Side{"A", experiments, {}, {}, {}},
                                 Side{planted ? "A+5%" : "A'", experiments, {}, {}, {}}};
      if (planted) {
        for (const auto& e : experiments) {
          for (const auto& b : e.benchmarks) sides[1].benchmark_env[b.name]["PAIRBENCH_INJECT_SLOWDOWN_PCT"] = "5";
        }
      }
      say() << "selftest: ab " << pairing << (planted ? ", 5 % planted" : ", A/A") << "\n";
      const auto t0 = Clock::now();
      const AbResult r = run_ab(sides, {env, env}, o, "selftest --pairing-study");
      if (interrupt_signal()) break;  // a cut-short pair of runs says nothing; what is done is written below
      const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
      const GateReport report = compare_runs(r.baseline, r.candidate, gate, "A", sides[1].name);
      std::vector<double> se;
      for (const auto& v : report.rows) {
        if (v.instrument == Instrument::time && v.se > 0 && std::isfinite(v.se)) se.push_back(v.se);
      }
      const std::string key = std::string(planted ? "planted_5pct" : "aa");
      result[pairing][key] = {{"regressions", report.count(Verdict::regression)},
                              {"unchanged", report.count(Verdict::unchanged)},
                              {"undecided", report.count(Verdict::undecided)},
                              {"benchmarks", report.rows.size()},
                              {"median_se_of_log_change", se.empty() ? 0.0 : stats::median(se)},
                              {"wall_s", wall},
                              {"headline", report.headline()}};
      std::printf("  %-10s %-12s %s; median SE of the change %.2f%%; %.0f s\n", pairing.c_str(),
                  planted ? "planted 5%:" : "A/A:", report.headline().c_str(),
                  se.empty() ? 0.0 : 100 * stats::median(se), wall);
    }
  }
  if (interrupt_signal()) result["interrupted"] = signal_name(interrupt_signal());
  if (!args.out.empty()) {
    write_json_atomically(args.out, result);
    std::printf("wrote %s\n", args.out.c_str());
  }
  return kExitOk;
}

// Runs A1..A<baseline_runs> of the same build, one after another as nights would be, then run Y:
// A' and the build with 5, 10 and 20 % planted, interleaved. Time: work worth L % of each region's
// time; instructions: L % of A1's count per iteration, as whole work loops of the known size.
// Returns 0, or the exit status of an interrupted run (kept, marked partial).
int measure_selftest_runs(const SelftestArgs& args, const std::vector<ExperimentEntry>& experiments,
                          const RunOptions& profile, const Environment& env, const std::string& dir) {
  check_writable(selftest_run_path(dir, "A1"));
  RunOptions o = profile;
  o.progress_tty = false;
  o.repetitions = 2 * profile.repetitions;
  o.instruction_processes = std::max(2, args.instruction_processes);
  o.pairing = "sequential";
  nlohmann::json first;
  for (int k = 1; k <= args.baseline_runs; ++k) {
    say() << "selftest: run A" << k << " of " << args.baseline_runs << ", " << o.repetitions
          << " processes per benchmark\n";
    const std::string started = utc_stamp("%Y-%m-%dT%H:%M:%SZ");
    const RunOutcome r = run_sides({Side{"A", experiments, {}, {}, {}}}, o);
    nlohmann::json doc = build_run_doc(experiments, r.samples, o, r, env, started, "selftest A" + std::to_string(k), 0);
    write_json_atomically(selftest_run_path(dir, "A" + std::to_string(k)), doc);
    if (r.interrupted_by) return interrupted_exit_status();  // no analysis of part of a run
    if (k == 1) first = doc;
  }
  const Pool p1 = pool_of(first);
  std::vector<Side> sides = {Side{"A'", experiments, {}, {}, {}}};
  for (int level : kPlantedLevels) {
    Side side{"planted" + std::to_string(level), experiments, {}, {}, {}};
    for (const auto& e : experiments) {
      for (const auto& b : e.benchmarks)
        side.benchmark_env[b.name]["PAIRBENCH_INJECT_SLOWDOWN_PCT"] = std::to_string(level);
    }
    for (const auto& [name, entries] : p1.instructions) {
      std::vector<double> counts;
      for (const auto& e : entries) counts.push_back(e["instructions_per_iteration"].get<double>());
      char v[64];
      std::snprintf(v, sizeof v, "%.6f", level / 100.0 * stats::median(counts) / kInjectedInstructionsPerLoop);
      side.instruction_env[name]["PAIRBENCH_INJECT_LOOPS"] = v;
    }
    sides.push_back(std::move(side));
  }
  say() << "selftest: run Y, " << o.repetitions << " processes per benchmark and side: A' and planted 5/10/20 %\n";
  const std::string started = utc_stamp("%Y-%m-%dT%H:%M:%SZ");
  const RunOutcome y = run_sides(sides, o);
  for (std::size_t side = 0; side < sides.size(); ++side) {
    nlohmann::json doc =
        build_run_doc(experiments, y.samples, o, y, env, started, "selftest Y", static_cast<int>(side));
    write_json_atomically(selftest_run_path(dir, side == 0 ? "Y-A'" : "Y-" + sides[side].name), doc);
  }
  return y.interrupted_by ? interrupted_exit_status() : 0;
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

// --nights K: the gate as the nightly meets it, on whole runs rather than draws. K runs of the same
// build at the profile's own plan (its processes, time budget and counting cover, as `run
// --profile` does), then every pair of them gated as ci/nightly.sh gates a night: the earlier run
// as the baseline, the run-to-run noise from the history it would have (every run but the current
// one), unchanged at the larger of the threshold and the benchmark's resolution, --undecided fail.
// The gates share runs (K runs give K(K-1)/2 pairs), so they are not independent draws; each one is
// a complete nightly-shaped comparison of real processes.
int selftest_nights(const SelftestArgs& args, const std::vector<ExperimentEntry>* experiments,
                    const RunOptions& profile, const Environment& env, const std::string& dir) {
  const auto start = Clock::now();
  std::vector<nlohmann::json> runs;
  if (experiments) {
    check_writable(selftest_run_path(dir, "night1"));
    RunOptions o = profile;
    o.progress_tty = false;
    for (int k = 1; k <= args.nights; ++k) {
      say() << "selftest: night " << k << " of " << args.nights << " (" << args.profile << " profile, " << o.repetitions
            << " processes per benchmark within its budget)\n";
      o.seed = args.seed + static_cast<std::uint64_t>(k);  // a fresh order each night
      const std::string started = utc_stamp("%Y-%m-%dT%H:%M:%SZ");
      const RunOutcome r = run_sides({Side{"A", *experiments, {}, {}, {}}}, o);
      nlohmann::json doc =
          build_run_doc(*experiments, r.samples, o, r, env, started, "selftest night " + std::to_string(k), 0);
      write_json_atomically(selftest_run_path(dir, "night" + std::to_string(k)), doc);
      if (r.interrupted_by) return interrupted_exit_status();
    }
  }
  for (int k = 1; fs::exists(selftest_run_path(dir, "night" + std::to_string(k))); ++k) {
    runs.push_back(read_run_file(selftest_run_path(dir, "night" + std::to_string(k))));
  }
  if (runs.size() < 3) throw UsageError(dir + ": --nights needs at least 3 runs night1.. (run without --from first)");
  std::vector<Pool> pools;
  for (const auto& d : runs) pools.push_back(pool_of(d));
  std::printf(
      "\npairbench selftest --nights: %zu runs of the same build (%s profile, as `run --profile %s` plans them), "
      "every pair gated as the nightly gates it, on %s\n",
      runs.size(), args.profile.c_str(), args.profile.c_str(), env.fingerprint.value("cpu_model", "").c_str());
  std::printf("  %-9s %-9s %5s %11s %9s %10s %8s %8s %6s  %s\n", "baseline", "current", "exit", "regressions",
              "undecided", "unchanged", "missing", "suspects", "rows",
              "time rows gated at: threshold / median / largest");
  nlohmann::json gates = nlohmann::json::array();
  int passed = 0, with_regression = 0, total = 0;
  long regressions = 0, undecided = 0, rows = 0;
  for (std::size_t j = 1; j < runs.size(); ++j) {
    // The history a night j would have: the runs before it and after it are the same build, but a
    // real night has only those before; all of them but j keeps K-1 runs of run-to-run noise.
    GateOptions g = args.gate.options;
    g.force = true;
    std::map<std::string, std::vector<std::vector<double>>> per_run;
    for (std::size_t k = 0; k < runs.size(); ++k) {
      if (k == j) continue;
      for (const auto& [name, entries] : pools[k].time) {
        std::vector<double> v;
        for (const auto& e : entries) v.push_back(process_value(e));
        per_run[name].push_back(v);
      }
    }
    for (const auto& [name, values] : per_run) add_history_noise(g, name, values);
    g.run_variance_source = "the selftest's other " + std::to_string(runs.size() - 1) + " runs of the same build";
    for (std::size_t i = 0; i < j; ++i) {
      const GateReport report =
          compare_runs(runs[i], runs[j], g, "night" + std::to_string(i + 1), "night" + std::to_string(j + 1));
      const int status = report.exit_status();
      std::vector<double> gated_at;
      int at_threshold = 0;
      for (const auto& v : report.rows) {
        if (v.instrument != Instrument::time || !(v.gated_at > 0)) continue;
        gated_at.push_back(v.gated_at);
        at_threshold += v.gated_at <= v.threshold * (1 + 1e-12);
      }
      const int reg = report.count(Verdict::regression), und = report.count(Verdict::undecided);
      // Suspects: what ci/nightly.sh would measure again in its same-runner `ab` (docs/gate.md).
      const int suspects = static_cast<int>(std::count_if(report.rows.begin(), report.rows.end(), [](const auto& v) {
        return is_suspect(v) && v.verdict != Verdict::regression && v.verdict != Verdict::undecided;
      }));
      ++total;
      passed += status == kExitOk;
      with_regression += reg > 0;
      regressions += reg, undecided += und, rows += static_cast<long>(report.rows.size());
      std::vector<std::string> names;
      for (const auto& v : report.rows) {
        if (v.verdict == Verdict::regression || v.verdict == Verdict::undecided) {
          names.push_back(v.benchmark + " (" + to_string(v.instrument) + ", " + to_string(v.verdict) + ")");
        }
      }
      const double median = gated_at.empty() ? 0 : stats::median(gated_at);
      const double largest = gated_at.empty() ? 0 : *std::max_element(gated_at.begin(), gated_at.end());
      std::printf("  %-9s %-9s %5d %11d %9d %10d %8d %8d %6zu  %d of %zu / \u00b1%.1f%% / \u00b1%.1f%%\n",
                  ("night" + std::to_string(i + 1)).c_str(), ("night" + std::to_string(j + 1)).c_str(), status, reg,
                  und, report.count(Verdict::unchanged), report.count(Verdict::missing), suspects, report.rows.size(),
                  at_threshold, gated_at.size(), 100 * median, 100 * largest);
      for (const auto& n : names) std::printf("      %s\n", n.c_str());
      gates.push_back({{"baseline", "night" + std::to_string(i + 1)},
                       {"current", "night" + std::to_string(j + 1)},
                       {"exit_status", status},
                       {"regressions", reg},
                       {"undecided", und},
                       {"unchanged", report.count(Verdict::unchanged)},
                       {"improvements", report.count(Verdict::improvement)},
                       {"missing", report.count(Verdict::missing)},
                       {"suspects", suspects},
                       {"rows", report.rows.size()},
                       {"time_rows_gated_at_threshold", at_threshold},
                       {"time_rows", gated_at.size()},
                       {"gated_at_median", median},
                       {"gated_at_largest", largest},
                       {"not_passed", names}});
    }
  }
  std::printf(
      "  %d of %d nightly-shaped A/A gates passed (exit 0 without --undecided pass); %d with a false regression "
      "(%ld regression and %ld undecided verdicts over %ld rows)\n",
      passed, total, with_regression, regressions, undecided, rows);
  std::set<std::string> benchmarks;
  for (const auto& p : pools) {
    for (const auto& [name, e] : p.time) benchmarks.insert(name);
  }
  nlohmann::json result;
  result["machine"] = {{"cpu_model", env.fingerprint.value("cpu_model", "")},
                       {"cpu_count", env.fingerprint.value("cpu_count", 0)},
                       {"machine_key", env.fingerprint.value("machine_key", "")}};
  result["mode"] = "nights";
  result["profile"] = args.profile;
  result["runs"] = {{"directory", dir}, {"count", runs.size()}};
  result["benchmarks"] = benchmarks.size();
  result["processes_per_benchmark"] = profile.repetitions;
  result["gates"] = gates;
  result["summary"] = {{"gates", total},
                       {"passed", passed},
                       {"with_a_false_regression", with_regression},
                       {"regression_verdicts", regressions},
                       {"undecided_verdicts", undecided},
                       {"rows", rows}};
  result["wall_s"] = std::chrono::duration<double>(Clock::now() - start).count();
  result["note"] =
      "Every pair of the runs gated as ci/nightly.sh gates a night (the earlier as baseline, run-to-run noise "
      "from every run but the current); the gates share runs, so they are not independent.";
  if (!args.out.empty()) {
    write_json_atomically(args.out, result);
    std::printf("wrote %s (run files in %s)\n", args.out.c_str(), dir.c_str());
  }
  return passed == total ? kExitOk : 1;
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
  if (args.nights > 0 && args.from_runs) return selftest_nights(args, nullptr, profile, env, nights_dir);
  if (args.nights > 0) {
    auto experiments =
        select_experiments(load_catalogue(find_bench_binaries(bench_dir), args.profile), args.experiments, args.arms);
    return selftest_nights(args, &experiments, profile, env, nights_dir);
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
    if (args.pairing_study) return pairing_study(args, experiments, profile, env);
    if (const int status = measure_selftest_runs(args, experiments, profile, env, dir)) return status;
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
