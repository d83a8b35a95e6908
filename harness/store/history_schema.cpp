// The history's schema, its migrations and its packed forms (history_schema.h).
#include "harness/store/history_schema.h"

#include <zlib.h>

#include <cstdio>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "harness/stats/stats.h"
#include "harness/store/history.h"

namespace pairbench::harness::history_schema {

using sql::Bytes;
using sql::Connection;
using sql::Dialect;
using sql::Transaction;

std::string values_json(const std::vector<double>& values) { return nlohmann::json(values).dump(); }

namespace {

// --- schema --------------------------------------------------------------------------------------
// Version 1: the first schema (SQLite only; one row per sample). Version 2: one row per run and
// benchmark with its median, sample count and samples (so that `history` over 10,000 runs reads
// medians, never raw samples), benchmarks named once, the run's identity, machine kind and
// claims, and the whole run file (deflated) for gating from the database. On SQLite, `samples`
// stays readable as a view (plots/ read it once; it now reads `history export` only). Version 3: each run's medians packed in one row as
// well (benchmark ids, medians and sample counts as little-endian arrays), so that `history`
// over 10,000 runs x 300 benchmarks reads 10,000 rows, not 3 million. Version 4: regressions
// tracked until fixed (`pairbench regressions`), at most one not fixed per machine and benchmark.

constexpr const char* kSqliteVersion1 = R"sql(
CREATE TABLE IF NOT EXISTS runs(
  id INTEGER PRIMARY KEY,
  started_at TEXT NOT NULL,        -- ISO-8601 UTC
  git_sha TEXT NOT NULL,
  machine_key TEXT NOT NULL,
  profile TEXT NOT NULL,
  fingerprint TEXT NOT NULL,       -- JSON
  run_file TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS samples(
  run_id INTEGER NOT NULL REFERENCES runs(id),
  benchmark TEXT NOT NULL,
  experiment TEXT NOT NULL,
  arm TEXT NOT NULL,
  repetition INTEGER NOT NULL,
  metric TEXT NOT NULL,
  unit TEXT NOT NULL,
  better TEXT NOT NULL,
  value REAL NOT NULL);
CREATE TABLE IF NOT EXISTS baselines(
  machine_key TEXT PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id),
  updated_at TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS change_points(
  benchmark TEXT NOT NULL,
  machine_key TEXT NOT NULL,
  run_id INTEGER NOT NULL,
  before REAL NOT NULL,
  after REAL NOT NULL,
  PRIMARY KEY(benchmark, machine_key, run_id));
CREATE INDEX IF NOT EXISTS samples_by_benchmark ON samples(benchmark, run_id);
CREATE INDEX IF NOT EXISTS runs_by_machine ON runs(machine_key, started_at);
)sql";

constexpr const char* kSqliteVersion2 = R"sql(
CREATE UNIQUE INDEX IF NOT EXISTS runs_by_uid ON runs(run_uid);
ALTER TABLE runs ADD COLUMN machine_kind TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN claims TEXT;     -- the run's pairbench.claims (JSON); NULL where it had none
CREATE INDEX runs_by_commit ON runs(git_sha);
CREATE TABLE benchmarks(
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  experiment TEXT NOT NULL,
  arm TEXT NOT NULL,
  metric TEXT NOT NULL,
  unit TEXT NOT NULL,
  better TEXT NOT NULL);
CREATE TABLE run_benchmarks(
  run_id INTEGER NOT NULL REFERENCES runs(id),
  benchmark_id INTEGER NOT NULL REFERENCES benchmarks(id),
  median REAL NOT NULL,
  samples INTEGER NOT NULL,
  sample_values TEXT NOT NULL,     -- JSON array, one value per process, in repetition order
  PRIMARY KEY(run_id, benchmark_id)) WITHOUT ROWID;
CREATE INDEX run_benchmarks_by_benchmark ON run_benchmarks(benchmark_id, run_id);
CREATE TABLE run_documents(
  run_id INTEGER PRIMARY KEY REFERENCES runs(id),
  size INTEGER NOT NULL,           -- bytes of the JSON before deflating
  document BLOB NOT NULL);
)sql";

constexpr const char* kSqliteSamplesView = R"sql(
CREATE VIEW samples AS
  SELECT rb.run_id AS run_id, b.name AS benchmark, b.experiment AS experiment, b.arm AS arm,
         CAST(j.key AS INTEGER) AS repetition, b.metric AS metric, b.unit AS unit, b.better AS better,
         j.value AS value
  FROM run_benchmarks rb JOIN benchmarks b ON b.id = rb.benchmark_id, json_each(rb.sample_values) j;
)sql";

