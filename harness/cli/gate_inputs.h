// What `compare`, `gate`, `baseline update`, `ab` and `selftest` share around the gate: run files
// read as gate input, the history's noise added to the gate's options, the outputs written.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "harness/cli/options.h"
#include "harness/gate/gate.h"
#include "harness/analysis/history_views.h"
#include "harness/store/history.h"

namespace pairbench::harness {

// A run file to compare; `what` names the argument ("--baseline", "current run file") for a path
// that is no file. UsageError for a bad file or one without benchmarks.
nlohmann::json read_input(const std::string& path, const std::string& what);
// The run's machine key (pairbench.environment.machine_key), a string.
std::string machine_key_of(const nlohmann::json& doc, const std::string& path);
// Writes the optional outputs, prints the table, and returns 1 on a regression, 4 when undecided
// (unless --undecided pass), else 0.
int finish_gate(const GateReport& report, const GateArgs& args);
// A database named by --db (or PAIRBENCH_DB), as opposed to the default that is used where it exists.
bool named_database(const std::string& history_arg);
// The history a gate reads: "auto" is results/history.sqlite where it exists; "" where none.
std::string history_in_use(const std::string& history_arg, const std::string& results_dir);
// compare_runs with the current run's machine's noise from the history the arguments name;
// bad input as UsageError.
GateReport compare_or_refuse(const nlohmann::json& a, const nlohmann::json& b, const GateArgs& args,
                             const std::string& la, const std::string& lb, const std::string& results_dir = "results");
// The newest run file (by name: run-<UTC time>-...) in the results directory.
std::string newest_run(const std::string& results_dir);
// results/baselines/<machine_key>.json, never outside the results directory.
std::string baseline_path(const std::string& results_dir, const std::string& machine_key, const std::string& run_path);
// This machine's baseline (machine key `key`): from the database `db` where one is named ("" = none)
// and holds it, else results_dir/baselines/<key>.json; `current` names the run it is for. UsageError
// (naming --baseline) where neither has one.
struct StoredBaseline {
  nlohmann::json doc;
  std::string label;  // the file, or "DB: baseline of machine KEY (run UID)"
};
StoredBaseline stored_baseline(const std::string& key, const std::string& db, const std::string& results_dir,
                               const std::string& current);
// The history argument's path where it names one ("auto" and "none" do not).
void check_history_argument(const std::string& history, const std::string& what);
// Refuses (UsageError) --markdown/--junit/--json paths that are directories, FIFOs or devices,
// before anything is read or measured.
void check_gate_outputs(const GateArgs& args);

}  // namespace pairbench::harness
