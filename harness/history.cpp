// SQLite history: schema, appending runs, per-run medians and change points.
#include "harness/history.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>

#include "harness/file_checks.h"
#include "harness/stats.h"

namespace pairbench::harness {
namespace {

constexpr const char* kSchema = R"sql(
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

// A prepared statement that finalises itself.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql, const std::string& path) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) {
      throw std::runtime_error(path + ": " + sqlite3_errmsg(db));
    }
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement& bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& bind(int i, double v) {
    sqlite3_bind_double(stmt_, i, v);
    return *this;
  }
  Statement& bind(int i, std::int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  bool step(const std::string& path) {
    const int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED) throw HistoryBusy(path + ": " + sqlite3_errmsg(db_));
    throw std::runtime_error(path + ": " + sqlite3_errmsg(db_));
  }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  std::string text(int col) const {
    const auto* t = sqlite3_column_text(stmt_, col);
    return t ? reinterpret_cast<const char*>(t) : "";
  }
  double real(int col) const { return sqlite3_column_double(stmt_, col); }
  std::int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

// How long check_path waits for a writer's lock before leaving the judgement to the real open.
constexpr int kCheckBusyTimeoutMs = 2'000;

// Our tables and the columns a history from before application_id must have to be taken as ours.
const std::map<std::string, std::vector<std::string>> kLegacyColumns = {
    {"runs", {"id", "started_at", "git_sha", "machine_key", "profile", "fingerprint", "run_file"}},
    {"samples", {"run_id", "benchmark", "experiment", "arm", "repetition", "metric", "unit", "better", "value"}},
};
const std::set<std::string> kOurTables = {"runs", "samples", "baselines", "change_points"};

std::int64_t pragma_integer(sqlite3* db, const char* sql, const std::string& path) {
  Statement q(db, sql, path);
  if (!q.step(path)) throw std::runtime_error(path + ": " + sql + " returned nothing");
  return q.integer(0);
}

enum class Identity { kOurs, kLegacy };

// Reads (never writes) what the database at `db` is; throws NotAHistory unless it is a pairbench
// history, or one from before application_id (exactly our tables, with our columns).
Identity examine(sqlite3* db, const std::string& path) {
  std::int64_t application_id = 0, user_version = 0;
  try {
    application_id = pragma_integer(db, "PRAGMA application_id", path);
    user_version = pragma_integer(db, "PRAGMA user_version", path);
  } catch (const std::runtime_error&) {
    if (sqlite3_errcode(db) == SQLITE_NOTADB) throw NotAHistory(path + ": not an SQLite database, so not a pairbench history");
    throw;
  }
  if (application_id == kHistoryApplicationId) {
    if (user_version > kHistorySchemaVersion) {
      throw NotAHistory(path + ": a pairbench history of schema version " + std::to_string(user_version) +
                        ", written by a newer pairbench (this one reads version " +
                        std::to_string(kHistorySchemaVersion) + ")");
    }
    return Identity::kOurs;
  }
  if (application_id != 0) {
    char id[16];
    std::snprintf(id, sizeof id, "0x%08x", static_cast<unsigned>(application_id));
    throw NotAHistory(path + ": an SQLite database of another program (application_id " + id +
                      "), not a pairbench history");
  }
  std::set<std::string> tables;
  Statement q(db, "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'", path);
  while (q.step(path)) tables.insert(q.text(0));
  bool legacy = user_version == 0 && !tables.empty() &&
                std::all_of(tables.begin(), tables.end(), [](const std::string& t) { return kOurTables.count(t) > 0; });
  for (const auto& [table, columns] : kLegacyColumns) {
    if (!legacy) break;
    std::set<std::string> have;
    Statement info(db, ("PRAGMA table_info(" + table + ")").c_str(), path);
    while (info.step(path)) have.insert(info.text(1));
    legacy = std::all_of(columns.begin(), columns.end(), [&](const std::string& c) { return have.count(c) > 0; });
  }
  if (legacy) return Identity::kLegacy;
  std::string names;
  for (const auto& t : tables) names += (names.empty() ? "" : ", ") + t;
  throw NotAHistory(path + ": an SQLite database " +
                    (tables.empty() ? std::string("with no tables") : "with tables " + names) +
                    ", not a pairbench history (pairbench creates its own where nothing exists yet)");
}

// Refuses what cannot be a history before SQLite sees it: SQLite would block on a FIFO, and would
// take an empty file for an empty database and write into it.
void refuse_non_history_file(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return;  // absent: created on open
  if (const std::string why = non_regular_reason(path); !why.empty()) {
    throw NotAHistory(path + ": " + why + ", not a history database");
  }
  if (st.st_size == 0) throw NotAHistory(path + ": an empty file, not a pairbench history");
}

sqlite3* open_existing(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_FULLMUTEX, nullptr) != SQLITE_OK) {
    const std::string why = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    throw std::runtime_error(path + ": cannot open history database: " + why);
  }
  return db;
}

