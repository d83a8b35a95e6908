// `pairbench ab`: two builds' benchmarks in one run (duet pairs by default, each side on a core per
// declared thread, or sequentially interleaved; two rounds make a crossover block, exec/plan.cpp),
// then, within --budget, more processes for the benchmarks still undecided, in rounds, cheapest
// first, decided on block means by always-valid intervals with Holm over the gate
// (gate/sequential.h: valid at every look), then compared.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <tuple>

#include "harness/cli/command.h"
#include "harness/cli/gate_inputs.h"
#include "harness/cli/options.h"
#include "harness/cli/run_record.h"
#include "harness/exec/interrupt.h"
#include "harness/exec/say.h"
#include "harness/gate/sequential.h"
#include "harness/sampling/paired.h"
#include "harness/stats/stats.h"
#include "harness/store/file_checks.h"
#include "harness/store/run_file.h"
#include "kernels/common/cpus.h"
#include "pairbench/build_info.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

namespace {

// A build directory's bench binaries live in DIR/bin (CMake build tree) or DIR itself.
std::string bench_dir_of(const std::string& build) {
  if (fs::is_directory(build + "/bin")) return build + "/bin";
  if (fs::is_directory(build)) return build;
  throw UsageError("build directory " + build + " does not exist");
}

struct AbArgs {
  std::string baseline_build, candidate_build, experiments, arms, profile = "quick", out_dir;
  std::string benchmarks;         // a regular expression on benchmark names ("" = all)
  std::string pairing = "duet";   // duet (both sides at once, a core per thread each) | sequential
  std::string layout = "random";  // random: each process draws its placement (harness/exec/layout.h) | none
  std::string process_sharing = "experiment";  // RunArgs::process_sharing
  int repetitions = 0;
  int instruction_processes = -1;   // per benchmark and side that declares counts meaningful; -1: the profile's
  std::string instruction_counter;  // perf | callgrind | none | "" = detect
  double min_time_s = 0, timeout_s = 0;
  std::uint64_t seed = 0;
  // Sampling until decided: the whole ab's wall-time budget (0: the planned processes only, the
  // fixed design), the cap of processes per benchmark and side, and the pairs added per round.
  double budget_s = 180;
  int max_repetitions = 100;  // the budget is what usually stops it; the robust bets are sized for this
  int step = 2;
  bool probe = true;  // duet: one uncounted pair per benchmark first, to find those duet changes (duet_regime_probe)
  GateArgs gate;
};

// What the planned look is projected to take (exec's plan_run: a duet pair's sides at once, the
// others' one after the other; the regime probe's pairs first where it runs), said before it
// starts. Returns why the probe is skipped ("" where it runs: probe_skip_reason).
std::string announce_planned_look(const std::vector<Side>& sides, const RunOptions& options, double budget_s,
                                  const std::set<std::string>& to_probe) {
  RunPlan plan = plan_run(sides, options, to_probe);
  const std::string skip = probe_skip_reason(plan, to_probe.size(), budget_s);
  if (!skip.empty()) plan = plan_run(sides, options);
  say_planned_look("ab", plan.processes, plan.projected_wall_s, plan.unknown, static_cast<int>(plan.benchmarks.size()),
                   budget_s);
  return skip;
}

// ab's run options: the profile's, the layout asked; every benchmark the same count on both sides,
// then sampled until decided: no time budget.
RunOptions ab_run_options(const AbArgs& args) {
  RunArgs run_args;
  run_args.profile = args.profile;
  run_args.repetitions = args.repetitions;
  run_args.min_time_s = args.min_time_s;
  run_args.timeout_s = args.timeout_s;
  run_args.seed = args.seed;
  run_args.pairing = args.pairing;
  run_args.process_sharing = args.process_sharing;
  run_args.instruction_processes = args.instruction_processes;
  run_args.instruction_counter = args.instruction_counter;
  RunOptions options =
      run_options(run_args, capture_environment(PAIRBENCH_SOURCE_DIR).fingerprint.value("machine_key", ""));
  options.layout = args.layout;
  options.process_budget_s = options.instruction_budget_s = 0;
  return options;
}

// --out-dir (default results/ab-<UTC time>), checked with every other output before either build
// runs a benchmark.
std::string checked_out_dir(const AbArgs& args) {
  const std::string out_dir = args.out_dir.empty() ? "results/ab-" + utc_stamp("%Y%m%dT%H%M%SZ") : args.out_dir;
  check_gate_outputs(args.gate);
  try {
    require_directory_or_absent(out_dir, "--out-dir");
    require_regular_file_or_absent(out_dir + "/baseline.json", "--out-dir");
    require_regular_file_or_absent(out_dir + "/candidate.json", "--out-dir");
    check_writable(out_dir + "/baseline.json");
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }
  return out_dir;
}

// Both builds' selected benchmarks and fingerprints, baseline first; what differs in how the two
// were configured is said before anything runs and returned for the gate.
std::vector<std::string> load_sides(const AbArgs& args, std::vector<Side>& sides, std::vector<Environment>& envs) {
  std::vector<std::string> warnings;
  for (const auto& [name, build] : {std::pair{"baseline", args.baseline_build}, {"candidate", args.candidate_build}}) {
    const std::string dir = bench_dir_of(build);
    std::vector<ExperimentEntry> selected = keep_benchmarks_matching(
        select_experiments(load_catalogue(find_bench_binaries(dir), args.profile), args.experiments, args.arms),
        args.benchmarks);
    if (selected.empty() && !args.benchmarks.empty()) {
      throw UsageError("--benchmarks: '" + args.benchmarks + "' matches no selected benchmark of " + build);
    }
    sides.push_back({name, std::move(selected), {}, {}, {}});
    envs.push_back(environment_of_build(dir, PAIRBENCH_SOURCE_DIR));
    for (auto& w : apply_bench_build_facts(envs.back(), sides.back().experiments)) warnings.push_back(std::move(w));
  }
  const std::vector<std::string> differences = build_differences_said(envs[0], envs[1], warnings);
  for (const auto& w : warnings) say(Verbosity::quiet) << "ab: warning: " << w << "\n";
  return differences;
}

int cmd_ab(const AbArgs& args, const std::string& command_line) {
  RunOptions options = ab_run_options(args);
  const std::string out_dir = checked_out_dir(args);
  std::vector<Side> sides;
  std::vector<Environment> envs;
  const std::vector<std::string> build_differs = load_sides(args, sides, envs);
  auto start = std::chrono::steady_clock::now();
  // A budget is the wall of the processes that measure: what has never run here is calibrated
  // first, said with what it took, and the budget starts after it.
  if (args.budget_s > 0 && calibrate_first("ab", sides, options, args.budget_s) > 0)
    start = std::chrono::steady_clock::now();
  const bool probe = args.pairing == "duet" && args.probe;
  std::string skip_probe;
  if (args.budget_s > 0) {
    // Projected with what a probe here already found: a benchmark it sent to one side at a time
    // costs both sides' processes, not one pair's.
    const DuetProbePlan known = probe ? plan_duet_probe(sides, options) : DuetProbePlan{};
    RunOptions planned = options;
    planned.one_side_at_a_time.insert(known.known_apart.begin(), known.known_apart.end());
    skip_probe = announce_planned_look(sides, planned, args.budget_s, known.to_probe);
  }
  RunOptions counted = options;
  if (probe) counted.one_side_at_a_time = duet_regime_probe(sides, envs, options, command_line, skip_probe);
  AbResult r = run_ab(sides, envs, counted, command_line);
  if (probe) recheck_regime(r, sides, envs, counted, command_line);
  report_regime(r, sides);
  // Sampling until decided (harness/sampling/paired.h): each round's processes appended to the
  // whole ab's run files as they come.
  RunOptions round_options = counted;
  round_options.repetitions = args.step;
  round_options.instruction_processes = 0;  // time only: the counts were decided by the planned processes
  const RunPairedRound run_round = [&](const std::set<std::string>& chosen, int round, int pairs) {
    round_options.seed = round_options.seed ? round_options.seed + static_cast<std::uint64_t>(round) : 0;
    round_options.repetitions = pairs;
    AbResult more = run_ab(only(sides, chosen), envs, round_options, command_line);
    const bool interrupted = interrupt_signal() != 0;  // a cut-short round is kept out of the run files
    if (!interrupted) append_round(r.baseline, more.baseline), append_round(r.candidate, more.candidate);
    return PairedRound{std::move(more.baseline), std::move(more.candidate), interrupted};
  };
  const PairedPlan plan{args.budget_s, args.step, args.max_repetitions, args.gate.options};
  const SequentialDecision decision =
      args.budget_s > 0 ? sample_pairs(plan, r.baseline, r.candidate, run_round, start) : SequentialDecision{};
  write_json_atomically(out_dir + "/baseline.json", r.baseline);
  write_json_atomically(out_dir + "/candidate.json", r.candidate);
  std::cout << "wrote " << out_dir << "/baseline.json and candidate.json\n";
  GateArgs gate = args.gate;
  gate.options.force = true;  // two builds differ by design; the differences are listed
  GateReport report = compare_runs(r.baseline, r.candidate, gate.options, args.baseline_build + " (baseline)",
                                   args.candidate_build + " (candidate)");
  list_differences(report, build_differs);
  if (args.budget_s > 0) {
    apply_sequential(report, decision, split_two_stage(gate.options).sequence.interval_level);
    attach_function_diffs(report, r.baseline, r.candidate);  // for the verdicts the sampling changed
    std::printf(
        "sampled until decided (the planned look's fixed-sample gate at half of alpha, then robust always-valid "
        "intervals at the other half, Holm over the gate; docs/gate.md) within %.0f s, "
        "at most %d processes per benchmark and side, in %.1f s\n",
        args.budget_s, args.max_repetitions,
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    std::fflush(stdout);
  } else if (const int held = hold_changes_ranks_cannot_show(report); held > 0) {
    // The fixed design (--budget 0) decides as the planned look does: no change on processes
    // too few for their ranks (under ctest's load 4 and 4 once made identical builds +4.8 %).
    sayf(Verbosity::normal,
         "ab: %d change%s held undecided: too few processes per side to decide a change "
         "(--repetitions, or --budget > 0 to sample until decided)\n",
         held, held == 1 ? "" : "s");
  }
  return finish_gate(report, gate);
}

}  // namespace

namespace {

// ab's options, in the order its --help lists them: the two builds, what to run of them and with
// which counts,
void add_builds_options(CLI::App& cmd, AbArgs& a) {
  cmd.add_option("--baseline-build", a.baseline_build, "build directory of the baseline (e.g. main)")->required();
  cmd.add_option("--candidate-build", a.candidate_build, "build directory of the candidate")->required();
  cmd.add_option("--experiments", a.experiments, "comma-separated experiment names or areas")
      ->check(name_list("experiment names or areas"));
  cmd.add_option("--arms", a.arms, "comma-separated arm names to keep")->check(name_list("arm names"));
  cmd.add_option("--benchmarks", a.benchmarks,
                 "only the benchmarks whose names this regular expression finds (ECMAScript, anywhere "
                 "in the name, as --benchmark_filter)")
      ->check(benchmark_regex());
  cmd.add_option("--profile", a.profile)->check(CLI::IsMember(kProfiles));
  cmd.add_option("--repetitions", a.repetitions, "processes per benchmark and side")->check(CLI::Range(2, 1000));
  cmd.add_option("--min-time", a.min_time_s)->check(finite_in(0.001, 600.0));
  cmd.add_option("--timeout", a.timeout_s)->check(finite_in(1.0, 86400.0));
  cmd.add_option("--seed", a.seed)->check(unsigned_64());
  cmd.add_option("--instruction-processes", a.instruction_processes,
                 "instruction-counting processes per benchmark and side that declares them meaningful "
                 "(default: the profile's; 0 = none); under callgrind each records its top functions, "
                 "and the gate's regressions show which added instructions")
      ->check(CLI::Range(0, 100));
  cmd.add_option("--instructions", a.instruction_counter,
                 "instruction counter: perf, callgrind or none (default: detect)")
      ->check(CLI::IsMember({"perf", "callgrind", "none"}));
}

// and how: pairing, layout, process sharing, the budget of the sampling, the probe, the outputs.
void add_sampling_options(CLI::App& cmd, AbArgs& a) {
  cmd.add_option("--pairing", a.pairing,
                 "duet: both sides' processes at once, each pinned to its own cores (one per thread it "
                 "declares), cores swapped each round; a benchmark whose two sides do not fit runs them one "
                 "at a time; sequential: one process at a time")
      ->check(CLI::IsMember({"duet", "sequential"}));
  cmd.add_option("--layout", a.layout,
                 "random: every process of both sides draws its own code and data placement from the seed "
                 "(a relinked layout variant of its bench binary, environment padding, buffer page "
                 "offsets; recorded in its row), so that layout is noise, not a constant of one build; "
                 "none: the plain binaries as built")
      ->check(CLI::IsMember({"random", "none"}));
  add_process_sharing_option(cmd, a.process_sharing);
  cmd.add_option("--budget", a.budget_s,
                 "seconds of wall time for the whole ab, counted after calibrating what has never run here "
                 "(said with what it took): after the planned processes, rounds of more processes for the "
                 "benchmarks still undecided, cheapest first, decided by always-valid intervals (0: the "
                 "planned processes only)")
      ->check(finite_in(0, 86400.0));
  cmd.add_option("--max-repetitions", a.max_repetitions, "the cap of processes per benchmark and side")
      ->check(CLI::Range(2, 1000));
  cmd.add_flag("!--no-probe", a.probe,
               "duet: skip the regime probe (one uncounted pair of every benchmark a duet would pair first, "
               "except those a probe or second look here found within 7 days (kept in the calibration cache), "
               "and with --budget none where its cost is not known here or past the budget; a benchmark "
               "either side of which runs above 1.5x its time per iteration in run (learnt from runs here; "
               "else its calibrated time) beside the other then runs its sides one at a time) and its second "
               "look (a benchmark whose planned duet processes ran above that is measured again one side "
               "at a time)");
  cmd.add_option("--out-dir", a.out_dir, "where baseline.json and candidate.json go (default results/ab-<time>)")
      ->check(path_is(directory_or_absent_problem, "DIR"));
}

}  // namespace

Command command_ab() {
  return {"ab", "run two builds interleaved process by process and compare them",
          "0 no regression; 1 a regression; 2 bad input; 3 a build's benchmark process failed; 4 some benchmark "
          "undecided (--undecided fail); 130/143 interrupted by SIGINT/SIGTERM (what was measured is kept)",
          "a bench binary's output, a calibration cache or a run file (ab)", [](CLI::App& cmd) -> CommandAction {
            auto a = std::make_shared<AbArgs>();
            add_builds_options(cmd, *a);
            add_sampling_options(cmd, *a);
            add_gate_options(&cmd, a->gate);
            return [a](const std::string& command_line) {
              finish_up_on_interrupt();
              return exit_status_after_interrupt(cmd_ab(*a, command_line));
            };
          }};
}

}  // namespace pairbench::harness
