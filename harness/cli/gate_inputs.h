// What `compare`, `gate`, `baseline update`, `ab` and `selftest` share around the gate: run files
// read as gate input, the history's noise added to the gate's options, the outputs written.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "harness/cli/options.h"
#include "harness/gate/gate.h"
#include "harness/analysis/history_views.h"
#include "harness/analysis/run_inputs.h"
#include "harness/store/history.h"

namespace pairbench::harness {

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
// The history argument's path where it names one ("auto" and "none" do not).
void check_history_argument(const std::string& history, const std::string& what);
// Refuses (UsageError) --markdown/--junit/--json paths that are directories, FIFOs or devices,
// before anything is read or measured.
void check_gate_outputs(const GateArgs& args);

}  // namespace pairbench::harness
