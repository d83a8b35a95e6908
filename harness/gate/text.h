// Text the gate's decisions and all its printers share: a change as a signed percentage, a row's
// change with its interval, the name a row is shown under.
#pragma once

#include <string>
#include <vector>

#include "harness/gate/gate.h"

namespace pairbench::harness::gate_text {

// "+12.3%": one decimal, always signed (+ = worse).
std::string percent(double fraction);
// "+12.3% [+8.0%, +16.9%]"; empty where a side has no processes.
std::string change_text(const BenchmarkVerdict& v);
// The benchmark's name, marked " [instructions]" for the instruction-count row.
std::string row_name(const BenchmarkVerdict& v);
// "+-12.3%": what a time row's "unchanged" was decided against (docs/gate.md, "Resolution");
// empty for instruction rows and rows not compared.
std::string gated_text(const BenchmarkVerdict& v);
// "gated at the threshold: 40 time benchmarks; at their resolution: 88 (median +-9.1%, largest
// +-41.0% dispatch.x)"; empty where no time row was gated.
std::string gated_summary(const GateReport& r);
// "run-to-run noise of the 120 benchmarks without 3 runs of history: 2.3% (one estimate from this
// comparison)"; empty where none was estimated.
std::string pooled_run_noise_text(const GateReport& r);
// Instructions per iteration: "50,012", "3.5"; `sign`: always signed; `bound`: "<=12".
std::string count_text(double x, bool sign = false, bool bound = false);
// "functions that added the most instructions per iteration (callgrind, self): +50,000 of +50,012"
std::string function_diff_heading(const BenchmarkVerdict& v);
// The row's function diff as text lines (a heading, column names, one line per function), or its
// note; empty for a row without either. The terminal and JUnit print them.
std::vector<std::string> function_diff_lines(const BenchmarkVerdict& v);

}  // namespace pairbench::harness::gate_text
