// The history as the commands use it (history_access.h).
#include "harness/cli/history_access.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <thread>

#include "harness/analysis/regressions.h"
#include "harness/cli/command.h"
#include "harness/exec/interrupt.h"
#include "harness/gate/gate.h"
#include "harness/store/run_file.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

std::string uid_or_row(const std::string& uid, std::int64_t row) {
  return uid.empty() ? "history-row-" + std::to_string(row) : uid;
}

namespace {

// A machine key for readers of the export: runs from before machine keys have an empty one.
std::string export_key(const std::string& key) { return key.empty() ? "(no machine key)" : key; }

}  // namespace

std::unique_ptr<History> open_history_db(const std::string& db, const std::string& what, bool must_exist) {
  if (must_exist && !is_postgres_url(db) && !fs::exists(db)) {
    throw UsageError(what + ": " + db + " does not exist (every `pairbench run` appends to it)");
  }
  try {
    return std::make_unique<History>(db);
  } catch (const NotAHistory& e) {
    throw UsageError(what + ": " + e.what());
  }
}

std::vector<Trend> history_trends(History& db, const std::string& machine, const std::string& benchmark,
                                  int last_runs) {
  std::vector<Trend> out;
  std::vector<std::pair<std::string, std::vector<History::ChangePoint>>> found;
  for (auto& s : db.series(machine, benchmark, last_runs, /*with_values=*/false)) {
    Trend t{std::move(s), {}};
    t.change_points = find_change_points(t.series);
    std::vector<History::ChangePoint> points;
    for (const auto& c : t.change_points) points.push_back(c.point);
    found.emplace_back(t.series.benchmark, std::move(points));
    out.push_back(std::move(t));
  }
  if (!found.empty()) db.store_change_points(machine, found);
  return out;
}

nlohmann::json history_export(History& db, int last_runs) {
  nlohmann::json out = {
      {"format", "pairbench-history-export/1"}, {"generated_at", utc_stamp("%Y-%m-%dT%H:%M:%SZ")}, {"db", db.name()}};
  out["machines"] = nlohmann::json::array();
  out["series"] = nlohmann::json::array();
  out["claims"] = nlohmann::json::array();
  out["change_points"] = nlohmann::json::array();
  for (const auto& m : db.machines()) {
    const std::string key = export_key(m.machine_key);
    nlohmann::json baseline = nullptr;
    if (const std::int64_t row = db.baseline_run(m.machine_key)) {
      const auto run = db.run(row);
      baseline = run ? uid_or_row(run->run_uid, run->id) : uid_or_row("", row);
    }
    out["machines"].push_back({{"machine_key", key},
                               {"machine_kind", m.machine_kind},
                               {"runs", m.runs},
                               {"last_run",
                                {{"run_id", uid_or_row(m.last_run.run_uid, m.last_run.id)},
                                 {"started_at", m.last_run.started_at},
                                 {"git_sha", m.last_run.git_sha}}},
                               {"baseline_run_id", std::move(baseline)}});
    // With each run's process values: the report draws them as dots beside the medians.
    const auto all_series = db.series(m.machine_key, "", last_runs, /*with_values=*/true);
    for (const auto& s : all_series) {
      nlohmann::json points = nlohmann::json::array();
      std::vector<std::vector<double>> earlier;
      for (const auto& p : s.points) {
        // The resolution a gate of this run had (docs/gate.md): from this run and the 29 before it.
        earlier.push_back(p.values);
        if (earlier.size() > 30) earlier.erase(earlier.begin());
        const double resolution = resolution_from_history(history_noise(earlier), static_cast<int>(p.values.size()),
                                                          static_cast<int>(all_series.size()));
        points.push_back({{"run_id", uid_or_row(p.run->run_uid, p.run_id)},
                          {"started_at", p.run->started_at},
                          {"git_sha", p.run->git_sha},
                          {"median", p.median},
                          {"samples", p.samples},
                          {"values", p.values},
                          {"resolution", resolution >= 0 ? nlohmann::json(resolution) : nlohmann::json(nullptr)}});
      }
      // The same detection as `history`, over the points exported (nothing is written).
      for (const auto& c : find_change_points(s)) {
        const auto& p = s.points[c.index];
        out["change_points"].push_back({{"machine_key", key},
                                        {"benchmark", s.benchmark},
                                        {"run_id", uid_or_row(p.run->run_uid, p.run_id)},
                                        {"before", c.point.before},
                                        {"after", c.point.after}});
      }
      out["series"].push_back({{"machine_key", key},
                               {"benchmark", s.benchmark},
                               {"experiment", s.experiment},
                               {"metric", s.metric},
                               {"unit", s.unit},
                               {"better", s.better},
                               {"points", std::move(points)}});
    }
  }
  // Every regression tracked, fixed ones too (the report shows the recently fixed), as stored:
  // `regressions record` and the listing close those whose level returned.
  out["regressions"] = nlohmann::json::array();
  for (const auto& r : db.regressions("", /*include_fixed=*/true)) out["regressions"].push_back(regression_json(r));
  for (const auto& [run, claims] : db.latest_claims()) {
    out["claims"].push_back({{"machine_key", export_key(run.machine_key)},
                             {"machine_kind", run.machine_kind},
                             {"run_id", uid_or_row(run.run_uid, run.id)},
                             {"git_sha", run.git_sha},
                             {"claims", claims}});
  }
  return out;
}

