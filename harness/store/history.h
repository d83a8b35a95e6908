// The history store: every run's per-benchmark medians and samples, keyed by machine, benchmark
// and run, in an embedded SQLite file (results/history.sqlite by default) or a PostgreSQL server
// (a postgresql:// URL) that a fleet of runners shares. One logical schema and one set of queries
// for both (history_sql.h is the seam between them), versioned migrations applied on open, and
// an identity check on open, so another program's database is never written into. Safe under
// concurrent writers: one write transaction per run, and a run is stored once by its identity.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace pairbench::harness {

namespace sql {
class Connection;
}

// The identity every pairbench history carries: SQLite's PRAGMA application_id, and the
// `application_id` row of PostgreSQL's pairbench_meta table. ASCII "PBH1".
inline constexpr std::int32_t kHistoryApplicationId = 0x50424831;
// The schema this pairbench writes (SQLite's PRAGMA user_version, pairbench_meta's
// schema_version): older ones are migrated on open, a newer one is refused.
inline constexpr std::int32_t kHistorySchemaVersion = 4;

// A database that is not a pairbench history (a FIFO, directory or device; an empty or non-SQLite
// file; another program's database; a newer schema; a malformed URL). One line: "DB: why".
struct NotAHistory : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A failure worth retrying later: another SQLite connection held the write lock longer than the
// busy timeout, or the PostgreSQL server could not be reached or dropped the connection.
struct HistoryBusy : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// How long one statement waits for another writer's lock: two CI jobs appending at once wait, never fail.
inline constexpr int kHistoryBusyTimeoutMs = 30'000;

// The default history (SQLite, under results/).
inline constexpr const char* kDefaultHistory = "results/history.sqlite";

// True for a postgresql:// or postgres:// URL; anything else is an SQLite path.
bool is_postgres_url(const std::string& db);
// `db` fit for a message: a URL's password is replaced by "***" (a path is returned as it is).
std::string redact_db(const std::string& db);

// A run's identity in the history: its `pairbench.run_id`, or for run files from before run ids
// a hash of the run's content (but its history_write note). Stored UNIQUE: a run is stored once.
std::string run_identity(const nlohmann::json& run_doc);

// What a run was measured on, for a reader across machines: the GPU's name where the run had a
// GPU, else the CPU model.
std::string machine_kind(const nlohmann::json& environment);

class History {
 public:
  // Opens the history `db` (an SQLite path or a postgresql:// URL), creating it where nothing is
  // there yet (SQLite: complete, then moved into place; PostgreSQL: in a database with no tables)
  // and migrating an older schema, all in one transaction. Throws NotAHistory for anything that
  // is not a pairbench history, HistoryBusy where the lock or server is unavailable (retry
  // later), std::runtime_error naming the database otherwise. `busy_timeout_ms`: how long a
  // statement waits for another writer (SQLite) or the connection attempt waits (PostgreSQL).
  explicit History(const std::string& db, int busy_timeout_ms = kHistoryBusyTimeoutMs);
  // Throws NotAHistory where History(db) would refuse an SQLite path, or where a URL is
  // malformed; writes nothing and connects to nothing. An absent path is fine.
  static void check_path(const std::string& db);
  ~History();
  History(const History&) = delete;
  History& operator=(const History&) = delete;

  // `db` as given, with any password redacted: for messages.
  const std::string& name() const { return name_; }
  bool is_postgres() const;

  // Appends a run file: the run, per benchmark its median, sample count and samples, its claims
  // and the whole document; returns the run's row id. `run_file` is the path recorded. A run
  // already stored (same run_identity) is not stored again: its id is returned and
  // `*stored_before` set (a run stored before documents were kept gets its document now).
  // Throws HistoryBusy where retrying may help.
  std::int64_t append_run(const nlohmann::json& run_doc, const std::string& run_file, bool* stored_before = nullptr);

  struct RunInfo {
    std::int64_t id = 0;
    std::string run_uid, machine_key, machine_kind, started_at, git_sha;
  };
  struct RunPoint {
    std::int64_t run_id;
    std::shared_ptr<const RunInfo> run;  // its identity, time and commit: one per run, shared by its points
    double median;
    int samples;
    std::vector<double> values;  // the run's samples (one per process); only when asked for
  };
  struct Series {
    std::string benchmark, metric, unit, better;
    std::vector<RunPoint> points;  // oldest first
    std::string experiment;        // the experiment the benchmark belongs to
  };
  // Per-run medians of each benchmark (or just `benchmark`) on one machine, oldest first, from
  // the stored medians (never the raw samples); `with_values` adds each run's samples.
  std::vector<Series> series(const std::string& machine_key, const std::string& benchmark = "", int last_runs = 0,
                             bool with_values = true);

