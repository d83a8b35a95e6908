// `pairbench baseline update`: a run stored as this machine's baseline (file and history).
#include <filesystem>
#include <iostream>
#include <memory>

#include "harness/cli/command.h"
#include "harness/cli/gate_inputs.h"
#include "harness/cli/history_access.h"
#include "harness/cli/options.h"
#include "harness/store/file_checks.h"
#include "harness/store/history.h"
#include "harness/store/run_file.h"

namespace pairbench::harness {

namespace {

int cmd_baseline_update(const std::string& run_arg, const std::string& results_dir, const std::string& history) {
  // Everything is checked before the baseline is written: a refused history leaves no half-done update.
  check_history_argument(history, "--db");
  const std::string run = run_arg.empty() ? newest_run(results_dir) : run_arg;
  const auto doc = read_input(run, "--run");
  const std::string key = machine_key_of(doc, run);
  const std::string path = baseline_path(results_dir, key, run);
  try {
    require_regular_file_or_absent(path, "baseline");
  } catch (const FileCheckError& e) {
    throw UsageError(e.what());
  }
  // A named database holds the baseline itself (the run is stored there if it is not yet); the
  // default history only marks it, where it already holds the run, so trends can show it.
  std::unique_ptr<History> db;
  const std::string db_name = history_in_use(history, results_dir);
  if (!db_name.empty()) db = open_history_db(db_name, "--db", /*must_exist=*/!named_database(history));
  write_json_atomically(path, doc);
  std::string in_db;
  if (db) {
    std::int64_t run_id = 0;
    if (named_database(history)) {
      run_id = db->append_run(doc, run);
    } else if (const auto stored = db->run_by_uid(run_identity(doc))) {
      run_id = stored->id;
    }
    if (run_id) {
      db->set_baseline(key, run_id);
      in_db = " and " + db->name();
    }
  }
  std::cout << "baseline for machine " << key << ": " << path << in_db << " (from " << run << ")\n";
  return kExitOk;
}

}  // namespace

Command command_baseline() {
  return {"baseline", "manage this machine's baseline", "0 stored; 2 bad input", "the run file stored as baseline",
          [](CLI::App& cmd) -> CommandAction {
            cmd.require_subcommand(1);
            auto* update = cmd.add_subcommand("update", "store a run (default: the newest) as this machine's baseline");
            struct Args {
              std::string run, results_dir = "results", history = "auto";
            };
            auto a = std::make_shared<Args>();
            update->add_option("--run", a->run, "run file to store")->check(path_is(regular_file_problem, "FILE"));
            update->add_option("--results-dir", a->results_dir, "where run files and baselines/ live")
                ->check(path_is(directory_or_absent_problem, "DIR"));
            update
                ->add_option("--db,--history", a->history,
                             kDbHelp +
                                 "results/history.sqlite, marked there where it holds the run) to store the "
                                 "baseline in (none: leave it)")
                ->envname(kDbEnv)
                ->check(history_path({"auto", "none"}));
            return [a](const std::string&) { return cmd_baseline_update(a->run, a->results_dir, a->history); };
          }};
}

}  // namespace pairbench::harness
