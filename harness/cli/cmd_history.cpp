// `pairbench history` (one machine's trend and change points), `history --machines` (every
// machine with its last run) and `history export` (everything a cross-machine page draws,
// format pairbench-history-export/1), over an SQLite or PostgreSQL history.
#include <filesystem>
#include <iostream>

#include "harness/analysis/change_points.h"
#include "harness/cli/commands.h"
#include "harness/store/file_checks.h"
#include "harness/store/history.h"
#include "harness/store/run_file.h"
#include "pairbench/build_info.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

namespace {

// A run's identity for readers: its pairbench.run_id, or for rows stored before identities its row.
std::string uid_or_row(const std::string& uid, std::int64_t row) {
  return uid.empty() ? "history-row-" + std::to_string(row) : uid;
}

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

std::vector<Trend> history_trends(History& db, const std::string& machine, const std::string& benchmark, int last_runs) {
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

namespace {

nlohmann::json trends_json(const std::vector<Trend>& trends) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [s, changes] : trends) {
    nlohmann::json jcps = nlohmann::json::array();
    for (const auto& c : changes) {
      const auto& run = *s.points[c.index].run;
      jcps.push_back({{"run_id", run.id}, {"started_at", run.started_at}, {"git_sha", run.git_sha},
                      {"before", c.point.before}, {"after", c.point.after}, {"change", c.point.after / c.point.before - 1}});
    }
    nlohmann::json jpoints = nlohmann::json::array();
    for (const auto& p : s.points) {
      jpoints.push_back({{"run_id", p.run_id}, {"started_at", p.run->started_at}, {"git_sha", p.run->git_sha},
                         {"median", p.median}, {"samples", p.samples}});
    }
    out.push_back({{"benchmark", s.benchmark}, {"metric", s.metric}, {"unit", s.unit}, {"better", s.better},
                   {"runs", s.points.size()}, {"points", std::move(jpoints)}, {"change_points", std::move(jcps)}});
  }
  return out;
}

}  // namespace

int cmd_history(const std::string& benchmark, const std::string& db_arg, const std::string& machine_arg,
                int last_runs, const std::string& format) {
  const auto db = open_history_db(db_arg, "--db", /*must_exist=*/true);
  std::string machine = machine_arg;
  if (machine.empty()) machine = capture_environment(PAIRBENCH_SOURCE_DIR).fingerprint["machine_key"];
  const std::vector<Trend> trends = history_trends(*db, machine, benchmark, last_runs);
  if (trends.empty()) {
    throw UsageError(benchmark.empty() ? "no history for machine " + machine + " in " + db->name()
                                       : "no history of '" + benchmark + "' for machine " + machine + " in " + db->name());
  }
  if (format == "json") {
    std::cout << trends_json(trends).dump(2) << "\n";
    return kExitOk;
  }
  std::cout << "history of machine " << machine << " in " << db->name() << "\n";
  for (const auto& [s, changes] : trends) {
    char line[400];
    std::snprintf(line, sizeof line, "%-64s %4zu runs  first %.4g  last %.4g %s\n", s.benchmark.c_str(),
                  s.points.size(), s.points.front().median, s.points.back().median, s.unit.c_str());
    std::cout << line;
    for (const auto& c : changes) {
      const auto& run = *s.points[c.index].run;
      std::snprintf(line, sizeof line, "    change point %s (git %.12s): %.4g -> %.4g (%+.1f%%)\n", run.started_at.c_str(),
                    run.git_sha.c_str(), c.point.before, c.point.after, 100 * (c.point.after / c.point.before - 1));
      std::cout << line;
    }
  }
  return kExitOk;
}

