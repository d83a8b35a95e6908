// Text shared by the gate's notes and printers, and the headline every output opens with.
#include "harness/gate/text.h"

#include <cstdio>

namespace pairbench::harness {
namespace gate_text {

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100 * fraction);
  return buf;
}

std::string change_text(const BenchmarkVerdict& v) {
  if (v.baseline_samples == 0 || v.current_samples == 0) return "";
  return percent(v.slowdown) + " [" + percent(v.slowdown_low) + ", " + percent(v.slowdown_high) + "]";
}

std::string row_name(const BenchmarkVerdict& v) {
  return v.instrument == Instrument::time ? v.benchmark : v.benchmark + " [instructions]";
}

}  // namespace gate_text

std::string GateReport::headline() const {
  auto plural = [](int n, const char* one, const char* many) { return std::to_string(n) + " " + (n == 1 ? one : many); };
  return plural(count(Verdict::regression), "regression", "regressions") + ", " +
         std::to_string(count(Verdict::undecided)) + " undecided, " + std::to_string(count(Verdict::unchanged)) +
         " unchanged (+ " + plural(count(Verdict::improvement), "improvement", "improvements") + ", " +
         std::to_string(count(Verdict::broken)) + " broken, " + std::to_string(count(Verdict::new_)) + " new, " +
         std::to_string(count(Verdict::missing)) + " missing)";
}

}  // namespace pairbench::harness
