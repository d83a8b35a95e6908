// Regressions tracked until fixed: the rules of `pairbench regressions` over the history's
// regressions table (store/history.h). A regression the gate confirmed is recorded once per
// machine and benchmark while it is open or acknowledged (seen again, it is known, not new: one
// announcement per regression, as asv groups a benchmark's regressions by commit range), with the
// commit range the history places it in; it is fixed when a later change point brings the level
// back (asv's rule). docs/regressions.md says the same for users.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "harness/store/history.h"

namespace pairbench::harness {

// One row the gate decided `regression`, as `regressions record` takes it from the gate's JSON.
struct ConfirmedRegression {
  std::string benchmark, instrument, metric, unit, better;  // instrument: time | instructions
  double change = 0, change_low = 0, change_high = 0;       // relative, + = worse (NaN: unbounded)
  double threshold = 0.05;
  double baseline_median = 0, current_median = 0;  // in the instrument's unit
};

// The two runs the gate compared (the gate JSON's baseline_run and current_run).
struct ComparedRuns {
  std::string machine_key;
  std::string baseline_run, baseline_sha;
  std::string current_run, current_sha, current_started_at;
};

// Where the history places a regression: the last run at the old level and the first at the new.
struct CommitRange {
  std::string last_good_sha, last_good_run, first_bad_sha, first_bad_run;
  double level_before = 0;        // the metric's level before it, in the history's terms (NaN: unknown)
  double level_after = 0;         // and at the current run (the history's median, else the gate's)
  std::string seen_run, seen_at;  // the history's run of the gate's current side (else the gate's own)
};
// The current side's run in the benchmark's series on this machine (oldest first): by run id, else
// the newest run of its commit (an `ab` of two builds: the night's run of that build), else the
// newest that started before it. For time rows, the gate's relative change is placed on that run's
// level: walking back from it, runs beyond the geometric midpoint between its level and that level
// undone by the change are bad; the first good one met is the last good run, the run after it the
// first bad, and the level before is the median of the last good run and up to 4 good ones before
// it. Where no run is good, or the series does not hold the current run, or for instruction
// counts (which the history does not keep), the range is the baseline's commit .. the current one,
// and the level before is the history's level undone by the change (time), else the baseline's
// median (time, no history), else unknown (instructions).
CommitRange commit_range(const ConfirmedRegression& row, const ComparedRuns& runs, const History::Series* series);

// Why a regression is fixed: the change point that brought its level back.
struct Fix {
  std::string run_uid, started_at, git_sha;
  double level = 0;  // the level after that change point
  std::string reason;
};
// asv's rule: a change point of the benchmark's series from the regression's first bad run on
// (find_change_points over those runs) whose level after lies within the regression's threshold
// of the level before it, or better. nullopt while there is none, or where the level before is
// unknown. The detector's segments of at least 3 runs make that 2 slow runs and 3 runs back.
std::optional<Fix> level_returned(const History::Regression& regression, const History::Series& series);

// The one place that closes regressions: every open or acknowledged regression (of `machine_key`,
// or of every machine) whose level returned is marked fixed, with when and why. Returns those
// closed. `regressions record` and `regressions` (the listing) call it first.
std::vector<History::Regression> close_returned_regressions(History& db, const std::string& machine_key = "");

struct RecordOutcome {
  std::vector<History::Regression> new_ones;  // to announce
  std::vector<History::Regression> known;     // open or acknowledged before this gate: seen again
  std::vector<History::Regression> closed;    // fixed by the level's return, found on the way
};
// Closes what returned, then records each confirmed regression of `runs.machine_key` (new, or
// known and seen again), with `culprit` (a bisection's first bad commit, "" for none) where given.
// A benchmark with rows of both instruments is recorded once, by its time row (the history keeps
// the time level that closes it).
RecordOutcome record_regressions(History& db, const ComparedRuns& runs, const std::vector<ConfirmedRegression>& rows,
                                 const std::string& culprit);

// A regression as `regressions --format json`, `record --json` and `history export` write it
// (README, "The history export"): unknown numbers and absent texts as null.
nlohmann::json regression_json(const History::Regression& r);
// Its line in `pairbench regressions` and `record` (`tag`: "open", "new", "known", ...), and its
// acknowledgement and fix where it has them, each line ending in a newline.
std::string regression_text(const History::Regression& r, const std::string& tag);

}  // namespace pairbench::harness
