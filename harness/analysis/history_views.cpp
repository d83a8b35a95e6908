// The history as the commands read it (history_views.h).
#include "harness/analysis/history_views.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "harness/analysis/regressions.h"
#include "harness/store/run_file.h"

namespace pairbench::harness {

std::string uid_or_row(const std::string& uid, std::int64_t row) {
  return uid.empty() ? "history-row-" + std::to_string(row) : uid;
}

namespace {

// A machine key for readers of the export: runs from before machine keys have an empty one.
std::string export_key(const std::string& key) { return key.empty() ? "(no machine key)" : key; }

}  // namespace

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

void add_run_variance(GateOptions& options, History& db, const std::string& key, const std::string& exclude_run_uid) {
  int runs = 0;
  for (const auto& s : db.series(key, "", 31)) {
    std::vector<std::vector<double>> values;
    for (const auto& p : s.points) {
      if (!exclude_run_uid.empty() && p.run && p.run->run_uid == exclude_run_uid) continue;
      values.push_back(p.values);
    }
    if (values.size() > 30) values.erase(values.begin(), values.end() - 30);
    runs = std::max(runs, static_cast<int>(values.size()));
    add_history_noise(options, s.benchmark, values);
  }
  options.run_variance_source = db.name() + " (" + std::to_string(options.run_variance.size()) +
                                " benchmarks with 3 or more of the last " + std::to_string(std::min(runs, 30)) +
                                " runs)";
}

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

constexpr const char* kSpeedMachine = "speed-synthetic";

// Where the synthetic runs step up 50 %: half-way, but at least 30 runs before the end, so the
// gate's run-to-run noise (the last 30 runs) sees one level and the gate must find the step, as
// must the change-point detection.
int step_run(int runs) { return std::max(1, std::min(runs / 2, runs - 30)); }

// Run `r` of `runs`: one process value per benchmark and sample, deterministic, stepping at step_run.
void fill_run(nlohmann::json& doc, int r, int runs, int benchmarks, int samples) {
  auto& list = doc["benchmarks"];
  list = nlohmann::json::array();
  for (int b = 0; b < benchmarks; ++b) {
    for (int i = 0; i < samples; ++i) {
      list.push_back({{"name", "synthetic.x/a/n:" + std::to_string(b)},
                      {"experiment", "synthetic.x"},
                      {"arm", "a"},
                      {"repetition_index", i},
                      {"real_time", 1.0},
                      {"metric_value", 100.0 + (r >= step_run(runs) ? 50 : 0) + (i * 7 + b + r) % 5}});
    }
  }
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "2026-01-01T%02d:%02d:%02dZ", r / 3600, (r / 60) % 60, r % 60);
  doc["pairbench"]["started_at"] = stamp;
  doc["pairbench"]["run_id"] = "speed-" + std::to_string(r);
  doc["pairbench"]["environment"]["git_sha"] = "5eed" + std::to_string(r);
}

}  // namespace

nlohmann::json measure_history_speed(const std::string& db_arg, int runs, int benchmarks, int samples,
                                     const std::function<void(int)>& progress) {
  nlohmann::json doc = {{"context", nlohmann::json::object()}, {"benchmarks", nlohmann::json::array()}};
  doc["pairbench"] = {{"schema_version", 1},
                      {"profile", "nightly"},
                      {"environment", {{"machine_key", kSpeedMachine}, {"cpu_model", "synthetic"}}},
                      {"experiments",
                       {{{"name", "synthetic.x"},
                         {"metric", "ns_per_op"},
                         {"unit", "ns"},
                         {"better", "lower"},
                         {"points", nlohmann::json::array()}}}}};
  std::string name;
  const auto t_fill = Clock::now();
  {
    History db(db_arg);
    name = db.name();
    if (const auto held = db.run_count(); held > 0) {
      throw HistoryInputError("--db: " + name + " holds " + std::to_string(held) +
                              " runs; history speed fills an empty history (a new SQLite path, or an empty database)");
    }
    for (int r = 0; r < runs; ++r) {
      fill_run(doc, r, runs, benchmarks, samples);
      const std::int64_t id = db.append_run(doc, "synthetic.json");
      if (r == 0) db.set_baseline(kSpeedMachine, id);
      if (progress && (r + 1) % 1000 == 0) progress(r + 1);
    }
  }
  const double fill_s = seconds_since(t_fill);

  const auto t_history = Clock::now();
  std::size_t series = 0;
  {
    History db(db_arg);
    series = history_trends(db, kSpeedMachine, "", 0).size();
  }
  const double history_s = seconds_since(t_history);

  const auto t_gate = Clock::now();
  std::string outcome;
  {
    History db(db_arg);
    const auto base = db.run_document(db.baseline_run(kSpeedMachine));
    const auto latest = db.machines().at(0).last_run;
    const auto current = db.run_document(latest.id);
    if (!base || !current) throw std::runtime_error(name + ": the synthetic runs were stored without documents");
    GateOptions options;
    add_run_variance(options, db, kSpeedMachine);
    outcome = to_string(compare_runs(*base, *current, options, "baseline", latest.run_uid).outcome());
  }
  const double gate_s = seconds_since(t_gate);
  return {{"db", name},
          {"runs", runs},
          {"benchmarks", benchmarks},
          {"samples_per_run", samples},
          {"series", series},
          {"fill_s", fill_s},
          {"history_s", history_s},
          {"gate_s", gate_s},
          {"gate_outcome", outcome}};
}

nlohmann::json trends_json(const std::vector<Trend>& trends) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [s, changes] : trends) {
    nlohmann::json jcps = nlohmann::json::array();
    for (const auto& c : changes) {
      const auto& run = *s.points[c.index].run;
      jcps.push_back({{"run_id", run.id},
                      {"started_at", run.started_at},
                      {"git_sha", run.git_sha},
                      {"before", c.point.before},
                      {"after", c.point.after},
                      {"change", c.point.after / c.point.before - 1}});
    }
    nlohmann::json jpoints = nlohmann::json::array();
    for (const auto& p : s.points) {
      jpoints.push_back({{"run_id", p.run_id},
                         {"started_at", p.run->started_at},
                         {"git_sha", p.run->git_sha},
                         {"median", p.median},
                         {"samples", p.samples}});
    }
    out.push_back({{"benchmark", s.benchmark},
                   {"metric", s.metric},
                   {"unit", s.unit},
                   {"better", s.better},
                   {"runs", s.points.size()},
                   {"points", std::move(jpoints)},
                   {"change_points", std::move(jcps)}});
  }
  return out;
}

}  // namespace pairbench::harness
