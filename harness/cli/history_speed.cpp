// `pairbench history speed`: how long `history` and `gate` take over a large history, on either
// back end. Fills an empty history with synthetic nightly runs of one machine (every benchmark
// steps up 50 %, so change points are found and stored), then times exactly what the
// two commands do there: `history` (open, every benchmark's per-run medians, change points found
// and stored) and `gate` from the database (open, the machine's baseline and latest run as
// stored, the run-to-run noise of its last 30 runs, the comparison). selftest reports the same.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "harness/cli/command.h"
#include "harness/cli/gate_inputs.h"
#include "harness/cli/history_access.h"
#include "harness/exec/say.h"
#include "harness/store/history.h"
#include "harness/store/run_file.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

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
      throw UsageError("--db: " + name + " holds " + std::to_string(held) +
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

int cmd_history_speed(const std::string& db_arg, int runs, int benchmarks, int samples, const std::string& out) {
  std::string db = db_arg, tmpdir;
  if (db.empty()) {
    char tmpl[] = "/tmp/pairbench-history-speed-XXXXXX";
    if (!mkdtemp(tmpl)) throw std::runtime_error("history speed: cannot create a temporary directory");
    tmpdir = tmpl;
    db = tmpdir + "/history.sqlite";
  } else if (!is_postgres_url(db) && fs::exists(db)) {
    throw UsageError("--db: " + db + " exists; history speed fills a new history (give a new path)");
  }
  struct RemoveAtExit {
    std::string dir;
    ~RemoveAtExit() {
      std::error_code ec;
      if (!dir.empty()) fs::remove_all(dir, ec);
    }
  } cleanup{tmpdir};
  say() << "history speed: filling " << redact_db(db) << " with " << runs << " runs x " << benchmarks
        << " benchmarks x " << samples << " samples\n";
  const nlohmann::json r = measure_history_speed(db, runs, benchmarks, samples, [&](int done) {
    say() << "history speed: " << done << " of " << runs << " runs stored\n";
  });
  std::printf(
      "history speed on %s: %d runs x %d benchmarks (%d samples each), filled in %.1f s\n"
      "  history (every benchmark's %d per-run medians, change points found and stored): %.2f s\n"
      "  gate from the database (baseline and latest run, noise of the last 30 runs, comparison): %.2f s\n",
      r["db"].get<std::string>().c_str(), runs, benchmarks, samples, r["fill_s"].get<double>(), runs,
      r["history_s"].get<double>(), r["gate_s"].get<double>());
  if (!out.empty()) write_json_atomically(out, r);
  return kExitOk;
}

}  // namespace pairbench::harness
