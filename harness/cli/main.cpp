// pairbench: runs matched experiments (bench binaries), records run files and history, compares
// runs and gates regressions. Exit status: 0 ok; 1 regression found; 2 bad input or usage;
// 3 some benchmark process crashed, hung, failed or computed a wrong answer (every other result
// is still written), or what was measured could not be stored where asked (run file in a
// fallback place, history write failed; the message says where it went); 4 the gate could not
// decide; 130 / 143 interrupted by SIGINT / SIGTERM (what was measured is kept, marked partial).
#include <CLI/CLI.hpp>
#include <charconv>
#include <cmath>
#include <iostream>
#include <sstream>

#include "harness/cli/commands.h"
#include "harness/store/file_checks.h"
#include "harness/store/history.h"
#include "harness/exec/interrupt.h"
#include "harness/store/json_field.h"

using namespace pairbench::harness;

namespace {

// Every floating-point option: a finite number in [lo, hi]. CLI11's Range lets NaN through (each
// comparison with NaN is false), so `--alpha nan` once switched the gate off silently.
CLI::Validator finite_in(double lo, double hi) {
  std::ostringstream bounds;
  bounds << "[" << lo << ", " << hi << "]";
  const std::string expected = "a finite number in " + bounds.str();
  return CLI::Validator(
      [lo, hi, expected](std::string& text) -> std::string {
        double v = 0;
        const char* end = text.data() + text.size();
        const auto [stop, ec] = std::from_chars(text.data(), end, v);
        if (ec != std::errc() || stop != end || !std::isfinite(v) || v < lo || v > hi) {
          return "expected " + expected + ", got " + quoted_for_message(text);
        }
        return "";
      },
      "FLOAT in " + bounds.str());
}

// A seed: decimal digits that fit 64 bits (CLI11 alone takes "-1" as 2^64 - 1).
CLI::Validator unsigned_64() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::uint64_t v = 0;
        const char* end = text.data() + text.size();
        const auto [stop, ec] = std::from_chars(text.data(), end, v);
        if (text.empty() || ec != std::errc() || stop != end) {
          return "expected a whole number from 0 to 18446744073709551615, got " + quoted_for_message(text);
        }
        return "";
      },
      "UINT64");
}

// Comma-separated names: an empty item ("," or "a,,b") used to select nothing, run nothing and exit 0.
CLI::Validator name_list(const std::string& of_what) {
  return CLI::Validator(
      [of_what](std::string& text) -> std::string {
        std::string item;
        for (const char c : text + ",") {
          if (c != ',') {
            if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
              return "expected comma-separated " + of_what + " without spaces, got " + quoted_for_message(text);
            }
            item += c;
          } else if (item.empty()) {
            return "empty name in " + quoted_for_message(text) + " (expected comma-separated " + of_what + ")";
          } else {
            item.clear();
          }
        }
        return "";
      },
      "NAME[,NAME...]");
}

// A path check from file_checks.h as a validator: "--opt: PATH: is a FIFO (named pipe), expected ...".
CLI::Validator path_is(std::string (*problem)(const std::string&), const std::string& description) {
  return CLI::Validator([problem](std::string& path) { return problem(path); }, description);
}

// A history given by --db (or PAIRBENCH_DB): an SQLite path, absent (created on first use) or a
// pairbench history, or a postgresql:// URL (checked for syntax here, for identity on open);
// `keywords` ("auto", "none") pass as they are.
CLI::Validator history_path(std::vector<std::string> keywords = {}) {
  return CLI::Validator(
      [keywords](std::string& path) -> std::string {
        if (std::find(keywords.begin(), keywords.end(), path) != keywords.end()) return "";
        try {
          History::check_path(path);
        } catch (const std::exception& e) {
          return e.what();
        }
        return "";
      },
      "HISTORY");
}

// What JSON the chosen command reads, for an error that escaped every field check.
std::string json_input_of(const CLI::App& app) {
  const auto chosen = app.get_subcommands();
  const std::string command = chosen.empty() ? "" : chosen.front()->get_name();
  if (command == "compare" || command == "gate") return "the run files compared";
  if (command == "baseline") return "the run file stored as baseline";
  if (command == "history") return "the history database or the run files imported";
  if (command == "report" || command == "summarise") return "the run file reported";
  if (command == "list" || command == "env") return "a bench binary's catalogue or the environment";
  return "a bench binary's output, a calibration cache or a run file (" + command + ")";
}