// Builds a new, stamped history in a temporary file beside `path` and moves it into place unless
// another process got there first. `path` never holds a half-made or empty database, which a
// concurrent opener would refuse.
void create_history(const std::string& path, const char* schema) {
  std::string tmp = path + ".new-XXXXXX";
  const int fd = mkstemp(tmp.data());
  if (fd < 0) throw std::runtime_error(path + ": cannot create history database: " + std::strerror(errno));
  fchmod(fd, 0644);
  close(fd);
  sqlite3* db = nullptr;
  try {
    db = open_existing(tmp);
    const std::string sql = "PRAGMA application_id = " + std::to_string(kHistoryApplicationId) +
                            "; PRAGMA user_version = " + std::to_string(kHistorySchemaVersion) +
                            "; BEGIN; " + schema + "; COMMIT;";
    char* err = nullptr;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      const std::string why = err ? err : sqlite3_errmsg(db);
      sqlite3_free(err);
      throw std::runtime_error(path + ": cannot create history database: " + why);
    }
    if (sqlite3_close(db) != SQLITE_OK) {
      db = nullptr;
      throw std::runtime_error(path + ": cannot create history database: close failed");
    }
    db = nullptr;
    // No-replace moves: a history another process has just created is kept, never overwritten.
    if (renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) != 0 && errno != EEXIST) {
      if (link(tmp.c_str(), path.c_str()) != 0 && errno != EEXIST) {
        throw std::runtime_error(path + ": cannot create history database: " + std::strerror(errno));
      }
    }
  } catch (...) {
    if (db) sqlite3_close(db);
    unlink(tmp.c_str());
    throw;
  }
  unlink(tmp.c_str());  // still there where link() made the history or another process won
}

}  // namespace

void History::check_path(const std::string& path) {
  refuse_non_history_file(path);
  if (non_regular_reason(path) == "does not exist") return;
  sqlite3* db = open_existing(path);
  sqlite3_busy_timeout(db, kCheckBusyTimeoutMs);
  try {
    examine(db, path);
  } catch (const NotAHistory&) {
    sqlite3_close(db);
    throw;
  } catch (const HistoryBusy&) {
    sqlite3_close(db);
    return;  // held by a writer past the wait: judged again when opened for use, which waits longer
  } catch (const std::runtime_error&) {
    const int code = sqlite3_errcode(db) & 0xff;
    sqlite3_close(db);
    if (code == SQLITE_BUSY || code == SQLITE_LOCKED) return;
    throw;
  }
  sqlite3_close(db);
}

History::History(const std::string& path, int busy_timeout_ms) : path_(path) {
  refuse_non_history_file(path);
  if (non_regular_reason(path) == "does not exist") create_history(path, kSchema);
  refuse_non_history_file(path);  // what another process may have put there meanwhile
  db_ = open_existing(path);
  sqlite3_busy_timeout(db_, busy_timeout_ms);
  try {
    const Identity identity = examine(db_, path);
    exec("PRAGMA journal_mode=WAL");    // readers never block the writer, and vice versa
    exec("PRAGMA synchronous=NORMAL");  // with WAL: durable at checkpoints, never corrupt
    exec("PRAGMA foreign_keys=ON");
    exec("BEGIN IMMEDIATE");
    if (identity == Identity::kLegacy) {
      // A history from before the stamp: ours by its tables. Stamped once; later opens see the id.
      exec(("PRAGMA application_id = " + std::to_string(kHistoryApplicationId)).c_str());
      exec(("PRAGMA user_version = " + std::to_string(kHistorySchemaVersion)).c_str());
    }
    exec(kSchema);
    exec("COMMIT");
  } catch (...) {
    sqlite3_close(db_);
    throw;
  }
}