constexpr const char* kSqliteVersion3 = R"sql(
CREATE TABLE run_medians(
  run_id INTEGER PRIMARY KEY REFERENCES runs(id),
  benchmark_ids BLOB NOT NULL,     -- int32 little-endian, ascending
  medians BLOB NOT NULL,           -- float64 little-endian, one per benchmark id
  samples BLOB NOT NULL);          -- int32 little-endian, one per benchmark id
)sql";

constexpr const char* kPostgresVersion3 = R"sql(
CREATE TABLE run_medians(
  run_id BIGINT PRIMARY KEY REFERENCES runs(id),
  benchmark_ids BYTEA NOT NULL,
  medians BYTEA NOT NULL,
  samples BYTEA NOT NULL);
)sql";

// Version 4, both back ends (one text: INTEGER PRIMARY KEY is SQLite's rowid; PostgreSQL's identity
// column says the same). The partial unique index keeps one open or acknowledged regression per
// machine and benchmark even when two recorders race.
constexpr const char* kRegressionsColumns = R"sql(
  machine_key TEXT NOT NULL,
  benchmark TEXT NOT NULL,
  instrument TEXT NOT NULL,        -- time | instructions: what the gate found slower
  metric TEXT NOT NULL,
  unit TEXT NOT NULL,
  better TEXT NOT NULL,            -- lower | higher
  state TEXT NOT NULL,             -- open | acknowledged | fixed
  last_good_sha TEXT NOT NULL,     -- the commit range: last good .. first bad
  last_good_run TEXT NOT NULL,
  first_bad_sha TEXT NOT NULL,
  first_bad_run TEXT NOT NULL,
  culprit_sha TEXT NOT NULL,       -- named by a bisection; '' until then
  change REAL,                     -- relative change, + = worse, with its interval (NULL: unbounded)
  change_low REAL,
  change_high REAL,
  threshold REAL NOT NULL,
  level_before REAL,               -- the metric's median before the regression (NULL: unknown)
  level_after REAL,                -- and when it was first seen
  first_seen_at TEXT NOT NULL,     -- ISO-8601 UTC: the run's start
  first_seen_run TEXT NOT NULL,
  last_seen_at TEXT NOT NULL,
  last_seen_run TEXT NOT NULL,
  times_seen INTEGER NOT NULL,     -- gates (runs) that confirmed it
  acknowledged_at TEXT,
  ack_reason TEXT,
  fixed_at TEXT,                   -- the start of the run where the level returned
  fixed_run TEXT,
  fixed_reason TEXT);
CREATE UNIQUE INDEX regressions_not_fixed ON regressions(machine_key, benchmark) WHERE state <> 'fixed';
CREATE INDEX regressions_by_state ON regressions(state, machine_key);
)sql";

void create_regressions(Connection& c) {
  const std::string id = c.dialect() == Dialect::kSqlite ? "id INTEGER PRIMARY KEY," : "id BIGSERIAL PRIMARY KEY,";
  // PostgreSQL has no REAL of 8 bytes by that name: DOUBLE PRECISION.
  std::string columns = kRegressionsColumns;
  if (c.dialect() == Dialect::kPostgres) {
    for (std::size_t at = columns.find(" REAL"); at != std::string::npos; at = columns.find(" REAL", at + 1)) {
      columns.replace(at, 5, " DOUBLE PRECISION");
    }
  }
  c.exec("CREATE TABLE regressions(\n  " + id + columns);
}

constexpr const char* kPostgresVersion1 = R"sql(
CREATE TABLE runs(
  id BIGSERIAL PRIMARY KEY,
  started_at TEXT NOT NULL,
  git_sha TEXT NOT NULL,
  machine_key TEXT NOT NULL,
  profile TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  run_file TEXT NOT NULL);
CREATE TABLE baselines(
  machine_key TEXT PRIMARY KEY,
  run_id BIGINT NOT NULL REFERENCES runs(id),
  updated_at TEXT NOT NULL);
CREATE TABLE change_points(
  benchmark TEXT NOT NULL,
  machine_key TEXT NOT NULL,
  run_id BIGINT NOT NULL,
  before DOUBLE PRECISION NOT NULL,
  after DOUBLE PRECISION NOT NULL,
  PRIMARY KEY(benchmark, machine_key, run_id));
CREATE INDEX runs_by_machine ON runs(machine_key, started_at);
)sql";

constexpr const char* kPostgresVersion2 = R"sql(
ALTER TABLE runs ADD COLUMN run_uid TEXT;
CREATE UNIQUE INDEX runs_by_uid ON runs(run_uid);
ALTER TABLE runs ADD COLUMN machine_kind TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN claims TEXT;
CREATE INDEX runs_by_commit ON runs(git_sha);
CREATE TABLE benchmarks(
  id BIGSERIAL PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  experiment TEXT NOT NULL,
  arm TEXT NOT NULL,
  metric TEXT NOT NULL,
  unit TEXT NOT NULL,
  better TEXT NOT NULL);
