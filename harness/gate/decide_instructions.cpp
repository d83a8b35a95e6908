// Deciding the instruction rows: counts per iteration are near-deterministic, so no test: the
// whole range of one side's counts against the other's decides by the threshold. A side whose
// processes disagree by more than the threshold is undecided; by more than half of it (layout
// sampling moves buffers within their pages, and a vectorised loop's peel with them), the counts
// can still show the code unchanged (the whole range inside the threshold, which a wider spread
// only makes harder) but not a change: that is left to time.
#include <algorithm>
#include <cstdio>

#include "harness/gate/decide.h"
#include "harness/gate/text.h"
#include "harness/stats/stats.h"

namespace pairbench::harness::gate_detail {
namespace {

// Spread within a side: the relative range of its processes' counts.
double spread(const std::vector<double>& x) {
  const auto [lo, hi] = std::minmax_element(x.begin(), x.end());
  return (*hi - *lo) / stats::median(x);
}

void decide_row(BenchmarkVerdict& v, const std::vector<double>& b, const std::vector<double>& c) {
  v.noise_cv = std::max(spread(b), spread(c));
  v.slowdown = v.current_median / v.baseline_median - 1;
  // The change's range: the least and the most the counts of the two sides can differ by.
  const double lo = *std::min_element(c.begin(), c.end()) / *std::max_element(b.begin(), b.end()) - 1;
  const double hi = *std::max_element(c.begin(), c.end()) / *std::min_element(b.begin(), b.end()) - 1;
  v.slowdown_low = lo, v.slowdown_high = hi;
  char buf[300];
  if (b.size() < 2 || c.size() < 2) {
    v.verdict = Verdict::undecided;
    v.note = "one counting process on a side: its determinism is unchecked (--instruction-processes 2 or more)";
  } else if (v.noise_cv > v.threshold) {
    v.verdict = Verdict::undecided;
    std::snprintf(buf, sizeof buf,
                  "counts differ by %.2f%% between processes of one side: not deterministic enough "
                  "for a %.1f%% threshold",
                  100 * v.noise_cv, 100 * v.threshold);
    v.note = buf;
  } else if (hi < v.threshold && lo > -v.threshold) {
    v.verdict = Verdict::unchanged;
    if (v.noise_cv > v.threshold / 2) {
      std::snprintf(buf, sizeof buf,
                    "counts differ by %.2f%% between processes of one side; every count of one side "
                    "is within %.1f%% of every count of the other",
                    100 * v.noise_cv, 100 * v.threshold);
      v.note = buf;
    }
  } else if (v.noise_cv > v.threshold / 2) {
    v.verdict = Verdict::undecided;
    std::snprintf(buf, sizeof buf,
                  "counts differ by %.2f%% between processes of one side: more than half the %.1f%% "
                  "threshold, too wide to call a change on counts (time decides it)",
                  100 * v.noise_cv, 100 * v.threshold);
    v.note = buf;
  } else if (lo >= v.threshold) {
    v.verdict = Verdict::regression;
  } else if (hi <= -v.threshold) {
    v.verdict = Verdict::improvement;
  } else {
    v.verdict = Verdict::undecided;
    std::snprintf(buf, sizeof buf, "the change %s is within the processes' spread of the %.1f%% threshold",
                  gate_text::percent(v.slowdown).c_str(), 100 * v.threshold);
    v.note = buf;
  }
}

}  // namespace

void decide_instruction_rows(GateReport& report, const std::vector<Matched>& matched) {
  for (const Matched& m : matched) decide_row(report.rows[m.row], m.base->values, m.cur->values);
}

}  // namespace pairbench::harness::gate_detail
