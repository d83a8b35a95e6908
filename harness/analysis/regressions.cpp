// Regressions tracked until fixed (regressions.h): the commit range, asv's closing rule, recording.
#include "harness/analysis/regressions.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

#include "harness/analysis/change_points.h"
#include "harness/stats/stats.h"
#include "harness/store/run_file.h"

namespace pairbench::harness {
namespace {

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// `value` against `before`, + = worse for a metric where `better` is lower or higher.
double worse_by(double value, double before, const std::string& better) {
  return better == "higher" ? before / value - 1 : value / before - 1;
}

// The index of run `uid` in the series, or -1.
long index_of(const History::Series& s, const std::string& uid) {
  if (uid.empty()) return -1;
  for (std::size_t i = 0; i < s.points.size(); ++i) {
    if (s.points[i].run->run_uid == uid) return static_cast<long>(i);
  }
  return -1;
}

std::string percent(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f %%", 100 * x);
  return text;
}

std::string number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.4g", x);
  return text;
}

}  // namespace

// The run of `runs`' current side in the series: by run id (a gate between two stored runs), else
// the newest run of its commit (an `ab` of two builds, whose runs the history does not hold: the
// night's run of that build), else the newest run that started before it; -1 for none.
long current_index(const History::Series& s, const ComparedRuns& runs) {
  if (const long i = index_of(s, runs.current_run); i >= 0) return i;
  for (long i = static_cast<long>(s.points.size()) - 1; i >= 0; --i) {
    if (!runs.current_sha.empty() && s.points[i].run->git_sha == runs.current_sha) return i;
  }
  if (runs.current_started_at.empty()) return -1;
  for (long i = static_cast<long>(s.points.size()) - 1; i >= 0; --i) {
    if (s.points[i].run->started_at <= runs.current_started_at) return i;
  }
  return -1;
}

CommitRange commit_range(const ConfirmedRegression& row, const ComparedRuns& runs, const History::Series* series) {
  const double ratio = row.current_median / row.baseline_median;  // the gate's change, > 1 = larger values
  const bool time = row.instrument == "time";
  CommitRange range{runs.baseline_sha,
                    runs.baseline_run,
                    runs.current_sha,
                    runs.current_run,
                    time ? row.baseline_median : kNan,
                    time ? row.current_median : kNan,
                    runs.current_run,
                    runs.current_started_at};
  const long current = series ? current_index(*series, runs) : -1;
  if (current < 0) return range;
  const auto& points = series->points;
  range.seen_run = points[current].run->run_uid;
  range.seen_at = points[current].run->started_at;
  if (!time || !(ratio > 0) || !std::isfinite(ratio)) return range;  // the history keeps no counts
  range.level_after = points[current].median;
  // The gate's relative change placed on the history's own level (the gate's medians may come from
  // another run, an `ab`'s): the geometric midpoint between the current run's level and that level
  // undone by the change.
  const double midpoint = points[current].median / std::sqrt(ratio);
  auto bad = [&](double median) { return ratio > 1 ? median > midpoint : median < midpoint; };
  long i = current - 1;
  while (i >= 0 && bad(points[i].median)) --i;
  if (i < 0) {
    // Bad as far back as the history goes: the baseline is the last good known.
    range.level_before = points[current].median / ratio;
    return range;
  }
  range.last_good_sha = points[i].run->git_sha;
  range.last_good_run = points[i].run->run_uid;
  range.first_bad_sha = points[i + 1].run->git_sha;
  range.first_bad_run = points[i + 1].run->run_uid;
  // The level before: the median of the last good run and up to 4 good runs before it.
  std::vector<double> good;
  for (long k = i; k >= 0 && k > i - 5; --k) {
    if (!bad(points[k].median)) good.push_back(points[k].median);
  }
  range.level_before = stats::median(good);
  return range;
}