int cmd_history_machines(const std::string& db_arg, const std::string& format) {
  const auto db = open_history_db(db_arg, "--db", /*must_exist=*/true);
  const auto machines = db->machines();
  if (format == "json") {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& m : machines) {
      out.push_back({{"machine_key", m.machine_key}, {"machine_kind", m.machine_kind}, {"runs", m.runs},
                     {"baseline", db->baseline_run(m.machine_key) != 0},
                     {"last_run", {{"run_id", uid_or_row(m.last_run.run_uid, m.last_run.id)},
                                   {"started_at", m.last_run.started_at}, {"git_sha", m.last_run.git_sha}}}});
    }
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << "machines in " << db->name() << ": " << machines.size() << "\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-20s %-32s %6s  %-20s  %-12s  %s\n", "machine key", "kind", "runs", "last run",
                "git", "baseline");
  std::cout << line;
  for (const auto& m : machines) {
    std::snprintf(line, sizeof line, "%-20s %-32.32s %6lld  %-20s  %-12.12s  %s\n", m.machine_key.c_str(),
                  m.machine_kind.empty() ? "-" : m.machine_kind.c_str(), static_cast<long long>(m.runs),
                  m.last_run.started_at.c_str(), m.last_run.git_sha.c_str(),
                  db->baseline_run(m.machine_key) ? "yes" : "none");
    std::cout << line;
  }
  return kExitOk;
}

nlohmann::json history_export(History& db, int last_runs) {
  nlohmann::json out = {{"format", "pairbench-history-export/1"}, {"generated_at", utc_stamp("%Y-%m-%dT%H:%M:%SZ")},
                        {"db", db.name()}};
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
    out["machines"].push_back({{"machine_key", key}, {"machine_kind", m.machine_kind}, {"runs", m.runs},
                               {"last_run", {{"run_id", uid_or_row(m.last_run.run_uid, m.last_run.id)},
                                             {"started_at", m.last_run.started_at}, {"git_sha", m.last_run.git_sha}}},
                               {"baseline_run_id", std::move(baseline)}});
    // With each run's process values: the report draws them as dots beside the medians.
    for (const auto& s : db.series(m.machine_key, "", last_runs, /*with_values=*/true)) {
      nlohmann::json points = nlohmann::json::array();
      for (const auto& p : s.points) {
        points.push_back({{"run_id", uid_or_row(p.run->run_uid, p.run_id)}, {"started_at", p.run->started_at},
                          {"git_sha", p.run->git_sha}, {"median", p.median}, {"samples", p.samples},
                          {"values", p.values}});
      }
      // The same detection as `history`, over the points exported (nothing is written).
      for (const auto& c : find_change_points(s)) {
        const auto& p = s.points[c.index];
        out["change_points"].push_back({{"machine_key", key}, {"benchmark", s.benchmark},
                                        {"run_id", uid_or_row(p.run->run_uid, p.run_id)}, {"before", c.point.before},
                                        {"after", c.point.after}});
      }
      out["series"].push_back({{"machine_key", key}, {"benchmark", s.benchmark}, {"experiment", s.experiment},
                               {"metric", s.metric}, {"unit", s.unit}, {"better", s.better},
                               {"points", std::move(points)}});
    }
  }
  for (const auto& [run, claims] : db.latest_claims()) {
    out["claims"].push_back({{"machine_key", export_key(run.machine_key)}, {"machine_kind", run.machine_kind},
                             {"run_id", uid_or_row(run.run_uid, run.id)}, {"git_sha", run.git_sha}, {"claims", claims}});
  }
  return out;
}

int cmd_history_export(const std::string& db_arg, int last_runs, const std::string& out) {
  try {
    require_regular_file_or_absent(out, "--out");
  } catch (const FileCheckError& e) {
    throw UsageError(e.what());
  }
  const auto db = open_history_db(db_arg, "--db", /*must_exist=*/true);
  const nlohmann::json doc = history_export(*db, last_runs);
  write_json_atomically(out, doc);
  std::cout << "exported " << doc["machines"].size() << " machine(s), " << doc["series"].size() << " series from "
            << db->name() << " to " << out << "\n";
  return kExitOk;
}

}  // namespace pairbench::harness
