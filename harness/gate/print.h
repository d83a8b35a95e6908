// The gate's four outputs, one printer each (print_terminal.cpp, print_markdown.cpp,
// print_junit.cpp, print_json.cpp): each only writes a GateReport that compare_runs has decided.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "harness/gate/gate.h"

namespace pairbench::harness {

// The table `compare`, `gate` and `ab` print on stdout, closed by the gate's outcome.
void print_gate_table(std::ostream& out, const GateReport& report);
// For a CI job summary: what needs attention first, every benchmark folded below.
std::string gate_markdown(const GateReport& report);
// For a CI test view: one testcase per row; regression and broken fail, undecided, missing and new skip.
std::string gate_junit(const GateReport& report);
// Every field of the report; non-finite numbers as null.
nlohmann::json gate_json(const GateReport& report);
// A row's function diff as gate_json writes it (`function_diff`): what bisect passes on.
nlohmann::json function_diff_json(const std::vector<FunctionChange>& functions);

}  // namespace pairbench::harness
