// `pairbench run`: runs experiments, writes the run file, appends it to the history, prints the
// summary. What `run` measured is never thrown away: an interrupted run writes a partial run file,
// a run file that cannot go where asked goes to the current or the temporary directory, and a
// history row that cannot be written is retried, then named in the run file for `history import`.
#include <iostream>

#include "harness/analysis/claims.h"
#include "harness/analysis/summary.h"
#include "harness/cli/command.h"
#include "harness/cli/history_access.h"
#include "harness/cli/options.h"
#include "harness/cli/run_record.h"
#include "harness/exec/interrupt.h"
#include "harness/store/file_checks.h"
#include "harness/store/history.h"
#include "harness/store/run_file.h"
#include "pairbench/build_info.h"

namespace pairbench::harness {

namespace {

int cmd_run(const RunArgs& args, const std::string& command_line) {
  const Environment env = capture_environment(PAIRBENCH_SOURCE_DIR);
  const RunOptions options = run_options(args, env.fingerprint.value("machine_key", ""));
  const std::string out = args.out.empty() ? "results/run-" + utc_stamp("%Y%m%dT%H%M%SZ") + "-" + args.profile + ".json"
                                           : args.out;
  try {
    check_writable(out);
  } catch (const std::exception& ex) {
    throw UsageError(std::string("--out: ") + ex.what());
  }
  if (!args.history.empty()) history_retry_s();  // a bad PAIRBENCH_HISTORY_RETRY_S fails now, not after the run
  const auto experiments = select_experiments(load_catalogue(find_bench_binaries(args.bench_dir), args.profile),
                                              args.experiments, args.arms);
  for (const auto& w : env.warnings) std::cerr << "pairbench: warning: " << w << "\n";

  const std::string started = utc_stamp("%Y-%m-%dT%H:%M:%SZ");
  const RunOutcome outcome = run_experiments(experiments, options);
  RunDocument built = build_run_document(experiments, outcome.samples, options, outcome, env, started, command_line);
  nlohmann::json& doc = built.doc;
  auto& pb = doc["pairbench"];
  const bool partial = outcome.interrupted_by != 0;
  // Written before the history is tried (that may take minutes): the samples are safe first. A
  // "pending" history write that is never updated means pairbench died in between.
  if (!args.history.empty()) {
    const std::string db = redact_db(args.history);
    pb["history_write"] = partial ? nlohmann::json{{"db", db}, {"status", "skipped"},
                                                   {"reason", "a partial (interrupted) run is not recorded in the history"}}
                                  : nlohmann::json{{"db", db}, {"status", "pending"}};
  }
  std::string written = write_run_file(out, doc, /*to_stdout=*/partial || args.history.empty());
  if (partial) {
    std::cerr << "pairbench: interrupted by " << signal_name(outcome.interrupted_by) << " after "
              << outcome.completed_processes << " of " << outcome.planned_processes << " processes: kept "
              << doc["benchmarks"].size() << " samples in " << (written == "-" ? "the run file on stdout" : written)
              << " (marked interrupted; not recorded in the history)\n";
    return interrupted_exit_status();
  }
  bool history_failed = false;
  if (!args.history.empty()) {
    pb["history_write"] = record_history(args.history, doc, written.empty() ? out : written);
    history_failed = pb["history_write"]["status"] == "failed";
    written = write_run_file(written.empty() ? out : written, doc, /*to_stdout=*/true);
  }
  print_summary(std::cout, built.summary);
  print_claims(std::cout, built.claims);
  std::cout << "\nwrote " << (written == "-" ? "the run file to stdout" : written) << " (" << doc["benchmarks"].size()
            << " samples, " << outcome.wall_s << " s)\n";
  if (history_failed) {
    std::cerr << "pairbench: not recorded in history " << redact_db(args.history) << ": "
              << pb["history_write"]["error"].get<std::string>() << "; kept the run file " << written
              << ", which names the failed write; store it later with: pairbench history import " << written
              << " --db " << redact_db(args.history) << "\n";
  }
  if (interrupt_signal()) {
    std::cerr << "pairbench: interrupted by " << signal_name(interrupt_signal())
              << " after every process had finished: the run file " << written << " is complete\n";
    return interrupted_exit_status();
  }
  if (outcome.failed_processes > 0) {
    std::cerr << "pairbench: " << outcome.failed_processes
              << " benchmark process(es) failed, crashed, hung or were incorrect; see 'verification' above\n";
  }
  // Not where asked (the message above said where), or not in the history: nothing is lost, but
  // whoever reads the exit status must look.
  return outcome.failed_processes > 0 || written != out || history_failed ? kExitBenchmarkFailed : kExitOk;
}

}  // namespace

Command command_run() {
  return {"run", "run experiments, write a run file, append to history, print the summary",
          "0 every benchmark ran, was verified and stored; 2 bad input; 3 some benchmark process crashed, hung, "
          "failed or computed a wrong answer (every other result is still written), or the run file or the history "
          "row could not go where asked (the message says where it went); 130/143 interrupted by SIGINT/SIGTERM "
          "(what was measured is kept, marked partial)",
          "a bench binary's output, a calibration cache or a run file (run)", [](CLI::App& cmd) -> CommandAction {
            auto a = std::make_shared<RunArgs>();
            auto no_history = std::make_shared<bool>(false);
            a->bench_dir = default_bench_dir();
            cmd.add_option("--profile", a->profile)->check(CLI::IsMember(kProfiles));
            cmd.add_option("--experiments", a->experiments, "comma-separated experiment names or areas")
                ->check(name_list("experiment names or areas"));
            cmd.add_option("--arms", a->arms, "comma-separated arm names to keep")->check(name_list("arm names"));
            cmd.add_option("--repetitions", a->repetitions, "processes per benchmark")->check(CLI::Range(1, 1000));
            cmd.add_option("--min-time", a->min_time_s, "measured seconds per process (split into --batches)")
                ->check(finite_in(0.0001, 600.0));
            cmd.add_option("--batches", a->batches, "in-process samples per process")->check(CLI::Range(1, 1000));
            cmd.add_option("--instruction-processes", a->instruction_processes,
                           "instruction-counting processes per benchmark that declares them meaningful (0 = none)")
                ->check(CLI::Range(0, 100));
            cmd.add_option("--instructions", a->instruction_counter,
                           "instruction counter: perf, callgrind or none (default: detect)")
                ->check(CLI::IsMember({"perf", "callgrind", "none"}));
            cmd.add_option("--calibration", a->calibration,
                           "iteration-count cache (default: results/calibration/<machine_key>.json; none = this run only)")
                ->check(CLI::Validator(
                    [](std::string& path) {
                      return path == "auto" || path == "none" ? "" : regular_file_or_absent_problem(path);
                    },
                    "FILE|auto|none"));
            cmd.add_flag("--recalibrate", a->recalibrate, "calibrate every benchmark again and rewrite the cache");
            cmd.add_option("--timeout", a->timeout_s, "seconds before a bench process is killed")
                ->check(finite_in(1.0, 86400.0));
            cmd.add_option("--seed", a->seed, "seed of the randomised order (default: from the clock)")->check(unsigned_64());
            cmd.add_option("--out", a->out, "run file (default results/run-<UTC time>-<profile>.json)")
                ->check(path_is(regular_file_or_absent_problem, "FILE"));
            cmd.add_option("--db,--history", a->history, kDbHelp + "results/history.sqlite) to append the run to")
                ->envname(kDbEnv)
                ->check(history_path());
            cmd.add_flag("--no-history", *no_history, "do not append to the history database");
            cmd.add_option("--bench-dir", a->bench_dir, "directory of the bench_* binaries")
                ->check(path_is(directory_problem, "DIR"));
            return [a, no_history](const std::string& command_line) {
              if (*no_history) a->history.clear();
              // The default history too, before any benchmark runs: a run must not end by writing into
              // another program's database, or by blocking on a FIFO.
              if (!a->history.empty()) {
                try {
                  History::check_path(a->history);
                } catch (const NotAHistory& e) {
                  throw UsageError(std::string("--db: ") + e.what());
                }
              }
              finish_up_on_interrupt();
              return cmd_run(*a, command_line);
            };
          }};
}

}  // namespace pairbench::harness