std::optional<Fix> level_returned(const History::Regression& r, const History::Series& series) {
  if (!(r.level_before > 0) || series.points.empty()) return std::nullopt;
  long onset = index_of(series, r.first_bad_run);
  if (onset < 0) onset = index_of(series, r.first_seen_run);
  if (onset < 0) {
    // Neither run in the series (stored elsewhere, or removed): the first run from when it was seen.
    onset = static_cast<long>(series.points.size());
    for (std::size_t i = 0; i < series.points.size(); ++i) {
      if (series.points[i].run->started_at >= r.first_seen_at) {
        onset = static_cast<long>(i);
        break;
      }
    }
  }
  // The detection runs over the runs from the first bad one on: over the whole series a short
  // regression (3 slow runs among dozens) moves no segment's median and is never split off.
  if (onset >= static_cast<long>(series.points.size())) return std::nullopt;
  History::Series since = series;
  since.points.erase(since.points.begin(), since.points.begin() + onset);
  for (const auto& c : find_change_points(since)) {
    const double worse = worse_by(c.point.after, r.level_before, r.better);
    if (!(worse <= r.threshold)) continue;
    const auto& run = *since.points[c.index].run;
    Fix fix{run.run_uid, run.started_at, run.git_sha, c.point.after, ""};
    fix.reason = "level returned: change point at run " + run.run_uid + " (git " + run.git_sha.substr(0, 12) + ", " +
                 run.started_at + ") from " + number(c.point.before) + " to " + number(c.point.after) + " " + r.unit +
                 ", " + percent(worse) + " against " + number(r.level_before) + " before the regression (threshold " +
                 percent(r.threshold).substr(1) + ")";
    return fix;
  }
  return std::nullopt;
}

std::vector<History::Regression> close_returned_regressions(History& db, const std::string& machine_key) {
  std::vector<History::Regression> closed;
  for (auto& r : db.regressions(machine_key, /*include_fixed=*/false)) {
    const auto series = db.series(r.machine_key, r.benchmark, /*last_runs=*/0, /*with_values=*/false);
    if (series.empty()) continue;
    const auto fix = level_returned(r, series.front());
    if (!fix) continue;
    db.fix_regression(r.id, fix->started_at, fix->run_uid, fix->reason);
    r.state = "fixed";
    r.fixed_at = fix->started_at;
    r.fixed_run = fix->run_uid;
    r.fixed_reason = fix->reason;
    closed.push_back(std::move(r));
  }
  return closed;
}

RecordOutcome record_regressions(History& db, const ComparedRuns& runs, const std::vector<ConfirmedRegression>& rows,
                                 const std::string& culprit) {
  RecordOutcome out;
  out.closed = close_returned_regressions(db, runs.machine_key);
  const std::string seen_at =
      runs.current_started_at.empty() ? utc_stamp("%Y-%m-%dT%H:%M:%SZ") : runs.current_started_at;
  // Time rows first: a benchmark with both instruments' rows is recorded by its time row.
  std::vector<const ConfirmedRegression*> ordered;
  for (const auto& row : rows)
    if (row.instrument == "time") ordered.push_back(&row);
  for (const auto& row : rows)
    if (row.instrument != "time") ordered.push_back(&row);
  std::set<std::string> done;
  for (const ConfirmedRegression* p : ordered) {
    const ConfirmedRegression& row = *p;
    if (!done.insert(row.benchmark).second) continue;
    const auto series = db.series(runs.machine_key, row.benchmark, /*last_runs=*/0, /*with_values=*/false);
    const CommitRange range = commit_range(row, runs, series.empty() ? nullptr : &series.front());
    History::Regression r;
    r.machine_key = runs.machine_key;
    r.benchmark = row.benchmark;
    r.instrument = row.instrument;
    r.metric = row.metric;
    r.unit = row.unit;
    r.better = row.better;
    r.last_good_sha = range.last_good_sha;
    r.last_good_run = range.last_good_run;
    r.first_bad_sha = range.first_bad_sha;
    r.first_bad_run = range.first_bad_run;
    r.culprit_sha = culprit;
    r.change = row.change;
    r.change_low = row.change_low;
    r.change_high = row.change_high;
    r.threshold = row.threshold;
    r.level_before = range.level_before;
    r.level_after = range.level_after;
    r.first_seen_at = r.last_seen_at = range.seen_at.empty() ? seen_at : range.seen_at;
    r.first_seen_run = r.last_seen_run = range.seen_run;
    const auto recorded = db.record_regression(r);
    auto stored = db.regression(recorded.id);
    (recorded.is_new ? out.new_ones : out.known).push_back(stored ? *stored : r);
  }
  return out;
}