// The environment variable that names the history where --db is not given (contract: nightly
// jobs of a fleet point every command at one shared database).
constexpr const char* kDbEnv = "PAIRBENCH_DB";
const std::string kDbHelp = "history: an SQLite path or a postgresql:// URL (default: $PAIRBENCH_DB, else ";

// `db_default`: whether PAIRBENCH_DB names the history where --db is absent (gate yes; compare,
// ab and selftest read a history only when one is named on their command line).
void add_gate_options(CLI::App* cmd, GateArgs& gate, bool db_default = false) {
  cmd->add_option("--threshold", gate.options.threshold, "relative slowdown that counts as a regression (0.05 = 5%)")
      ->check(finite_in(0.0001, 10.0));
  cmd->add_option("--instructions-threshold", gate.options.instructions_threshold,
                  "relative increase of instructions per iteration that counts (0.01 = 1%)")
      ->check(finite_in(0.0001, 10.0));
  cmd->add_option("--alpha", gate.options.alpha, "whole-gate false-regression level")->check(finite_in(1e-9, 0.5));
  // Typed options read as text: IsMember has refused any other name before the callback runs.
  cmd->add_option_function<std::string>(
         "--undecided", [&gate](const std::string& s) { gate.options.undecided = *undecided_policy_from_string(s); },
         "exit status when some benchmark could not be decided: fail (4, default) or pass (0)")
      ->check(CLI::IsMember({"pass", "fail"}));
  cmd->add_option_function<std::string>(
         "--correction", [&gate](const std::string& s) { gate.options.correction = *correction_from_string(s); },
         "holm (family-wise) or bh (false discovery rate)")
      ->check(CLI::IsMember({"holm", "bh"}));
  cmd->add_option_function<std::string>(
         "--moderation", [&gate](const std::string& s) { gate.options.moderation = *moderation_from_string(s); },
         "eb: borrow noise from every benchmark (empirical Bayes), none: each benchmark alone")
      ->check(CLI::IsMember({"eb", "none"}));
  auto* db = cmd->add_option("--db,--history", gate.history,
                             "history database (an SQLite path or a postgresql:// URL) for each benchmark's run-to-run "
                             "noise and, for gate, this machine's baseline (gate default: $PAIRBENCH_DB, else "
                             "results/history.sqlite where it exists; none to leave it out)")
                 ->check(history_path({"auto", "none"}));
  if (db_default) db->envname(kDbEnv);
  const auto output = path_is(regular_file_or_absent_problem, "FILE");
  cmd->add_option("--markdown", gate.markdown, "also write a Markdown report (CI job summary)")->check(output);
  cmd->add_option("--junit", gate.junit, "also write JUnit XML (CI test view)")->check(output);
  cmd->add_option("--json", gate.json, "also write the comparison as JSON")->check(output);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pairbench: matched performance experiments (baseline vs treatment arms)"};
  app.require_subcommand(1);
  std::string bench_dir = default_bench_dir();
  std::string results_dir = "results";

  auto* list = app.add_subcommand("list", "experiments, arms, grids, claim ids, and whether each arm can run here");
  std::string list_format = "table", list_profile = "quick";
  std::string list_update, list_check;
  list->add_option("--format", list_format,
                   "table, json, markdown (the README's experiment table), claims-markdown (docs/claims.md) or "
                   "claims-json (the claims catalogue compiled in, as plots/report.py reads it with --claims)")
      ->check(CLI::IsMember({"table", "json", "markdown", "claims-markdown", "claims-json"}));
  list->add_option("--profile", list_profile)->check(CLI::IsMember({"quick", "nightly", "full"}));
  const auto markdown_file = path_is(regular_file_problem, "FILE");
  list->add_option("--update", list_update, "with --format markdown: rewrite FILE's experiment table between its markers")
      ->check(markdown_file);
  list->add_option("--check", list_check, "with --format markdown: exit 1 when FILE's experiment table is stale")
      ->check(markdown_file)
      ->excludes("--update");
  const auto directory = path_is(directory_problem, "DIR");
  list->add_option("--bench-dir", bench_dir, "directory of the bench_* binaries")->check(directory);

  auto* run = app.add_subcommand("run", "run experiments, write a run file, append to history, print the summary");
  RunArgs run_args;
  run->add_option("--profile", run_args.profile)->check(CLI::IsMember({"quick", "nightly", "full"}));
  run->add_option("--experiments", run_args.experiments, "comma-separated experiment names or areas")
      ->check(name_list("experiment names or areas"));
  run->add_option("--arms", run_args.arms, "comma-separated arm names to keep")->check(name_list("arm names"));
  run->add_option("--repetitions", run_args.repetitions, "processes per benchmark")->check(CLI::Range(1, 1000));
  run->add_option("--min-time", run_args.min_time_s, "measured seconds per process (split into --batches)")
      ->check(finite_in(0.0001, 600.0));
  run->add_option("--batches", run_args.batches, "in-process samples per process")->check(CLI::Range(1, 1000));
  run->add_option("--instruction-processes", run_args.instruction_processes,
                  "instruction-counting processes per benchmark that declares them meaningful (0 = none)")
      ->check(CLI::Range(0, 100));
  run->add_option("--instructions", run_args.instruction_counter, "instruction counter: perf, callgrind or none (default: detect)")
      ->check(CLI::IsMember({"perf", "callgrind", "none"}));
  run->add_option("--calibration", run_args.calibration,
                  "iteration-count cache (default: results/calibration/<machine_key>.json; none = this run only)")
      ->check(CLI::Validator(
          [](std::string& path) { return path == "auto" || path == "none" ? "" : regular_file_or_absent_problem(path); },
          "FILE|auto|none"));
  run->add_flag("--recalibrate", run_args.recalibrate, "calibrate every benchmark again and rewrite the cache");
  run->add_option("--timeout", run_args.timeout_s, "seconds before a bench process is killed")
      ->check(finite_in(1.0, 86400.0));
  run->add_option("--seed", run_args.seed, "seed of the randomised order (default: from the clock)")->check(unsigned_64());
  const auto output = path_is(regular_file_or_absent_problem, "FILE");
  run->add_option("--out", run_args.out, "run file (default results/run-<UTC time>-<profile>.json)")->check(output);
  run->add_option("--db,--history", run_args.history, kDbHelp + "results/history.sqlite) to append the run to")
      ->envname(kDbEnv)
      ->check(history_path());
  bool no_history = false;
  run->add_flag("--no-history", no_history, "do not append to the history database");
  run->add_option("--bench-dir", bench_dir, "directory of the bench_* binaries")->check(directory);

  auto* env = app.add_subcommand("env", "the environment fingerprint and its warnings");
  std::string env_format = "text";
  env->add_option("--format", env_format)->check(CLI::IsMember({"text", "json"}));

  auto* compare = app.add_subcommand("compare", "compare two run files benchmark by benchmark");
  std::string compare_a, compare_b;
  GateArgs compare_args;
  const auto input = path_is(regular_file_problem, "FILE");
  compare->add_option("baseline", compare_a, "baseline run file")->required()->check(input);
  compare->add_option("current", compare_b, "current run file")->required()->check(input);
  compare->add_flag("--force", compare_args.options.force, "compare runs from different machines or builds");
  add_gate_options(compare, compare_args);

  auto* gate = app.add_subcommand("gate", "fail (exit 1) when the current run regressed against the baseline");
  std::string gate_baseline, gate_current;
  GateArgs gate_args;
  gate_args.history = "auto";
  gate->add_option("--baseline", gate_baseline, "baseline run file (default: this machine's stored baseline)")
      ->check(input);
  gate->add_option("--current", gate_current, "current run file (default: the newest results/run-*.json)")->check(input);
  const auto new_or_directory = path_is(directory_or_absent_problem, "DIR");
  gate->add_option("--results-dir", results_dir, "where run files and baselines/ live")->check(new_or_directory);
  gate->add_flag("--force", gate_args.options.force, "compare runs from different machines or builds");
  std::string gate_commit;
  auto* commit_option = gate->add_option("--commit", gate_commit,
                                         "gate every machine's latest run of this commit in --db against that "
                                         "machine's baseline there: one table of machines");
  commit_option->excludes("--baseline")->excludes("--current");
  add_gate_options(gate, gate_args, /*db_default=*/true);

  auto* baseline = app.add_subcommand("baseline", "manage this machine's baseline");
  baseline->require_subcommand(1);
  auto* baseline_update = baseline->add_subcommand("update", "store a run (default: the newest) as this machine's baseline");
  std::string baseline_run, baseline_history = "auto";
  baseline_update->add_option("--run", baseline_run, "run file to store")->check(input);
  baseline_update->add_option("--results-dir", results_dir, "where run files and baselines/ live")->check(new_or_directory);
  baseline_update
      ->add_option("--db,--history", baseline_history,
                   kDbHelp + "results/history.sqlite, marked there where it holds the run) to store the baseline in "
                             "(none: leave it)")
      ->envname(kDbEnv)
      ->check(history_path({"auto", "none"}));

  auto* history = app.add_subcommand("history", "trend and change points per benchmark");
  std::string history_benchmark, history_db = kDefaultHistory, history_machine, history_format = "table";
  int history_last = 0;
  bool history_machines = false;
  history->add_option("benchmark", history_benchmark, "one benchmark (default: all)");
  history->add_option("--db,--history", history_db, kDbHelp + "results/history.sqlite)")
      ->envname(kDbEnv)
      ->check(history_path());
  history->add_flag("--machines", history_machines, "list every machine key with its kind, runs and last run");
  history->add_option("--machine", history_machine, "machine key (default: this machine's)");
  history->add_option("--last", history_last, "only the last N runs")->check(CLI::Range(1, 1000000));
  history->add_option("--format", history_format)->check(CLI::IsMember({"table", "json"}));
  auto* history_import = history->add_subcommand(
      "import", "store run files in the history database (each run once; e.g. after a failed history write)");
  std::vector<std::string> import_files;
  history_import->add_option("run_files", import_files, "run files")->required();
  std::string import_db = kDefaultHistory, export_db = kDefaultHistory;  // each its own: PAIRBENCH_DB fills each
  history_import->add_option("--db,--history", import_db, kDbHelp + "results/history.sqlite)")
      ->envname(kDbEnv)
      ->check(history_path());
  auto* history_export = history->add_subcommand(
      "export", "write every machine's series, latest claims and change points as JSON (pairbench-history-export/1)");
  std::string export_out;
  int export_last = 0;
  history_export->add_option("--db,--history", export_db, kDbHelp + "results/history.sqlite)")
      ->envname(kDbEnv)
      ->check(history_path());
  history_export->add_option("--last", export_last, "only each machine's last N runs")->check(CLI::Range(1, 1000000));
  history_export->add_option("--out", export_out, "the JSON file to write")->required()->check(output);

  auto* history_speed = history->add_subcommand(
      "speed", "time `history` and `gate` over a new history filled with synthetic runs (default 10,000 x 300)");
  std::string speed_db, speed_out;  // no PAIRBENCH_DB default: this fills the database it is given
  int speed_runs = 10000, speed_benchmarks = 300, speed_samples = 5;
  history_speed->add_option("--db", speed_db, "a new SQLite path or an empty PostgreSQL database (default: a temporary SQLite file)")
      ->check(history_path());
  history_speed->add_option("--runs", speed_runs)->check(CLI::Range(2, 1000000));
  history_speed->add_option("--benchmarks", speed_benchmarks)->check(CLI::Range(1, 100000));
  history_speed->add_option("--samples", speed_samples, "samples (processes) per benchmark and run")->check(CLI::Range(1, 1000));
  history_speed->add_option("--out", speed_out, "also write the figures as JSON")->check(output);

  auto* ab = app.add_subcommand("ab", "run two builds interleaved process by process and compare them");
  AbArgs ab_args;
  ab->add_option("--baseline-build", ab_args.baseline_build, "build directory of the baseline (e.g. main)")->required();
  ab->add_option("--candidate-build", ab_args.candidate_build, "build directory of the candidate")->required();
  ab->add_option("--experiments", ab_args.experiments, "comma-separated experiment names or areas")
      ->check(name_list("experiment names or areas"));
  ab->add_option("--arms", ab_args.arms, "comma-separated arm names to keep")->check(name_list("arm names"));
  ab->add_option("--profile", ab_args.profile)->check(CLI::IsMember({"quick", "nightly", "full"}));
  ab->add_option("--repetitions", ab_args.repetitions, "processes per benchmark and side")->check(CLI::Range(2, 1000));
  ab->add_option("--min-time", ab_args.min_time_s)->check(finite_in(0.001, 600.0));
  ab->add_option("--timeout", ab_args.timeout_s)->check(finite_in(1.0, 86400.0));
  ab->add_option("--seed", ab_args.seed)->check(unsigned_64());
  ab->add_option("--pairing", ab_args.pairing,
                 "duet: both sides' processes at once, each pinned to its own core, cores swapped each round; "
                 "sequential: one process at a time")
      ->check(CLI::IsMember({"duet", "sequential"}));
  ab->add_option("--out-dir", ab_args.out_dir, "where baseline.json and candidate.json go (default results/ab-<time>)")
      ->check(new_or_directory);
  add_gate_options(ab, ab_args.gate);

  auto* selftest = app.add_subcommand("selftest", "measure the gate's false-alarm and detection rates on this machine");
  SelftestArgs selftest_args;
  selftest->add_option("--experiments", selftest_args.experiments, "comma-separated experiment names or areas")
      ->check(name_list("experiment names or areas"));
  selftest->add_option("--arms", selftest_args.arms, "comma-separated arm names to keep")->check(name_list("arm names"));
  selftest->add_option("--profile", selftest_args.profile)->check(CLI::IsMember({"quick", "nightly", "full"}));
  selftest->add_option("--trials", selftest_args.trials, "A/A gates drawn (planted: half as many per level)")
      ->check(CLI::Range(1, 100000));
  selftest->add_option("--repetitions", selftest_args.repetitions, "processes per benchmark and side")
      ->check(CLI::Range(2, 1000));
  selftest->add_option("--instruction-processes", selftest_args.instruction_processes,
                       "instruction-counting processes per benchmark and side")
      ->check(CLI::Range(2, 100));
  selftest->add_option("--min-time", selftest_args.min_time_s)->check(finite_in(0.0001, 600.0));
  selftest->add_option("--seed", selftest_args.seed, "seed of the gate draws")->check(unsigned_64());
  selftest->add_option("--runs", selftest_args.baseline_runs, "runs of the same build before the planted run")
      ->check(CLI::Range(2, 50));
  selftest->add_option("--runs-dir", selftest_args.runs_dir, "where the run files go (default results/selftest)")
      ->check(new_or_directory);
  selftest->add_flag("--from", selftest_args.from_runs, "analyse the run files already in --runs-dir; run nothing");
  selftest->add_flag("--pairing-study", selftest_args.pairing_study,
                     "measure ab's duet pairing against sequential interleaving (noise, A/A, a planted 5 %)");
  selftest->add_option("--out", selftest_args.out, "write the result as JSON")->check(output);
  selftest->add_option("--bench-dir", bench_dir, "directory of the bench_* binaries")->check(directory);
  add_gate_options(selftest, selftest_args.gate);

  auto* report = app.add_subcommand("report", "render the plot report (plots/report.py) from a run file");
  std::string report_run, report_history, report_out = "results/report";
  report->add_option("--run", report_run, "run file")->required()->check(input);
  report->add_option("--db,--history", report_history,
                     "history (an SQLite path or a postgresql:// URL; default: $PAIRBENCH_DB, else none): its "
                     "export (the last 100 runs per machine) gives the trend figures and the cross-machine page")
      ->envname(kDbEnv)
      ->check(history_path());
  report->add_option("-o,--out", report_out, "output directory")->check(new_or_directory);
  double report_timeout_s = 300;
  report->add_option("--timeout", report_timeout_s, "seconds before plots/report.py is killed with its process group")
      ->check(finite_in(0.001, 86400.0));

  auto* summarise = app.add_subcommand(
      "summarise", "the claims' verdicts of a run file (judged here where the file has none); --out: the file with them");
  std::string summarise_run, summarise_out;
  summarise->add_option("--run", summarise_run, "run file")->required()->check(input);
  summarise->add_option("--out", summarise_out, "write the run file with pairbench.claims here (may be --run)")
      ->check(output);
  summarise->add_option("--bench-dir", bench_dir, "bench_* binaries whose declared checks judge an old run file")
      ->check(directory);

  if (argc > 1 && argv[1][0] != '-') {
    const std::string command = argv[1];
    bool known = false;
    for (const auto* sub : app.get_subcommands({})) known = known || sub->get_name() == command;
    if (!known) {
      std::cerr << "pairbench: unknown command '" << command
                << "' (list, run, env, compare, gate, baseline, history, ab, selftest, report, summarise; see --help)\n";
      return kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "pairbench: " << e.what() << " (see --help)\n";
    return kExitUsage;
  }
  // Commands that measure or wait on a child keep what they have on SIGINT/SIGTERM and exit
  // 130/143; the others end at once. Either way no child process is left running.
  install_interrupt_handlers(*run || *ab || *selftest || *report || *history_import ? OnInterrupt::kFinishUp
                                                                                   : OnInterrupt::kExit);
  std::string command_line;
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);
  try {
    if (*list) return cmd_list(bench_dir, list_profile, list_format, list_update, list_check);
    if (*env) return cmd_env(env_format);
    if (*run) {
      run_args.bench_dir = bench_dir;
      if (no_history) run_args.history.clear();
      // The default history too, before any benchmark runs: a run must not end by writing into
      // another program's database, or by blocking on a FIFO.
      if (!run_args.history.empty()) {
        try {
          History::check_path(run_args.history);
        } catch (const NotAHistory& e) {
          throw UsageError(std::string("--db: ") + e.what());
        }
      }
      return cmd_run(run_args, command_line);
    }
    if (*compare) return cmd_compare(compare_a, compare_b, compare_args);
    if (*gate && *commit_option) return cmd_gate_commit(gate_commit, results_dir, gate_args);
    if (*gate) return cmd_gate(gate_baseline, gate_current, results_dir, gate_args);
    if (*baseline_update) return cmd_baseline_update(baseline_run, results_dir, baseline_history);
    if (*history_import) return cmd_history_import(import_files, import_db);
    if (*history_speed) return cmd_history_speed(speed_db, speed_runs, speed_benchmarks, speed_samples, speed_out);
    if (*history_export) return cmd_history_export(export_db, export_last, export_out);
    if (*history && history_machines) return cmd_history_machines(history_db, history_format);
    if (*history) return cmd_history(history_benchmark, history_db, history_machine, history_last, history_format);
    if (*ab) return exit_status_after_interrupt(cmd_ab(ab_args, command_line));
    if (*selftest) return exit_status_after_interrupt(cmd_selftest(selftest_args, bench_dir));
    if (*report) return cmd_report(report_run, report_history, report_out, report_timeout_s);
    if (*summarise) return cmd_summarise(summarise_run, summarise_out, bench_dir);
  } catch (const HistoryBusy& e) {
    // The history's lock stayed held, or its server could not be reached: nothing was changed.
    std::cerr << "pairbench: " << e.what() << "\n";
    return interrupt_signal() ? interrupted_exit_status() : kExitBenchmarkFailed;
  } catch (const nlohmann::json::exception& e) {
    // A field read without a check somewhere: never nlohmann's "[json.exception...]" text.
    std::cerr << "pairbench: internal: unexpected JSON shape in " << json_input_of(app) << " ("
              << json_exception_text(e) << ")\n";
    return interrupt_signal() ? interrupted_exit_status() : kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "pairbench: " << e.what() << "\n";
    return interrupt_signal() ? interrupted_exit_status() : kExitUsage;
  }
  return kExitUsage;
}
