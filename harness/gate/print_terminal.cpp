// The gate as the table `compare`, `gate` and `ab` print: headline, warnings, one line per row,
// the settings it was decided with, and the outcome last, where a CI log ends.
#include <cstdio>
#include <ostream>

#include "harness/gate/print.h"
#include "harness/gate/text.h"

namespace pairbench::harness {
namespace {

void print_outcome(std::ostream& out, const GateReport& r) {
  switch (r.outcome()) {
    case GateOutcome::regression:
      out << "GATE FAILED: regression\n";
      break;
    case GateOutcome::undecided:
      out << "GATE UNDECIDED: "
          << (r.partial_runs.empty()
                  ? std::to_string(r.count(Verdict::undecided)) + " benchmark(s) could not be decided"
                  : std::string("a partial (interrupted) run cannot pass"))
          << (r.options.undecided == UndecidedPolicy::pass ? " (passing by --undecided pass)"
                                                           : " (exit 4; --undecided pass to accept)")
          << "\n";
      break;
    case GateOutcome::pass:
      out << "gate passed\n";
      break;
  }
}

}  // namespace

void print_gate_table(std::ostream& out, const GateReport& r) {
  using gate_text::change_text, gate_text::row_name;
  out << r.headline() << "\n";
  if (const std::string moved = r.run_shift.text(); !moved.empty()) out << "WHOLE RUN MOVED: " << moved << "\n";
  out << "baseline: " << r.baseline_label << "\ncurrent:  " << r.current_label << "\n";
  if (r.forced) {
    out << "WARNING: forced comparison of different machines or builds:\n";
    for (const auto& d : r.fingerprint_differences) out << "  " << d << "\n";
  }
  for (const auto& p : r.partial_runs) {
    out << "PARTIAL RUN: " << p << "; benchmarks it did not reach are missing, and the gate cannot pass\n";
  }
  char line[800];
  char change_header[48];
  std::snprintf(change_header, sizeof change_header, "change [%g%% CI] (+ = worse)", 100 * r.options.interval_level);
  std::snprintf(line, sizeof line, "%-70s %-11s %-28s %9s %7s %8s  %s\n", "benchmark", "verdict", change_header,
                "p (adj)", "noise", "gated", "note");
  out << line;
  for (const auto& v : r.rows) {
    char p[32] = "", noise[32] = "";
    if (v.baseline_samples && v.current_samples) {
      if (v.instrument == Instrument::time) std::snprintf(p, sizeof p, "%.2g", v.p_adjusted);
      std::snprintf(noise, sizeof noise, "%.1f%%", 100 * v.noise_cv);
    }
    std::snprintf(line, sizeof line, "%-70s %-11s %-28s %9s %7s %8s  %s\n", row_name(v).c_str(),
                  to_string(v.verdict).c_str(), change_text(v).c_str(), p, noise, gate_text::gated_text(v).c_str(),
                  v.note.c_str());
    out << line;
    // Where it changed: a few indented lines under a regression or improvement.
    for (const std::string& l : gate_text::function_diff_lines(v)) out << "    " << l << "\n";
  }
  std::snprintf(line, sizeof line,
                "\nthresholds: time %.1f%% (or the experiment's), instructions %.1f%%; false regressions: %s at %.3g "
                "over the gate; noise prior: %d benchmarks, df0 %.3g\n",
                100 * r.options.threshold, 100 * r.options.instructions_threshold,
                to_string(r.options.correction).c_str(), r.options.alpha, r.prior.count, r.prior.df);
  out << line;
  out << "run-to-run noise: "
      << (r.options.run_variance_source.empty()
              ? "none known (no history): the intervals hold process-to-process noise only"
              : r.options.run_variance_source)
      << "\n";
  if (const std::string pooled = gate_text::pooled_run_noise_text(r); !pooled.empty()) out << pooled << "\n";
  if (const std::string gated = gate_text::gated_summary(r); !gated.empty()) out << gated << "\n";
  out << r.headline() << "\n";
  print_outcome(out, r);
}

}  // namespace pairbench::harness
