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

// `what` names the argument ("--baseline", "current run file") for a path that is no file.
nlohmann::json read_input(const std::string& path, const std::string& what) {
  nlohmann::json doc;
  try {
    require_regular_file(path, what);  // a FIFO would block the reader forever
    doc = read_run_file(path);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(path + ": unexpected JSON shape: " + json_exception_text(e));
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (doc["benchmarks"].empty()) throw UsageError(path + ": benchmarks: empty (no benchmark produced a sample)");
  return doc;
}

// The run's machine key (pairbench.environment.machine_key), a string.
std::string machine_key_of(const nlohmann::json& doc, const std::string& path) {
  try {
    return JsonField(doc, path)["pairbench"]["environment"]["machine_key"].string();
  } catch (const JsonFieldError& e) {
    throw UsageError(e.what());
  }
}

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

// The newest run file (by name: run-<UTC time>-...) in the results directory.
std::string newest_run(const std::string& results_dir) {
  std::string best;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(results_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("run-", 0) == 0 && entry.path().extension() == ".json" && entry.path().string() > best) {
      best = entry.path().string();
    }
  }
  if (best.empty()) throw UsageError("--current: no run-*.json in " + results_dir + " (run `pairbench run` first)");
  return best;
}

// results/baselines/<machine_key>.json. The key comes from a run file (`run_path`): a key such as
// "../../x" must not place the baseline outside the results directory.
std::string baseline_path(const std::string& results_dir, const std::string& machine_key, const std::string& run_path) {
  try {
    return keyed_path_under(results_dir + "/baselines", machine_key, ".json",
                            run_path + ": pairbench.environment.machine_key");
  } catch (const FileCheckError& e) {
    throw UsageError(e.what());
  }
}

StoredBaseline stored_baseline(const std::string& key, const std::string& db_name, const std::string& results_dir,
                               const std::string& current) {
  // Same machine key as the current run (CPU, GPU, driver, build): from the database where one is
  // named and holds it, else from results/baselines/.
  std::string in_db;
  if (!db_name.empty()) {
    const auto db = open_history_db(db_name, "--db", /*must_exist=*/true);
    if (const std::int64_t id = db->baseline_run(key)) {
      const auto info = db->run(id);
      const std::string label =
          db->name() + ": baseline of machine " + key + " (run " + (info ? info->run_uid : "?") + ")";
      if (auto doc = db->run_document(id)) return {std::move(*doc), label};
      in_db = "; " + label + " was stored without its run file (before schema 2)";
    }
    if (in_db.empty()) in_db = " or in " + db->name();
  }
  const std::string path = baseline_path(results_dir, key, current);
  if (!fs::exists(path)) {
    throw UsageError("--baseline: no baseline for machine " + key + " (" + path + in_db +
                     "); store one with `pairbench baseline update`");
  }
  return {read_input(path, "--baseline"), path};
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

// From the last 30 runs of machine `key` (those benchmarks with at least 3 runs), leaving out the run
// being gated (`exclude_run_uid`): its own change would widen the noise it is judged against (a
// planted 10 % in 4 runs of history doubled the run-to-run estimate and hid itself).
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
