// The gate as Markdown for a CI job summary: the outcome as a heading, the rows that need
// attention, then every row folded away.
#include <cstdio>
#include <sstream>
#include <vector>

#include "harness/gate/print.h"
#include "harness/gate/text.h"

namespace pairbench::harness {
namespace {

// Backslash before what Markdown (or GitHub's HTML filter) would read as markup or a cell border.
std::string md_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|' || c == '<' || c == '>' || c == '*' || c == '_' || c == '`') out += '\\';
    out += c;
  }
  return out;
}

std::string outcome_text(const GateReport& r) {
  switch (r.outcome()) {
    case GateOutcome::regression:
      return "**failed: regression**";
    case GateOutcome::undecided:
      return r.options.undecided == UndecidedPolicy::pass ? "**undecided** (passing by policy)" : "**undecided**";
    case GateOutcome::pass:
      break;
  }
  return "passed";
}

void write_table(std::ostringstream& md, const std::vector<const BenchmarkVerdict*>& rows, double interval_level) {
  md << "| benchmark | verdict | change [" << 100 * interval_level
     << "% CI] (+ = worse) | p (adjusted) | noise | gated at | note |\n"
        "|---|---|---|---|---|---|---|\n";
  for (const auto* v : rows) {
    char p[32] = "", noise[32] = "";
    if (v->baseline_samples && v->current_samples) {
      if (v->instrument == Instrument::time) std::snprintf(p, sizeof p, "%.2g", v->p_adjusted);
      std::snprintf(noise, sizeof noise, "%.1f %%", 100 * v->noise_cv);
    }
    md << "| " << md_escape(gate_text::row_name(*v)) << " | " << to_string(v->verdict) << " | "
       << gate_text::change_text(*v) << " | " << p << " | " << noise << " | " << gate_text::gated_text(*v) << " | "
       << md_escape(v->note) << " |\n";
  }
  md << "\n";
}

// Per regression and improvement: the functions that added (removed) the most instructions per
// iteration, a small table each, or why there is none.
void write_function_diffs(std::ostringstream& md, const std::vector<const BenchmarkVerdict*>& rows) {
  bool any = false;
  for (const auto* v : rows) any = any || !v->functions.empty() || !v->functions_note.empty();
  if (!any) return;
  md << "### Where it changed: instructions per iteration by function\n\n";
  for (const auto* v : rows) {
    if (v->functions.empty() && v->functions_note.empty()) continue;
    md << "**" << md_escape(gate_text::row_name(*v)) << "** (" << to_string(v->verdict) << ", "
       << gate_text::percent(v->slowdown) << "): ";
    if (v->functions.empty()) {
      md << md_escape(v->functions_note) << "\n\n";
      continue;
    }
    md << md_escape(gate_text::function_diff_heading(*v)) << "\n\n";
    md << "| function | baseline | current | change |\n|---|---:|---:|---:|\n";
    for (const FunctionChange& f : v->functions) {
      md << "| " << md_escape(f.function) << " | "
         << md_escape(gate_text::count_text(f.baseline, false, f.baseline_bound)) << " | "
         << md_escape(gate_text::count_text(f.current, false, f.current_bound)) << " | "
         << gate_text::count_text(f.change(), true) << " |\n";
    }
    md << "\n";
  }
}

}  // namespace

std::string gate_markdown(const GateReport& r) {
  std::ostringstream md;
  md << r.headline() << "\n\n";
  if (const std::string moved = r.run_shift.text(); !moved.empty())
    md << "> **Whole run moved:** " << md_escape(moved) << ".\n\n";
  md << "## pairbench gate: " << outcome_text(r) << "\n\n";
  md << "Time threshold " << 100 * r.options.threshold << " % (or the experiment's), instructions "
     << 100 * r.options.instructions_threshold << " %; false regressions controlled by "
     << to_string(r.options.correction) << " at " << r.options.alpha << " over the whole gate. Run-to-run noise: "
     << md_escape(r.options.run_variance_source.empty() ? "none known (no history)" : r.options.run_variance_source)
     << ".\n\n";
  for (const std::string& line : {gate_text::pooled_run_noise_text(r), gate_text::gated_summary(r)}) {
    if (!line.empty()) md << md_escape(line) << ".\n\n";
  }
  md << "Baseline `" << md_escape(r.baseline_label) << "`, current `" << md_escape(r.current_label) << "`.\n\n";
  if (r.forced) {
    md << "> **Forced comparison of different machines or builds:** ";
    for (const auto& d : r.fingerprint_differences) md << md_escape(d) << "; ";
    md << "\n\n";
  }
  for (const auto& p : r.partial_runs) md << "> **Partial run:** " << md_escape(p) << "; the gate cannot pass.\n\n";
  std::vector<const BenchmarkVerdict*> notable, all;
  for (const auto& v : r.rows) {
    all.push_back(&v);
    // Not gated here: counted in the headline, its rows in the full table (a suspect among them is
    // the confirmation's, and its summary names it).
    if (v.verdict != Verdict::unchanged && v.verdict != Verdict::not_gated) notable.push_back(&v);
  }
  if (!notable.empty()) {
    md << "### Needs attention\n\n";
    write_table(md, notable, r.options.interval_level);
    write_function_diffs(md, notable);
  }
  md << "<details><summary>All benchmarks</summary>\n\n";
  write_table(md, all, r.options.interval_level);
  md << "</details>\n";
  return md.str();
}

}  // namespace pairbench::harness