namespace {

std::string signed_percent(double x) {
  if (!std::isfinite(x)) return "?";
  char text[32];
  std::snprintf(text, sizeof text, "%+.1f%%", 100 * x);
  return text;
}

// "+15.0% [+12.1%, +18.0%]"
std::string change_text(const History::Regression& r) {
  return signed_percent(r.change) + " [" + signed_percent(r.change_low) + ", " + signed_percent(r.change_high) + "]";
}

std::string short_sha(const std::string& sha) { return sha.empty() ? "?" : sha.substr(0, 10); }

// "culprit abc1234567" where a bisection named it, else "last_good..first_bad".
std::string commits_text(const History::Regression& r) {
  if (!r.culprit_sha.empty()) return "culprit " + short_sha(r.culprit_sha);
  return short_sha(r.last_good_sha) + ".." + short_sha(r.first_bad_sha);
}

std::string day(const std::string& at) { return at.substr(0, 10); }

}  // namespace

std::string regression_text(const History::Regression& r, const std::string& tag) {
  char line[1024];
  std::snprintf(line, sizeof line, "%-6s #%-4lld %-13s %-18s %s %s (%s) %s, seen %lld time%s %s..%s\n", tag.c_str(),
                static_cast<long long>(r.id), r.state.c_str(), r.machine_key.c_str(), r.benchmark.c_str(),
                change_text(r).c_str(), r.instrument.c_str(), commits_text(r).c_str(),
                static_cast<long long>(r.times_seen), r.times_seen == 1 ? "" : "s", day(r.first_seen_at).c_str(),
                day(r.last_seen_at).c_str());
  std::string out = line;
  if (!r.ack_reason.empty()) out += "              acknowledged " + r.acknowledged_at + ": " + r.ack_reason + "\n";
  if (r.state == "fixed") out += "              fixed " + r.fixed_at + ": " + r.fixed_reason + "\n";
  return out;
}

nlohmann::json regression_json(const History::Regression& r) {
  auto num = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); };
  auto text = [](const std::string& s) { return s.empty() ? nlohmann::json(nullptr) : nlohmann::json(s); };
  return {{"id", r.id},
          {"machine_key", r.machine_key},
          {"benchmark", r.benchmark},
          {"instrument", r.instrument},
          {"metric", r.metric},
          {"unit", r.unit},
          {"better", r.better},
          {"state", r.state},
          {"last_good_sha", r.last_good_sha},
          {"last_good_run_id", text(r.last_good_run)},
          {"first_bad_sha", r.first_bad_sha},
          {"first_bad_run_id", text(r.first_bad_run)},
          {"culprit_sha", text(r.culprit_sha)},
          {"change", num(r.change)},
          {"change_low", num(r.change_low)},
          {"change_high", num(r.change_high)},
          {"threshold", r.threshold},
          {"level_before", num(r.level_before)},
          {"level_after", num(r.level_after)},
          {"first_seen_at", r.first_seen_at},
          {"first_seen_run_id", text(r.first_seen_run)},
          {"last_seen_at", r.last_seen_at},
          {"last_seen_run_id", text(r.last_seen_run)},
          {"times_seen", r.times_seen},
          {"acknowledged_at", text(r.acknowledged_at)},
          {"ack_reason", text(r.ack_reason)},
          {"fixed_at", text(r.fixed_at)},
          {"fixed_run_id", text(r.fixed_run)},
          {"fixed_reason", text(r.fixed_reason)}};
}

}  // namespace pairbench::harness
