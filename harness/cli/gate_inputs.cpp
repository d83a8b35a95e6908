// Around the gate: run files as its input, the history's noise, its outputs (gate_inputs.h).
#include "harness/cli/gate_inputs.h"

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "harness/cli/command.h"
#include "harness/cli/history_access.h"
#include "harness/gate/print.h"
#include "harness/store/file_checks.h"
#include "harness/store/json_field.h"
#include "harness/store/run_file.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

// Writes the optional outputs, prints the table, and returns 1 on a regression, 4 when undecided
// (unless --undecided pass), else 0.
int finish_gate(const GateReport& report, const GateArgs& args) {
  print_gate_table(std::cout, report);
  if (!args.markdown.empty()) write_text_atomically(args.markdown, gate_markdown(report));
  if (!args.junit.empty()) write_text_atomically(args.junit, gate_junit(report));
  if (!args.json.empty()) write_text_atomically(args.json, gate_json(report).dump(2) + "\n");
  return report.exit_status();
}

// A database named by --db (or PAIRBENCH_DB), as opposed to the default that is used where it exists.
bool named_database(const std::string& history_arg) {
  return !history_arg.empty() && history_arg != "auto" && history_arg != "none";
}

// The history a gate reads: "auto" is results/history.sqlite where it exists; "" where none.
std::string history_in_use(const std::string& history_arg, const std::string& results_dir) {
  if (history_arg == "auto") return fs::exists(results_dir + "/history.sqlite") ? results_dir + "/history.sqlite" : "";
  return history_arg == "none" ? "" : history_arg;
}

// The same for the current run's machine, from the history the gate's arguments name.
static void add_run_variance_from(GateOptions& options, const std::string& history_arg, const nlohmann::json& current,
                                  const std::string& current_path, const std::string& results_dir) {
  const std::string path = history_in_use(history_arg, results_dir);
  if (path.empty()) return;
  const std::string key = machine_key_of(current, current_path);
  const auto db = open_history_db(path, "--db", /*must_exist=*/true);
  std::string current_uid;
  if (const auto p = current.find("pairbench"); p != current.end() && p->is_object()) {
    if (const auto id = p->find("run_id"); id != p->end() && id->is_string()) current_uid = id->get<std::string>();
  }
  add_run_variance(options, *db, key, current_uid);
}

GateReport compare_or_refuse(const nlohmann::json& a, const nlohmann::json& b, const GateArgs& args,
                             const std::string& la, const std::string& lb, const std::string& results_dir) {
  GateArgs with_history = args;
  add_run_variance_from(with_history.options, args.history, b, lb, results_dir);
  try {
    return compare_runs(a, b, with_history.options, la, lb);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  } catch (const nlohmann::json::exception& e) {
    // read_run_file checks what every run file has; a field only the gate reads can still be off.
    throw UsageError(la + ", " + lb + ": unexpected JSON shape in a run file: " + json_exception_text(e));
  }
}

// The history argument's path where it names one ("auto" and "none" do not).
void check_history_argument(const std::string& history, const std::string& what) {
  if (history.empty() || history == "auto" || history == "none") return;
  try {
    History::check_path(history);
  } catch (const NotAHistory& e) {
    throw UsageError(what + ": " + e.what());
  }
}

void check_gate_outputs(const GateArgs& args) {
  try {
    if (!args.markdown.empty()) require_regular_file_or_absent(args.markdown, "--markdown");
    if (!args.junit.empty()) require_regular_file_or_absent(args.junit, "--junit");
    if (!args.json.empty()) require_regular_file_or_absent(args.json, "--json");
  } catch (const FileCheckError& e) {
    throw UsageError(e.what());
  }
}

}  // namespace pairbench::harness
