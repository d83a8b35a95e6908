// `pairbench run`: runs experiments, writes the run file, appends it to the history, prints the
// summary. What `run` measured is never thrown away: an interrupted run writes a partial run file,
// a run file that cannot go where asked goes to the current or the temporary directory, and a
// history row that cannot be written is retried, then named in the run file for `history import`.
// With --baseline it is also gated against that run, and with --budget it first samples the
// benchmarks still undecided until decided (harness/sampling/unpaired.h).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <tuple>
#include <vector>

#include "harness/analysis/claims.h"
#include "harness/analysis/summary.h"
#include "harness/cli/command.h"
#include "harness/cli/gate_inputs.h"
#include "harness/cli/history_access.h"
#include "harness/cli/options.h"
#include "harness/cli/run_record.h"
#include "harness/exec/budget.h"
#include "harness/exec/interrupt.h"
#include "harness/exec/say.h"
#include "harness/gate/sequential.h"  // hold_changes_ranks_cannot_show
#include "harness/sampling/unpaired.h"
#include "harness/store/file_checks.h"
#include "harness/store/history.h"
#include "harness/store/run_file.h"
#include "pairbench/build_info.h"

namespace pairbench::harness {

namespace {

// The comparison at the end of a run (--baseline) and the sampling before it (--budget).
struct RunGateArgs {
  std::string baseline;   // a run file, or "history": this machine's stored baseline; "" = no gate
  bool db_named = false;  // --db or PAIRBENCH_DB given: the stored baseline may come from there
  double budget_s = 0;
  int max_repetitions = 30;
  GateArgs gate;
};

// The baseline's run file and its label, read before anything runs (bad input fails first).
std::pair<nlohmann::json, std::string> read_baseline(const RunGateArgs& g, const RunArgs& args,
                                                     const Environment& env) {
  if (g.baseline != "history") return {read_input(g.baseline, "--baseline"), g.baseline};
  const std::string key = env.fingerprint.value("machine_key", "");
  StoredBaseline stored = stored_baseline(key, g.db_named ? args.history : "", "results", "this run");
  return {std::move(stored.doc), stored.label};
}

// --wall-budget (the nightly's by default): the per-benchmark budgets lowered until the run's
// projection fits, and one line that says what was lowered, or that the budgets fit.
void apply_wall_budget(const RunArgs& args, const std::vector<ExperimentEntry>& experiments, RunOptions& options) {
  const double wall = args.wall_budget_s >= 0     ? args.wall_budget_s
                      : args.profile == "nightly" ? kNightlyWallBudgetS
                                                  : 0;
  if (wall <= 0 || (options.process_budget_s <= 0 && options.instruction_budget_s <= 0)) return;
  const WallFit fit = fit_run_to_wall(experiments, options, wall);
  std::cout << wall_fit_line(fit, wall, options) << "\n";
  options.process_budget_s = fit.process_budget_s, options.instruction_budget_s = fit.instruction_budget_s;
}

// The gate's inputs, before any benchmark runs: the baseline and its label (none without
// --baseline), the outputs checked, and this machine's run-to-run noise from the history added to
// `gate` (read before this run is added to it).
std::pair<nlohmann::json, std::string> gate_inputs(const RunArgs& args, const RunGateArgs& gate_args,
                                                   const Environment& env, GateArgs& gate) {
  if (gate_args.baseline.empty()) return {};
  check_gate_outputs(gate);
  auto [baseline, baseline_label] = read_baseline(gate_args, args, env);
  const auto differences = fingerprint_differences(baseline.at("pairbench").at("environment"), env.to_json());
  if (!differences.empty() && !gate.options.force) {
    std::string fields;
    for (const auto& d : differences) fields += (fields.empty() ? "" : "; ") + d;
    throw UsageError("--baseline: " + baseline_label +
                     " is from another machine or build (--force to compare anyway): " + fields);
  }
  if (!args.history.empty() &&
      (args.history.find("://") != std::string::npos || std::filesystem::exists(args.history))) {
    const auto db = open_history_db(args.history, "--db", /*must_exist=*/true);
    add_run_variance(gate.options, *db, env.fingerprint.value("machine_key", ""));
  }
  return {std::move(baseline), std::move(baseline_label)};
}

// The gate of this run against its baseline: the fixed test, with the sampled benchmarks' time
// rows decided by the always-valid intervals (valid however often it looked). Its exit status.
int gate_this_run(const nlohmann::json& baseline, const std::string& baseline_label, const nlohmann::json& doc,
                  const std::string& written, const GateArgs& gate, const RunGateArgs& gate_args,
                  const std::optional<Sampled>& sampled, std::chrono::steady_clock::time_point start) {
  GateReport report;
  try {
    report = compare_runs(baseline, doc, gate.options, baseline_label, written == "-" ? "this run" : written);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (sampled) {
    apply_unpaired(report, *sampled);
    hold_run_shift(report);                        // the sampling's verdicts are between two runs too
    attach_function_diffs(report, baseline, doc);  // for the verdicts the sampling changed
    std::cout << "\nsampled until decided against " << baseline_label
              << " (always-valid intervals, Holm over the gate; docs/gate.md) within " << gate_args.budget_s
              << " s, at most " << gate_args.max_repetitions << " processes per benchmark: " << sampled->rounds
              << (sampled->rounds == 1 ? " round, " : " rounds, ") << sampled->added_processes << " more processes, "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() << " s\n";
  } else if (const int held = hold_changes_ranks_cannot_show(report); held > 0) {
    // The fixed gate decides as ab's does: no change on processes too few for their ranks
    // (under ctest's load, 4 and 4 processes of one build run twice were once a regression).
    say() << "pairbench: " << held << (held == 1 ? " change" : " changes")
          << " held undecided: too few processes per side to decide a change (--repetitions, or --budget)\n";
  }
  std::cout << "\n";
  return finish_gate(report, gate);
}

// --out, or results/run-<UTC time>-<profile>.json; refused before anything runs where it cannot be written.
std::string checked_run_file(const RunArgs& args) {
  const std::string out =
      args.out.empty() ? "results/run-" + utc_stamp("%Y%m%dT%H%M%SZ") + "-" + args.profile + ".json" : args.out;
  try {
    check_writable(out);
  } catch (const std::exception& ex) {
    throw UsageError(std::string("--out: ") + ex.what());
  }
  return out;
}

// The run's summary and claims, where its file went, and its time budget's line.
void print_run(const RunDocument& built, const std::string& written, const RunOutcome& outcome) {
  print_summary(std::cout, built.summary);
  print_claims(std::cout, built.claims);
  std::cout << "\nwrote " << (written == "-" ? "the run file to stdout" : written) << " ("
            << built.doc["benchmarks"].size() << " samples, " << outcome.wall_s << " s)\n";
  if (outcome.plan.budgeted) std::cout << budget_line(outcome.plan, outcome.wall_s) << "\n";
}

// `run --plan`: the plan from this machine's cache, nothing run.
int print_plan_only(const RunArgs& args, RunOptions& options) {
  const auto experiments = select_experiments(load_catalogue(find_bench_binaries(args.bench_dir), args.profile),
                                              args.experiments, args.arms);
  apply_wall_budget(args, experiments, options);
  std::cout << plan_text(plan_run(experiments, options), options);
  return kExitOk;
}

// The run file, written before the history is tried (that may take minutes): the samples are safe
// first. A "pending" history write that is never updated means pairbench died in between. Returns
// where it went (run_file.h, write_run_file).
std::string write_before_history(const RunArgs& args, nlohmann::json& doc, const std::string& out, bool partial) {
  if (!args.history.empty()) {
    const std::string db = redact_db(args.history);
    doc["pairbench"]["history_write"] =
        partial ? nlohmann::json{{"db", db},
                                 {"status", "skipped"},
                                 {"reason", "a partial (interrupted) run is not recorded in the history"}}
                : nlohmann::json{{"db", db}, {"status", "pending"}};
  }
  return write_run_file(out, doc, /*to_stdout=*/partial || args.history.empty());
}

// What a whole run says after its gate, and its exit status: the history write that failed (the
// run file names it), an interruption after every process, the processes that failed.
int run_exit_status(const RunArgs& args, const RunOutcome& outcome, const nlohmann::json& pb,
                    const std::string& written, const std::string& out, bool history_failed, int gate_status) {
  if (history_failed) {
    say(Verbosity::quiet) << "pairbench: not recorded in history " << redact_db(args.history) << ": "
                          << pb["history_write"]["error"].get<std::string>() << "; kept the run file " << written
                          << ", which names the failed write; store it later with: pairbench history import " << written
                          << " --db " << redact_db(args.history) << "\n";
  }
  if (interrupt_signal()) {
    say(Verbosity::quiet) << "pairbench: interrupted by " << signal_name(interrupt_signal())
                          << " after every process had finished: the run file " << written << " is complete\n";
    return interrupted_exit_status();
  }
  if (outcome.failed_processes > 0) {
    say(Verbosity::quiet)
        << "pairbench: " << outcome.failed_processes
        << " benchmark process(es) failed, crashed, hung or were incorrect; see 'verification' above\n";
  }
  // A regression first; then not where asked (the message above said where), or not in the
  // history: nothing is lost, but whoever reads the exit status must look; then undecided.
  if (gate_status == kExitRegression) return gate_status;
  return outcome.failed_processes > 0 || written != out || history_failed ? kExitBenchmarkFailed : gate_status;
}

int cmd_run(const RunArgs& args, const RunGateArgs& gate_args, const std::string& command_line) {
  Environment env = capture_environment(PAIRBENCH_SOURCE_DIR);
  RunOptions options = run_options(args, env.fingerprint.value("machine_key", ""));
  if (args.plan_only) return print_plan_only(args, options);
  const auto experiments = select_experiments(load_catalogue(find_bench_binaries(args.bench_dir), args.profile),
                                              args.experiments, args.arms);
  apply_bench_build_facts(env, experiments);  // recorded, and the history's key, as the binaries were built
  GateArgs gate = gate_args.gate;
  const std::pair<nlohmann::json, std::string> inputs = gate_inputs(args, gate_args, env, gate);
  const nlohmann::json& baseline = inputs.first;
  const std::string& baseline_label = inputs.second;
  const std::string out = checked_run_file(args);
  if (!args.history.empty()) history_retry_s();  // a bad PAIRBENCH_HISTORY_RETRY_S fails now, not after the run
  for (const auto& w : env.warnings) say(Verbosity::quiet) << "pairbench: warning: " << w << "\n";
  apply_wall_budget(args, experiments, options);

  const std::string started = utc_stamp("%Y-%m-%dT%H:%M:%SZ");
  auto start = std::chrono::steady_clock::now();
  if (!gate_args.baseline.empty() && gate_args.budget_s > 0) {
    // The budget is the wall of the processes that measure: what never ran here is calibrated first.
    if (calibrate_first("run", {Side{"", experiments, {}, {}, {}}}, options, gate_args.budget_s) > 0)
      start = std::chrono::steady_clock::now();
    const RunPlan planned = plan_run(experiments, options);
    say_planned_look("run", planned.processes, planned.projected_wall_s, planned.unknown,
                     static_cast<int>(planned.benchmarks.size()), gate_args.budget_s);
  }
  RunOutcome outcome = run_experiments(experiments, options);
  const bool partial = outcome.interrupted_by != 0;
  // Sampling until decided: more processes of this build for the benchmarks still undecided.
  std::optional<Sampled> sampled;
  UntilDecided plan{&baseline, gate_args.budget_s, gate_args.max_repetitions, 2, gate.options};
  if (!partial && !gate_args.baseline.empty() && gate_args.budget_s > 0) {
    const auto look = [&](const RunOutcome& so_far) {
      return build_run_doc(experiments, so_far.samples, options, so_far, env, started, command_line);
    };
    sampled = sample_against_baseline(plan, experiments, options, outcome, look, start);
  }
  RunDocument built = build_run_document(experiments, outcome.samples, options, outcome, env, started, command_line);
  nlohmann::json& doc = built.doc;
  auto& pb = doc["pairbench"];
  if (sampled) pb["sampling"]["until_decided"] = until_decided_json(plan, *sampled, baseline_label);
  std::string written = write_before_history(args, doc, out, partial);
  if (partial) {
    say(Verbosity::quiet) << "pairbench: interrupted by " << signal_name(outcome.interrupted_by) << " after "
                          << outcome.completed_processes << " of " << outcome.planned_processes << " processes: kept "
                          << doc["benchmarks"].size() << " samples in "
                          << (written == "-" ? "the run file on stdout" : written)
                          << " (marked interrupted; not recorded in the history)\n";
    return interrupted_exit_status();
  }
  bool history_failed = false;
  if (!args.history.empty()) {
    pb["history_write"] = record_history(args.history, doc, written.empty() ? out : written);
    history_failed = pb["history_write"]["status"] == "failed";
    written = write_run_file(written.empty() ? out : written, doc, /*to_stdout=*/true);
  }
  print_run(built, written, outcome);
  const int gate_status = gate_args.baseline.empty()
                              ? kExitOk
                              : gate_this_run(baseline, baseline_label, doc, written, gate, gate_args, sampled, start);
  return run_exit_status(args, outcome, pb, written, out, history_failed, gate_status);
}

}  // namespace

namespace {

// run's options, in the order its --help lists them: what to run,
void add_selection_options(CLI::App& cmd, RunArgs& a) {
  cmd.add_option("--profile", a.profile)->check(CLI::IsMember(kProfiles));
  cmd.add_option("--experiments", a.experiments, "comma-separated experiment names or areas")
      ->check(name_list("experiment names or areas"));
  cmd.add_option("--arms", a.arms, "comma-separated arm names to keep")->check(name_list("arm names"));
}

// how many processes and for how long, with which counter and cache,
void add_sampling_options(CLI::App& cmd, RunArgs& a) {
  cmd.add_option("--repetitions", a.repetitions, "processes per benchmark")->check(CLI::Range(1, 1000));
  cmd.add_option("--min-time", a.min_time_s, "measured seconds per process (split into --batches)")
      ->check(finite_in(0.0001, 600.0));
  cmd.add_option("--batches", a.batches, "in-process samples per process")->check(CLI::Range(1, 1000));
  cmd.add_option("--process-budget", a.process_budget_s,
                 "seconds of time processes per benchmark: a benchmark whose processes took longer here gets "
                 "fewer, floor(budget / its process wall), at least 4 (default: nightly " +
                     std::to_string(static_cast<int>(kNightlyProcessBudgetS)) +
                     ", others none; none where --repetitions is given; 0 = none)")
      ->check(finite_in(0, 86400.0));
  cmd.add_option("--instruction-budget", a.instruction_budget_s,
                 "the same for instruction-counting processes, at least 2 (default: nightly " +
                     std::to_string(static_cast<int>(kNightlyInstructionBudgetS)) +
                     ", others none; none where --instruction-processes is given; 0 = none)")
      ->check(finite_in(0, 86400.0));
  cmd.add_option("--wall-budget", a.wall_budget_s,
                 "seconds of the whole run's processes, projected from this machine's cache: where the "
                 "per-benchmark budgets project more, the instruction budget is lowered first, then the "
                 "process budget, never below every benchmark's minimum processes (default: nightly " +
                     std::to_string(static_cast<int>(kNightlyWallBudgetS)) + ", others none; 0 = none)")
      ->check(finite_in(0, 86400.0));
  cmd.add_flag("--plan", a.plan_only,
               "print the processes the run would plan and their projected wall from this machine's "
               "calibration cache; run nothing");
  cmd.add_option("--instruction-processes", a.instruction_processes,
                 "instruction-counting processes per benchmark that declares them meaningful (0 = none)")
      ->check(CLI::Range(0, 100));
  cmd.add_option("--instructions", a.instruction_counter,
                 "instruction counter: perf, callgrind or none (default: detect)")
      ->check(CLI::IsMember({"perf", "callgrind", "none"}));
  cmd.add_option("--calibration", a.calibration,
                 "iteration-count cache (default: results/calibration/<machine_key>.json; none = this run only)")
      ->check(CLI::Validator(
          [](std::string& path) {
            return path == "auto" || path == "none" ? "" : regular_file_or_absent_problem(path);
          },
          "FILE|auto|none"));
  cmd.add_flag("--recalibrate", a.recalibrate, "calibrate every benchmark again and rewrite the cache");
  add_process_sharing_option(cmd, a.process_sharing);
  cmd.add_option("--timeout", a.timeout_s, "seconds before a bench process is killed")->check(finite_in(1.0, 86400.0));
  cmd.add_option("--seed", a.seed, "seed of the randomised order (default: from the clock)")->check(unsigned_64());
}

// where the run goes,
void add_output_options(CLI::App& cmd, RunArgs& a, bool& no_history) {
  cmd.add_option("--out", a.out, "run file (default results/run-<UTC time>-<profile>.json)")
      ->check(path_is(regular_file_or_absent_problem, "FILE"));
  cmd.add_option("--db,--history", a.history, kDbHelp + "results/history.sqlite) to append the run to")
      ->envname(kDbEnv)
      ->check(history_path());
  cmd.add_flag("--no-history", no_history, "do not append to the history database");
  cmd.add_option("--bench-dir", a.bench_dir, "directory of the bench_* binaries")
      ->check(path_is(directory_problem, "DIR"));
}

// and the gate after it (--baseline).
void add_baseline_options(CLI::App& cmd, RunGateArgs& g) {
  cmd.add_option("--baseline", g.baseline,
                 "after the run, gate it against this baseline run file, or `history`: this machine's stored "
                 "baseline as `gate` finds it (the history named by --db/PAIRBENCH_DB, else "
                 "results/baselines/<machine_key>.json); prints the gate's table and exits as gate does")
      ->check(
          CLI::Validator([](std::string& v) { return v == "history" ? "" : regular_file_problem(v); }, "FILE|history"));
  cmd.add_option("--budget", g.budget_s,
                 "with --baseline: seconds of wall time for the whole run, counted after calibrating what has "
                 "never run here (said with what it took); after the planned processes, rounds "
                 "of more processes for the time benchmarks still undecided against the baseline, cheapest "
                 "first, decided by always-valid intervals (0, the default: the planned processes only, the "
                 "fixed gate)")
      ->check(finite_in(0, 86400.0));
  cmd.add_option("--max-repetitions", g.max_repetitions,
                 "with --budget: the cap of processes per benchmark (default 30)")
      ->check(CLI::Range(2, 1000));
  cmd.add_flag("--force", g.gate.options.force, "with --baseline: compare against a run from another machine or build");
  add_gate_options(&cmd, g.gate, /*db_default=*/false, /*db_option=*/false);
}

// The checks of the parsed command line that CLI11 cannot make, then the run.
int run_command(const CLI::App& cmd, RunArgs& a, RunGateArgs& g, bool no_history, const std::string& command_line) {
  // The gate's options mean nothing without a baseline: refused, not ignored.
  if (g.baseline.empty()) {
    for (const char* name :
         {"--budget", "--max-repetitions", "--force", "--threshold", "--instructions-threshold", "--alpha",
          "--undecided", "--correction", "--moderation", "--markdown", "--junit", "--json"}) {
      if (cmd.count(name)) {
        throw UsageError(std::string(name) + ": needs --baseline FILE|history (the run to gate against)");
      }
    }
  }
  if (cmd.count("--max-repetitions") && !(g.budget_s > 0)) {
    throw UsageError("--max-repetitions: needs --budget SECONDS > 0 (the cap of the sampling)");
  }
  g.db_named = cmd.count("--db") > 0 || std::getenv(kDbEnv) != nullptr;
  if (no_history) a.history.clear();
  // The default history too, before any benchmark runs: a run must not end by writing into
  // another program's database, or by blocking on a FIFO.
  if (!a.history.empty()) {
    try {
      History::check_path(a.history);
    } catch (const NotAHistory& e) {
      throw UsageError(std::string("--db: ") + e.what());
    }
  }
  finish_up_on_interrupt();
  return cmd_run(a, g, command_line);
}

}  // namespace

Command command_run() {
  return {"run", "run experiments, write a run file, append to history, print the summary",
          "0 every benchmark ran, was verified and stored (and with --baseline: the gate passed); 1 (--baseline) a "
          "regression; 2 bad input; 3 some benchmark process crashed, hung, failed or computed a wrong answer (every "
          "other result is still written), or the run file or the history row could not go where asked (the message "
          "says where it went); 4 (--baseline) some benchmark undecided (--undecided fail); 130/143 interrupted by "
          "SIGINT/SIGTERM (what was measured is kept, marked partial)",
          "a bench binary's output, a calibration cache or a run file (run)", [](CLI::App& cmd) -> CommandAction {
            auto a = std::make_shared<RunArgs>();
            auto g = std::make_shared<RunGateArgs>();
            auto no_history = std::make_shared<bool>(false);
            a->bench_dir = default_bench_dir();
            add_selection_options(cmd, *a);
            add_sampling_options(cmd, *a);
            add_output_options(cmd, *a, *no_history);
            add_baseline_options(cmd, *g);
            return [a, g, no_history, &cmd](const std::string& command_line) {
              return run_command(cmd, *a, *g, *no_history, command_line);
            };
          }};
}

}  // namespace pairbench::harness