History::~History() { sqlite3_close(db_); }

void History::exec(const char* sql) {
  char* err = nullptr;
  if (const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err); rc != SQLITE_OK) {
    const std::string why = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED) throw HistoryBusy(path_ + ": " + why);
    throw std::runtime_error(path_ + ": " + why);
  }
}

std::string run_identity(const nlohmann::json& doc) {
  const auto& pb = doc.at("pairbench");
  if (const auto it = pb.find("run_id"); it != pb.end() && it->is_string() && !it->get<std::string>().empty()) {
    return it->get<std::string>();
  }
  // FNV-1a over the whole run but its history-write note (nlohmann's dump is canonical: sorted
  // keys), so the same run file is the same run whatever its name or formatting.
  nlohmann::json content = doc;
  content["pairbench"].erase("history_write");
  const std::string key = content.dump();
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (const unsigned char c : key) hash = (hash ^ c) * 0x100000001b3ull;
  char id[40];
  std::snprintf(id, sizeof id, "derived-%016llx", static_cast<unsigned long long>(hash));
  return id;
}

std::int64_t History::append_run(const nlohmann::json& doc, const std::string& run_file, bool* stored_before) {
  const auto& pb = doc.at("pairbench");
  const auto& env = pb.at("environment");
  // Metric, unit and direction per experiment, from the run's summary.
  std::map<std::string, std::tuple<std::string, std::string, std::string>> metric_of;
  for (const auto& e : pb.at("experiments")) {
    metric_of[e.at("name")] = {e.at("metric"), e.at("unit"), e.at("better")};
  }
  const std::string uid = run_identity(doc);
  exec("BEGIN IMMEDIATE");  // takes the write lock up front: concurrent appenders queue here
  try {
    // Histories from before run identities get the column here, inside the write transaction;
    // older rows keep NULL (UNIQUE allows any number of NULLs).
    bool has_uid = false;
    {
      Statement columns(db_, "PRAGMA table_info(runs)", path_);
      while (columns.step(path_)) has_uid = has_uid || columns.text(1) == "run_uid";
    }
    if (!has_uid) exec("ALTER TABLE runs ADD COLUMN run_uid TEXT");
    exec("CREATE UNIQUE INDEX IF NOT EXISTS runs_by_uid ON runs(run_uid)");
    std::int64_t stored_id = 0;
    {
      Statement existing(db_, "SELECT id FROM runs WHERE run_uid = ?", path_);
      existing.bind(1, uid);
      if (existing.step(path_)) stored_id = existing.integer(0);
    }
    if (stored_id) {
      exec("COMMIT");
      if (stored_before) *stored_before = true;
      return stored_id;
    }
    Statement run(db_, "INSERT INTO runs(started_at, git_sha, machine_key, profile, fingerprint, run_file, run_uid) "
                       "VALUES(?,?,?,?,?,?,?)", path_);
    run.bind(1, pb.value("started_at", ""))
        .bind(2, env.value("git_sha", ""))
        .bind(3, env.value("machine_key", ""))
        .bind(4, pb.value("profile", ""))
        .bind(5, env.dump())
        .bind(6, run_file)
        .bind(7, uid);
    run.step(path_);
    const std::int64_t run_id = sqlite3_last_insert_rowid(db_);
    Statement sample(db_, "INSERT INTO samples(run_id, benchmark, experiment, arm, repetition, metric, unit, better, value) "
                          "VALUES(?,?,?,?,?,?,?,?,?)", path_);
    for (const auto& b : doc.at("benchmarks")) {
      const std::string experiment = b.at("experiment");
      const auto it = metric_of.find(experiment);
      if (it == metric_of.end()) continue;
      const auto& [metric, unit, better] = it->second;
      sample.bind(1, run_id)
          .bind(2, b.at("name").get<std::string>())
          .bind(3, experiment)
          .bind(4, b.at("arm").get<std::string>())
          .bind(5, static_cast<std::int64_t>(b.value("repetition_index", 0)))
          .bind(6, metric)
          .bind(7, unit)
          .bind(8, better)
          .bind(9, b.at("metric_value").get<double>());
      sample.step(path_);
      sample.reset();
    }
    exec("COMMIT");
    if (stored_before) *stored_before = false;
    return run_id;
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

std::vector<History::Series> History::series(const std::string& machine_key, const std::string& benchmark,
                                             int last_runs) {
  // Samples of the machine's runs, oldest run first; medians are taken here (SQLite has none).
  std::string sql =
      "SELECT s.benchmark, s.metric, s.unit, s.better, r.id, r.started_at, r.git_sha, s.value "
      "FROM samples s JOIN runs r ON r.id = s.run_id WHERE r.machine_key = ?1";
  if (!benchmark.empty()) sql += " AND s.benchmark = ?2";
  if (last_runs > 0) {
    sql += " AND r.id IN (SELECT id FROM runs WHERE machine_key = ?1 ORDER BY started_at DESC, id DESC LIMIT " +
           std::to_string(last_runs) + ")";
  }
  sql += " ORDER BY s.benchmark, r.started_at, r.id";
  Statement q(db_, sql.c_str(), path_);
  q.bind(1, machine_key);
  if (!benchmark.empty()) q.bind(2, benchmark);
  std::vector<Series> out;
  std::vector<double> values;
  auto flush_point = [&] {
    if (values.empty()) return;
    out.back().points.back().median = stats::median(values);
    out.back().points.back().samples = static_cast<int>(values.size());
    out.back().points.back().values = std::move(values);
    values.clear();
  };
  while (q.step(path_)) {
    const std::string name = q.text(0);
    const std::int64_t run_id = q.integer(4);
    if (out.empty() || out.back().benchmark != name) {
      flush_point();
      out.push_back({name, q.text(1), q.text(2), q.text(3), {}});
    }
    if (out.back().points.empty() || out.back().points.back().run_id != run_id) {
      flush_point();
      out.back().points.push_back({run_id, q.text(5), q.text(6), 0, 0, {}});
    }
    values.push_back(q.real(7));
  }
  flush_point();
  return out;
}

void History::store_change_points(const std::string& benchmark, const std::string& machine_key,
                                  const std::vector<ChangePoint>& points) {
  exec("BEGIN IMMEDIATE");
  try {
    Statement del(db_, "DELETE FROM change_points WHERE benchmark = ? AND machine_key = ?", path_);
    del.bind(1, benchmark).bind(2, machine_key);
    del.step(path_);
    Statement ins(db_, "INSERT INTO change_points(benchmark, machine_key, run_id, before, after) VALUES(?,?,?,?,?)",
                  path_);
    for (const auto& p : points) {
      ins.bind(1, benchmark).bind(2, machine_key).bind(3, p.run_id).bind(4, p.before).bind(5, p.after);
      ins.step(path_);
      ins.reset();
    }
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

void History::set_baseline(const std::string& machine_key, std::int64_t run_id) {
  Statement q(db_, "INSERT INTO baselines(machine_key, run_id, updated_at) VALUES(?,?,strftime('%Y-%m-%dT%H:%M:%SZ','now')) "
                   "ON CONFLICT(machine_key) DO UPDATE SET run_id = excluded.run_id, updated_at = excluded.updated_at",
              path_);
  q.bind(1, machine_key).bind(2, run_id);
  q.step(path_);
}

std::int64_t History::baseline_run(const std::string& machine_key) {
  Statement q(db_, "SELECT run_id FROM baselines WHERE machine_key = ?", path_);
  q.bind(1, machine_key);
  return q.step(path_) ? q.integer(0) : 0;
}

std::int64_t History::run_count() {
  Statement q(db_, "SELECT count(*) FROM runs", path_);
  q.step(path_);
  return q.integer(0);
}

}  // namespace pairbench::harness
