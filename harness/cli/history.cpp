// `pairbench history` (one machine's trend and change points), `history --machines` (every
// machine with its last run), `history export` (everything the report draws of a history, format
// pairbench-history-export/1), `history import` (history_import.cpp) and `history speed`
// (history_speed.cpp), over an SQLite or PostgreSQL history.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "harness/cli/command.h"
#include "harness/cli/history_access.h"
#include "harness/cli/options.h"
#include "harness/exec/environment.h"
#include "harness/store/file_checks.h"
#include "harness/store/history.h"
#include "harness/store/run_file.h"
#include "pairbench/build_info.h"

namespace pairbench::harness {

namespace {

int cmd_history(const std::string& benchmark, const std::string& db_arg, const std::string& machine_arg, int last_runs,
                const std::string& format) {
  const auto db = open_history_db(db_arg, "--db", /*must_exist=*/true);
  std::string machine = machine_arg;
  if (machine.empty()) machine = capture_environment(PAIRBENCH_SOURCE_DIR).fingerprint["machine_key"];
  const std::vector<Trend> trends = history_trends(*db, machine, benchmark, last_runs);
  if (trends.empty()) {
    throw UsageError(benchmark.empty()
                         ? "no history for machine " + machine + " in " + db->name()
                         : "no history of '" + benchmark + "' for machine " + machine + " in " + db->name());
  }
  if (format == "json") {
    std::cout << trends_json(trends).dump(2) << "\n";
    return kExitOk;
  }
  std::cout << "history of machine " << machine << " in " << db->name() << "\n";
  for (const auto& [s, changes] : trends) {
    char line[400];
    std::snprintf(line, sizeof line, "%-64s %4zu runs  first %.4g  last %.4g %s\n", s.benchmark.c_str(),
                  s.points.size(), s.points.front().median, s.points.back().median, s.unit.c_str());
    std::cout << line;
    for (const auto& c : changes) {
      const auto& run = *s.points[c.index].run;
      std::snprintf(line, sizeof line, "    change point %s (git %.12s): %.4g -> %.4g (%+.1f%%)\n",
                    run.started_at.c_str(), run.git_sha.c_str(), c.point.before, c.point.after,
                    100 * (c.point.after / c.point.before - 1));
      std::cout << line;
    }
  }
  return kExitOk;
}

int cmd_history_machines(const std::string& db_arg, const std::string& format) {
  const auto db = open_history_db(db_arg, "--db", /*must_exist=*/true);
  const auto machines = db->machines();
  if (format == "json") {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& m : machines) {
      out.push_back({{"machine_key", m.machine_key},
                     {"machine_kind", m.machine_kind},
                     {"runs", m.runs},
                     {"baseline", db->baseline_run(m.machine_key) != 0},
                     {"last_run",
                      {{"run_id", uid_or_row(m.last_run.run_uid, m.last_run.id)},
                       {"started_at", m.last_run.started_at},
                       {"git_sha", m.last_run.git_sha}}}});
    }
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << "machines in " << db->name() << ": " << machines.size() << "\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-20s %-32s %6s  %-20s  %-12s  %s\n", "machine key", "kind", "runs", "last run",
                "git", "baseline");
  std::cout << line;
  for (const auto& m : machines) {
    std::snprintf(line, sizeof line, "%-20s %-32.32s %6lld  %-20s  %-12.12s  %s\n", m.machine_key.c_str(),
                  m.machine_kind.empty() ? "-" : m.machine_kind.c_str(), static_cast<long long>(m.runs),
                  m.last_run.started_at.c_str(), m.last_run.git_sha.c_str(),
                  db->baseline_run(m.machine_key) ? "yes" : "none");
    std::cout << line;
  }
  return kExitOk;
}

int cmd_history_export(const std::string& db_arg, int last_runs, const std::string& out) {
  try {
    require_regular_file_or_absent(out, "--out");
  } catch (const FileCheckError& e) {
    throw UsageError(e.what());
  }
  const auto db = open_history_db(db_arg, "--db", /*must_exist=*/true);
  const nlohmann::json doc = history_export(*db, last_runs);
  write_json_atomically(out, doc);
  std::cout << "exported " << doc["machines"].size() << " machine(s), " << doc["series"].size() << " series from "
            << db->name() << " to " << out << "\n";
  return kExitOk;
}

}  // namespace