double history_retry_s() {
  const char* text = std::getenv("PAIRBENCH_HISTORY_RETRY_S");
  if (!text || !*text) return 120;
  char* end = nullptr;
  const double s = std::strtod(text, &end);
  if (*end != '\0' || !(s >= 0 && s <= 86400)) {
    throw UsageError(std::string("PAIRBENCH_HISTORY_RETRY_S: expected seconds from 0 to 86400, got '") + text + "'");
  }
  return s;
}

nlohmann::json record_history(const std::string& history_path, const nlohmann::json& doc, const std::string& run_file) {
  using Clock = std::chrono::steady_clock;
  const double budget_s = history_retry_s();
  const auto start = Clock::now();
  auto elapsed_s = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  nlohmann::json result = {{"db", redact_db(history_path)}};
  std::string error;
  int attempts = 0;
  double backoff_s = 0.5;
  for (;;) {
    ++attempts;
    // Each attempt waits for the lock a quarter of what is left (0.1 to 10 s), so a few
    // attempts fit in the budget and none outlasts it by much.
    const double wait_s = std::clamp((budget_s - elapsed_s()) / 4, 0.1, 10.0);
    try {
      std::error_code ec;
      const fs::path parent = is_postgres_url(history_path) ? fs::path() : fs::path(history_path).parent_path();
      if (!parent.empty()) fs::create_directories(parent, ec);
      History history(history_path, static_cast<int>(1000 * wait_s));
      bool stored_before = false;
      const std::int64_t id = history.append_run(doc, run_file, &stored_before);
      result["status"] = stored_before ? "already_stored" : "stored";
      result["history_run_id"] = id;
      result["attempts"] = attempts;
      return result;
    } catch (const HistoryBusy& e) {
      error = e.what();  // another writer holds the lock, or the server is unreachable: worth waiting for
    } catch (const std::exception& e) {
      error = e.what();  // not a lock (unwritable, not a history): retrying cannot help
      break;
    }
    const double left_s = budget_s - elapsed_s();
    if (left_s <= 0) break;
    if (!sleep_unless_interrupted(std::min(backoff_s, left_s))) {
      error += "; retries stopped by " + signal_name(interrupt_signal());
      break;
    }
    backoff_s = std::min(2 * backoff_s, 8.0);
  }
  char took[64];
  std::snprintf(took, sizeof took, " (%d attempt%s over %.1f s)", attempts, attempts == 1 ? "" : "s", elapsed_s());
  result["status"] = "failed";
  result["error"] = error + took;
  result["attempts"] = attempts;
  return result;
}

}  // namespace pairbench::harness