CREATE TABLE run_benchmarks(
  run_id BIGINT NOT NULL REFERENCES runs(id),
  benchmark_id BIGINT NOT NULL REFERENCES benchmarks(id),
  median DOUBLE PRECISION NOT NULL,
  samples INTEGER NOT NULL,
  sample_values TEXT NOT NULL,
  PRIMARY KEY(run_id, benchmark_id));
CREATE INDEX run_benchmarks_by_benchmark ON run_benchmarks(benchmark_id, run_id);
CREATE TABLE run_documents(
  run_id BIGINT PRIMARY KEY REFERENCES runs(id),
  size BIGINT NOT NULL,
  document BYTEA NOT NULL);
)sql";

// A number in a JSON array, shortest text that reads back exactly (nlohmann's dump does this).
std::string machine_kind_of_fingerprint(const std::string& fingerprint_json) {
  const auto env = nlohmann::json::parse(fingerprint_json, nullptr, /*allow_exceptions=*/false);
  return env.is_object() ? machine_kind(env) : "";
}

// SQLite version 1 -> 2: the samples become one row per run and benchmark (values kept in
// repetition order, medians computed here: SQLite has no median), and `samples` a view of them.
void sqlite_samples_to_run_benchmarks(Connection& c) {
  bool has_uid = false;
  for (const auto& row : c.query("PRAGMA table_info(runs)")) has_uid = has_uid || row.text(1) == "run_uid";
  if (!has_uid) c.exec("ALTER TABLE runs ADD COLUMN run_uid TEXT");  // histories from before run identities
  c.exec(kSqliteVersion2);
  for (const auto& row : c.query("SELECT id, fingerprint FROM runs")) {
    c.query("UPDATE runs SET machine_kind = ? WHERE id = ?",
            {machine_kind_of_fingerprint(row.text(1)), row.integer(0)});
  }
  c.exec(R"sql(INSERT OR IGNORE INTO benchmarks(name, experiment, arm, metric, unit, better)
               SELECT benchmark, min(experiment), min(arm), min(metric), min(unit), min(better)
               FROM samples GROUP BY benchmark)sql");
  std::int64_t run = -1, bench = -1;
  std::vector<double> values;
  auto flush = [&] {
    if (values.empty()) return;
    c.query("INSERT INTO run_benchmarks(run_id, benchmark_id, median, samples, sample_values) VALUES(?,?,?,?,?)",
            {run, bench, stats::median(values), static_cast<std::int64_t>(values.size()), values_json(values)});
    values.clear();
  };
  for (const auto& row :
       c.query("SELECT s.run_id, b.id, s.value FROM samples s JOIN benchmarks b ON b.name = s.benchmark "
               "ORDER BY s.run_id, b.id, s.repetition, s.rowid")) {
    if (row.integer(0) != run || row.integer(1) != bench) {
      flush();
      run = row.integer(0);
      bench = row.integer(1);
    }
    values.push_back(row.real(2));
  }
  flush();
  c.exec("DROP TABLE samples");
  c.exec(kSqliteSamplesView);
}

// Version 2 -> 3 on either back end: every stored run's medians packed into its row, one run at
// a time (a history of millions of medians is never held at once).
void pack_run_medians(Connection& c) {
  c.exec(c.dialect() == Dialect::kSqlite ? kSqliteVersion3 : kPostgresVersion3);
  for (const auto& run : c.query("SELECT id FROM runs ORDER BY id")) {
    PackedMedians packed;
    for (const auto& row : c.query("SELECT benchmark_id, median, samples FROM run_benchmarks WHERE run_id = ? "
                                   "ORDER BY benchmark_id",
                                   {run.integer(0)})) {
      packed.add(row.integer(0), row.real(1), row.integer(2));
    }
    if (!packed.ids.empty()) packed.store(c, run.integer(0));
  }
}

struct Migration {
  int version;
  std::function<void(Connection&)> apply;
};

const std::vector<Migration>& migrations(Dialect d) {
  static const std::vector<Migration> sqlite = {
      {1, [](Connection& c) { c.exec(kSqliteVersion1); }},
      {2, sqlite_samples_to_run_benchmarks},
      {3, pack_run_medians},
      {4, create_regressions},
  };
  static const std::vector<Migration> postgres = {
      {1, [](Connection& c) { c.exec(kPostgresVersion1); }},
      {2, [](Connection& c) { c.exec(kPostgresVersion2); }},
      {3, pack_run_medians},
      {4, create_regressions},
  };
  return d == Dialect::kSqlite ? sqlite : postgres;
}