namespace {

struct HistoryArgs {
  std::string benchmark, db = kDefaultHistory, machine, format = "table";
  int last = 0;
  bool machines = false;
  std::vector<std::string> import_files;
  std::string import_db = kDefaultHistory, export_db = kDefaultHistory;  // PAIRBENCH_DB fills each
  std::string export_out;
  int export_last = 0;
  std::string speed_db, speed_out;  // no PAIRBENCH_DB default: speed fills the database it is given
  int speed_runs = 10000, speed_benchmarks = 300, speed_samples = 5;
};

struct HistorySubcommands {
  CLI::App *import, *exporting, *speed;
};

// history's subcommands (import, export, speed) and their options.
HistorySubcommands add_history_subcommands(CLI::App& cmd, HistoryArgs& a) {
  const auto output = path_is(regular_file_or_absent_problem, "FILE");
  auto* import = cmd.add_subcommand(
      "import", "store run files in the history database (each run once; e.g. after a failed history write)");
  import->add_option("run_files", a.import_files, "run files")->required();
  import->add_option("--db,--history", a.import_db, kDbHelp + "results/history.sqlite)")
      ->envname(kDbEnv)
      ->check(history_path());
  auto* exporting = cmd.add_subcommand(
      "export", "write every machine's series, latest claims and change points as JSON (pairbench-history-export/1)");
  exporting->add_option("--db,--history", a.export_db, kDbHelp + "results/history.sqlite)")
      ->envname(kDbEnv)
      ->check(history_path());
  exporting->add_option("--last", a.export_last, "only each machine's last N runs")->check(CLI::Range(1, 1000000));
  exporting->add_option("--out", a.export_out, "the JSON file to write")->required()->check(output);
  auto* speed = cmd.add_subcommand(
      "speed", "time `history` and `gate` over a new history filled with synthetic runs (default 10,000 x 300)");
  speed
      ->add_option("--db", a.speed_db,
                   "a new SQLite path or an empty PostgreSQL database (default: a temporary SQLite file)")
      ->check(history_path());
  speed->add_option("--runs", a.speed_runs)->check(CLI::Range(2, 1000000));
  speed->add_option("--benchmarks", a.speed_benchmarks)->check(CLI::Range(1, 100000));
  speed->add_option("--samples", a.speed_samples, "samples (processes) per benchmark and run")
      ->check(CLI::Range(1, 1000));
  speed->add_option("--out", a.speed_out, "also write the figures as JSON")->check(output);
  return {import, exporting, speed};
}

}  // namespace

Command command_history() {
  return {"history", "trend and change points per benchmark",
          "0 shown (imported, exported, measured); 2 bad input (import: nothing stored); 3 a history write failed or "
          "its lock stayed held; 130/143 import interrupted by SIGINT/SIGTERM (what was stored stays)",
          "the history database or the run files imported", [](CLI::App& cmd) -> CommandAction {
            auto a = std::make_shared<HistoryArgs>();
            cmd.add_option("benchmark", a->benchmark, "one benchmark (default: all)");
            cmd.add_option("--db,--history", a->db, kDbHelp + "results/history.sqlite)")
                ->envname(kDbEnv)
                ->check(history_path());
            cmd.add_flag("--machines", a->machines, "list every machine key with its kind, runs and last run");
            cmd.add_option("--machine", a->machine, "machine key (default: this machine's)");
            cmd.add_option("--last", a->last, "only the last N runs")->check(CLI::Range(1, 1000000));
            cmd.add_option("--format", a->format)->check(CLI::IsMember({"table", "json"}));
            const auto [import, exporting, speed] = add_history_subcommands(cmd, *a);
            return [a, import, exporting, speed](const std::string&) {
              if (*import) {
                finish_up_on_interrupt();  // it waits on the history's lock
                return cmd_history_import(a->import_files, a->import_db);
              }
              if (*speed)
                return cmd_history_speed(a->speed_db, a->speed_runs, a->speed_benchmarks, a->speed_samples,
                                         a->speed_out);
              if (*exporting) return cmd_history_export(a->export_db, a->export_last, a->export_out);
              if (a->machines) return cmd_history_machines(a->db, a->format);
              return cmd_history(a->benchmark, a->db, a->machine, a->last, a->format);
            };
          }};
}

}  // namespace pairbench::harness