  struct ChangePoint {
    std::int64_t run_id;
    double before, after;
  };
  // Replaces the stored change points of a benchmark on a machine.
  void store_change_points(const std::string& benchmark, const std::string& machine_key,
                           const std::vector<ChangePoint>& points);
  // Replaces the stored change points of every benchmark in `by_benchmark` on a machine, in one
  // transaction (one round trip per benchmark would dominate `history` over a server).
  void store_change_points(const std::string& machine_key,
                           const std::vector<std::pair<std::string, std::vector<ChangePoint>>>& by_benchmark);
  struct StoredChangePoint {
    std::string machine_key, benchmark, run_uid;
    double before, after;
  };
  std::vector<StoredChangePoint> change_points();

  // The machine's baseline: one per machine key, a stored run.
  void set_baseline(const std::string& machine_key, std::int64_t run_id);
  std::int64_t baseline_run(const std::string& machine_key);  // 0 where none
  std::int64_t run_count();

  struct Machine {
    std::string machine_key, machine_kind;
    std::int64_t runs = 0;
    RunInfo last_run;
  };
  // Every machine key with its run count and latest run (by started_at), in key order.
  std::vector<Machine> machines();
  // Each machine's latest run of commit `git_sha` (a full SHA, or a prefix of at least 7 hex digits).
  std::vector<RunInfo> latest_runs_of_commit(const std::string& git_sha);
  // The run stored under row id `run_id`, or under run identity `run_uid`.
  std::optional<RunInfo> run(std::int64_t run_id);
  std::optional<RunInfo> run_by_uid(const std::string& run_uid);
  // The whole run file as stored; nullopt for runs stored before documents were kept.
  std::optional<nlohmann::json> run_document(std::int64_t run_id);
  // Each machine's latest run that has `pairbench.claims`, with them.
  std::vector<std::pair<RunInfo, nlohmann::json>> latest_claims();

  // --- regressions tracked until fixed (`pairbench regressions`; the rules: harness/analysis/regressions.h)
  // A confirmed regression of one benchmark on one machine. Unknown numbers are NaN (stored NULL).
  struct Regression {
    std::int64_t id = 0;
    std::string machine_key, benchmark, instrument, metric, unit, better;
    std::string state = "open";                                              // open | acknowledged | fixed
    std::string last_good_sha, last_good_run, first_bad_sha, first_bad_run;  // the commit range
    std::string culprit_sha;                                                 // "" until a bisection names it
    double change = 0, change_low = 0, change_high = 0;  // relative, + = worse, as the gate decided it
    double threshold = 0.05;
    double level_before = 0, level_after = 0;  // the metric's median before it, and when first seen
    std::string first_seen_at, first_seen_run, last_seen_at, last_seen_run;  // run start times and ids
    std::int64_t times_seen = 1;
    std::string acknowledged_at, ack_reason;
    std::string fixed_at, fixed_run, fixed_reason;
  };
  struct RecordedRegression {
    std::int64_t id = 0;
    bool is_new = false;  // false: its benchmark already had one open or acknowledged on its machine
  };
  // Stores `r` as a new open regression, unless its benchmark already has one open or acknowledged
  // on its machine: then that one was seen again (last seen, times seen; counted once per run; a
  // culprit given fills it) and nothing else changes. One transaction; concurrent recorders of
  // the same regression store it once.
  RecordedRegression record_regression(const Regression& r);
  // Every regression (of `machine_key`, or all), open and acknowledged ones only unless
  // `include_fixed`; by machine, then id.
  std::vector<Regression> regressions(const std::string& machine_key = "", bool include_fixed = false);
  std::optional<Regression> regression(std::int64_t id);
  // Marks a regression that is not fixed acknowledged, with `reason` at time `at`; false where
  // none with that id is open or acknowledged.
  bool acknowledge_regression(std::int64_t id, const std::string& reason, const std::string& at);
  // Marks a regression that is not fixed fixed: when (the run's start), in which run, and why.
  void fix_regression(std::int64_t id, const std::string& at, const std::string& run, const std::string& reason);

 private:
  std::unique_ptr<sql::Connection> db_;
  std::string name_;
  // Benchmark row ids this connection has seen committed: a writer of many runs names each once.
  std::unordered_map<std::string, std::int64_t> benchmark_ids_;
};

}  // namespace pairbench::harness
