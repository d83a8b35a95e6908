// Text the gate's decisions and all its printers share: a change as a signed percentage, a row's
// change with its interval, the name a row is shown under.
#pragma once

#include <string>

#include "harness/gate/gate.h"

namespace pairbench::harness::gate_text {

// "+12.3%": one decimal, always signed (+ = worse).
std::string percent(double fraction);
// "+12.3% [+8.0%, +16.9%]"; empty where a side has no processes.
std::string change_text(const BenchmarkVerdict& v);
// The benchmark's name, marked " [instructions]" for the instruction-count row.
std::string row_name(const BenchmarkVerdict& v);

}  // namespace pairbench::harness::gate_text
