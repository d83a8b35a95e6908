// The history database: an embedded SQLite file (results/history.sqlite by default), one row per
// sample, keyed by machine, benchmark and run. Safe under concurrent writers (WAL, busy timeout,
// one IMMEDIATE transaction per run appended). A pairbench history carries its own application_id
// and schema version, so another program's database is never written into.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace pairbench::harness {

// PRAGMA application_id of every pairbench history: ASCII "PBH1".
inline constexpr std::int32_t kHistoryApplicationId = 0x50424831;
// PRAGMA user_version: the schema this pairbench writes; a newer one is refused.
inline constexpr std::int32_t kHistorySchemaVersion = 1;

// A path that is not a pairbench history (a FIFO, directory or device; an empty or non-SQLite
// file; another program's database; a newer schema). One line: "PATH: why".
struct NotAHistory : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Another connection held the write lock longer than the busy timeout (SQLITE_BUSY / LOCKED):
// the one failure worth retrying later.
struct HistoryBusy : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// How long one statement waits for another writer's lock: two CI jobs appending at once wait, never fail.
inline constexpr int kHistoryBusyTimeoutMs = 30'000;

// A run's identity in the history: its `pairbench.run_id`, or for run files from before run ids
// a hash of the run's content (but its history_write note). Stored UNIQUE: a run is stored once.
std::string run_identity(const nlohmann::json& run_doc);

class History {
 public:
  // Opens a pairbench history, creating it (complete, then moved into place) where nothing is at
  // `path`. A history from before application_id was stamped (our tables, no id) is stamped.
  // Throws NotAHistory for anything else, std::runtime_error naming the path on SQLite errors.
  // `busy_timeout_ms`: how long a statement waits for another writer's lock before HistoryBusy.
  explicit History(const std::string& path, int busy_timeout_ms = kHistoryBusyTimeoutMs);
  // Throws NotAHistory where History(path) would refuse the path; writes nothing. Absent is fine.
  static void check_path(const std::string& path);
  ~History();
  History(const History&) = delete;
  History& operator=(const History&) = delete;

  // Appends a run file's samples; returns the new run id. `run_file` is the path recorded. A run
  // already stored (same run_identity) is not stored again: its id is returned and
  // `*stored_before` set. Throws HistoryBusy while another writer holds the lock.
  std::int64_t append_run(const nlohmann::json& run_doc, const std::string& run_file, bool* stored_before = nullptr);

  struct RunPoint {
    std::int64_t run_id;
    std::string started_at, git_sha;
    double median;
    int samples;
    std::vector<double> values;  // the run's samples (one per process)
  };
  struct Series {
    std::string benchmark, metric, unit, better;
    std::vector<RunPoint> points;  // oldest first
  };
  // Per-run medians of each benchmark (or just `benchmark`) on one machine, oldest first.
  std::vector<Series> series(const std::string& machine_key, const std::string& benchmark = "",
                             int last_runs = 0);
  // Replaces the stored change points of a benchmark on a machine.
  struct ChangePoint {
    std::int64_t run_id;
    double before, after;
  };
  void store_change_points(const std::string& benchmark, const std::string& machine_key,
                           const std::vector<ChangePoint>& points);
  void set_baseline(const std::string& machine_key, std::int64_t run_id);
  std::int64_t baseline_run(const std::string& machine_key);  // 0 where none
  std::int64_t run_count();

 private:
  void exec(const char* sql);
  sqlite3* db_ = nullptr;
  std::string path_;
};

}  // namespace pairbench::harness
