// The history as the commands read it: a run's identity, trends with their change points, the
// export the report draws, each benchmark's run-to-run noise for a gate, and how long `history`
// and a gate from the database take over a large history.
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/analysis/change_points.h"
#include "harness/gate/gate.h"
#include "harness/store/history.h"

namespace pairbench::harness {

// Bad input naming its option ("--db: ... holds 3 runs ..."): the command's usage error.
struct HistoryInputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A run's identity for readers: its pairbench.run_id, or for rows stored before identities its row.
std::string uid_or_row(const std::string& uid, std::int64_t row);

// What `history` shows for one machine (or one of its benchmarks): per benchmark its per-run
// medians and the change points found, which are stored. Empty where the machine has no history.
struct Trend {
  History::Series series;
  std::vector<FoundChangePoint> change_points;
};
std::vector<Trend> history_trends(History& db, const std::string& machine, const std::string& benchmark, int last_runs);
// The trends as `history --format json` writes them: per benchmark its metric, its runs' medians
// and its change points (each with the run it begins at and the level before and after).
nlohmann::json trends_json(const std::vector<Trend>& trends);

// The history export (format pairbench-history-export/1; contract in README), all that the
// report draws of a history, from either back end: machines (with their baseline run),
// per-machine series of medians and process values (the last `last_runs` runs, 0 = all), each
// machine's latest claims, change points found over the exported series, and every regression
// tracked (`pairbench regressions`, fixed ones too).
nlohmann::json history_export(History& db, int last_runs);

// Each benchmark's run-to-run and process noise on machine `key`, from its last 30 runs in `db`.
void add_run_variance(GateOptions& options, History& db, const std::string& key,
                      const std::string& exclude_run_uid = "");
// Fills `db` (holding no runs: HistoryInputError otherwise) with `runs` synthetic nightly runs of
// one machine (every benchmark steps up 50 %, so change points are found and stored), then times
// exactly what the two commands do there: `history` (open, every benchmark's per-run medians,
// change points found and stored) and `gate` from the database (open, the machine's baseline and
// latest run as stored, the run-to-run noise of its last 30 runs, the comparison). Returns {db,
// runs, benchmarks, samples_per_run, fill_s, history_s, gate_s, ...}; `progress` every 1000 runs.
nlohmann::json measure_history_speed(const std::string& db, int runs, int benchmarks, int samples,
                                     const std::function<void(int)>& progress = {});

}  // namespace pairbench::harness