std::string application_id_text() {
  char id[16];
  std::snprintf(id, sizeof id, "0x%08x", static_cast<unsigned>(kHistoryApplicationId));
  return id;
}

// Whether the database is a pairbench history of this schema version, read without a lock: the
// common case for every open after the first, which then takes no lock at all.
bool postgres_schema_current(Connection& c) {
  if (c.query("SELECT to_regclass('pairbench_meta')")[0].null(0)) return false;
  const auto rows = c.query("SELECT key, value FROM pairbench_meta WHERE key IN ('application_id', 'schema_version')");
  std::map<std::string, std::string> meta;
  for (const auto& r : rows) meta[r.text(0)] = r.text(1);
  return meta["application_id"] == application_id_text() &&
         meta["schema_version"] == std::to_string(kHistorySchemaVersion);
}

}  // namespace

std::int64_t schema_version(Connection& c) {
  if (c.dialect() == Dialect::kSqlite) return sql::sqlite_pragma(c, "user_version");
  const auto rows = c.query("SELECT value FROM pairbench_meta WHERE key = 'schema_version'");
  return rows.empty() ? 0 : std::stoll(rows[0].text(0));
}

void migrate(Connection& c, std::int64_t from) {
  for (const auto& m : migrations(c.dialect())) {
    if (m.version <= from) continue;
    m.apply(c);
  }
  if (c.dialect() == Dialect::kSqlite) {
    c.exec("PRAGMA user_version = " + std::to_string(kHistorySchemaVersion));
  } else {
    c.query("UPDATE pairbench_meta SET value = ? WHERE key = 'schema_version'",
            {std::to_string(kHistorySchemaVersion)});
  }
}

// PostgreSQL: the identity lives in pairbench_meta. A database with none of it and no tables is
// made a history; one with other tables, another application_id or a newer schema is refused.
// Concurrent openers of a new database queue on an advisory lock, so the schema is made once.
void open_postgres_schema(Connection& c) {
  if (postgres_schema_current(c)) return;
  Transaction t(c);
  c.query("SELECT pg_advisory_xact_lock(?)", {static_cast<std::int64_t>(kHistoryApplicationId)});
  const bool has_meta = !c.query("SELECT to_regclass('pairbench_meta')")[0].null(0);
  std::int64_t from = 0;
  if (!has_meta) {
    std::string names;
    for (const auto& row :
         c.query("SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
                 "ORDER BY table_name")) {
      names += (names.empty() ? "" : ", ") + row.text(0);
    }
    if (!names.empty()) {
      throw NotAHistory(c.name() + ": a PostgreSQL database with tables " + names +
                        ", not a pairbench history (pairbench makes its own in a database with no tables)");
    }
    c.exec("CREATE TABLE pairbench_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)");
    c.query("INSERT INTO pairbench_meta(key, value) VALUES('application_id', ?), ('schema_version', '0')",
            {application_id_text()});
  } else {
    const auto id = c.query("SELECT value FROM pairbench_meta WHERE key = 'application_id'");
    if (id.empty() || id[0].text(0) != application_id_text()) {
      throw NotAHistory(c.name() + ": a PostgreSQL database of another program (pairbench_meta.application_id " +
                        (id.empty() ? std::string("missing") : id[0].text(0)) + "), not a pairbench history");
    }
    from = schema_version(c);
    if (from > kHistorySchemaVersion) {
      throw NotAHistory(c.name() + ": a pairbench history of schema version " + std::to_string(from) +
                        ", written by a newer pairbench (this one reads version " +
                        std::to_string(kHistorySchemaVersion) + ")");
    }
  }
  if (from < kHistorySchemaVersion) migrate(c, from);
  t.commit();
}

// --- documents -----------------------------------------------------------------------------------

Bytes deflate_text(const std::string& text) {
  uLongf size = compressBound(static_cast<uLong>(text.size()));
  std::string out(size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(out.data()), &size, reinterpret_cast<const Bytef*>(text.data()),
                static_cast<uLong>(text.size()), Z_BEST_SPEED) != Z_OK) {
    throw std::runtime_error("cannot deflate a run document");
  }
  out.resize(size);
  return {out};
}

std::string inflate_text(const std::string& deflated, std::size_t size, const std::string& what) {
  std::string out(size, '\0');
  uLongf got = static_cast<uLongf>(size);
  if (uncompress(reinterpret_cast<Bytef*>(out.data()), &got, reinterpret_cast<const Bytef*>(deflated.data()),
                 static_cast<uLong>(deflated.size())) != Z_OK ||
      got != size) {
    throw std::runtime_error(what + ": stored run document is corrupt");
  }
  return out;
}

}  // namespace pairbench::harness::history_schema
