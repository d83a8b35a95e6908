// The SQLite back end of the history: a Connection over sqlite3, and what only an SQLite file
// needs: refusing files that are not histories before SQLite sees them, creating a new history
// complete beside its path and moving it into place, and recognising histories from before the
// application_id stamp.
#include <fcntl.h>
#include <functional>
#include <sqlite3.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <set>
#include <stdexcept>

#include "harness/store/file_checks.h"
#include "harness/store/history.h"
#include "harness/store/history_sql.h"

namespace pairbench::harness::sql {
namespace {

bool is_busy(int rc) { return (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED; }

class SqliteConnection final : public Connection {
 public:
  // One thread per connection (a History is never shared between threads): no per-call mutex,
  // which cost an eighth of reading a large history.
  SqliteConnection(const std::string& path, int busy_timeout_ms) : path_(path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
      const std::string why = db_ ? sqlite3_errmsg(db_) : "out of memory";
      sqlite3_close(db_);
      throw std::runtime_error(path + ": cannot open history database: " + why);
    }
    sqlite3_busy_timeout(db_, busy_timeout_ms);
  }
  ~SqliteConnection() override { sqlite3_close(db_); }

  Dialect dialect() const override { return Dialect::kSqlite; }
  const std::string& name() const override { return path_; }

  void exec(const std::string& statements) override {
    char* err = nullptr;
    if (const int rc = sqlite3_exec(db_, statements.c_str(), nullptr, nullptr, &err); rc != SQLITE_OK) {
      const std::string why = err ? err : sqlite3_errmsg(db_);
      sqlite3_free(err);
      fail(rc, why);
    }
  }

  std::vector<Row> query(const std::string& statement, const std::vector<Value>& params) override {
    std::vector<Row> rows;
    for_each_row(statement, params, [&](const Row& row) { rows.push_back(row); });
    return rows;
  }

  void for_each_row(const std::string& statement, const std::vector<Value>& params,
                    const std::function<void(const Row&)>& each) override {
    sqlite3_stmt* stmt = nullptr;
    if (const int rc = sqlite3_prepare_v2(db_, statement.c_str(), -1, &stmt, nullptr); rc != SQLITE_OK) {
      fail(rc, sqlite3_errmsg(db_));
    }
    try {
      for (std::size_t i = 0; i < params.size(); ++i) bind(stmt, static_cast<int>(i + 1), params[i]);
      Row row;
      for (;;) {
        const int rc = sqlite3_step(stmt);
        if (rc == SQLITE_DONE) break;
        if (rc != SQLITE_ROW) fail(rc, sqlite3_errmsg(db_));
        const int n = sqlite3_column_count(stmt);
        row.columns.resize(n);
        for (int c = 0; c < n; ++c) row.columns[c] = column(stmt, c);
        each(row);
      }
    } catch (...) {
      sqlite3_finalize(stmt);
      throw;
    }
    sqlite3_finalize(stmt);
  }

  void begin() override { exec("BEGIN IMMEDIATE"); }
  void rollback() noexcept override { sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr); }

  sqlite3* handle() const { return db_; }

 private:
  [[noreturn]] void fail(int rc, const std::string& why) const {
    if (is_busy(rc)) throw HistoryBusy(path_ + ": " + why);
    throw std::runtime_error(path_ + ": " + why);
  }
  static void bind(sqlite3_stmt* stmt, int i, const Value& v) {
    if (const auto* s = std::get_if<std::string>(&v)) {
      sqlite3_bind_text(stmt, i, s->c_str(), static_cast<int>(s->size()), SQLITE_TRANSIENT);
    } else if (const auto* b = std::get_if<Bytes>(&v)) {
      sqlite3_bind_blob(stmt, i, b->data.data(), static_cast<int>(b->data.size()), SQLITE_TRANSIENT);
    } else if (const auto* n = std::get_if<std::int64_t>(&v)) {
      sqlite3_bind_int64(stmt, i, *n);
    } else if (const auto* d = std::get_if<double>(&v)) {
      sqlite3_bind_double(stmt, i, *d);
    } else {
      sqlite3_bind_null(stmt, i);
    }
  }
  static Value column(sqlite3_stmt* stmt, int c) {
    switch (sqlite3_column_type(stmt, c)) {
      case SQLITE_INTEGER:
        return static_cast<std::int64_t>(sqlite3_column_int64(stmt, c));
      case SQLITE_FLOAT:
        return sqlite3_column_double(stmt, c);
      case SQLITE_TEXT:
        return std::string(reinterpret_cast<const char*>(sqlite3_column_text(stmt, c)),
                           static_cast<std::size_t>(sqlite3_column_bytes(stmt, c)));
      case SQLITE_BLOB: {
        const auto* p = static_cast<const char*>(sqlite3_column_blob(stmt, c));
        return Bytes{std::string(p ? p : "", static_cast<std::size_t>(sqlite3_column_bytes(stmt, c)))};
      }
      default:
        return nullptr;
    }
  }

  sqlite3* db_ = nullptr;
  std::string path_;
};

// How long check_path waits for a writer's lock before leaving the judgement to the real open.
constexpr int kCheckBusyTimeoutMs = 2'000;

// The tables and columns a history from before application_id must have to be taken as ours.
const std::map<std::string, std::vector<std::string>> kLegacyColumns = {
    {"runs", {"id", "started_at", "git_sha", "machine_key", "profile", "fingerprint", "run_file"}},
    {"samples", {"run_id", "benchmark", "experiment", "arm", "repetition", "metric", "unit", "better", "value"}},
};
const std::set<std::string> kLegacyTables = {"runs", "samples", "baselines", "change_points"};

std::int64_t pragma_or_notadb(SqliteConnection& c, const std::string& pragma) {
  try {
    return sqlite_pragma(c, pragma);
  } catch (const HistoryBusy&) {
    throw;
  } catch (const std::runtime_error&) {
    if (sqlite3_errcode(c.handle()) == SQLITE_NOTADB) {
      throw NotAHistory(c.name() + ": not an SQLite database, so not a pairbench history");
    }
    throw;
  }
}

// Reads (never writes) what the database is; throws NotAHistory unless it is a pairbench history
// of a schema this pairbench reads, or one from before application_id (exactly the first
// schema's tables, with its columns).
SqliteIdentity examine(SqliteConnection& c) {
  const std::string& path = c.name();
  const std::int64_t application_id = pragma_or_notadb(c, "application_id");
  const std::int64_t user_version = pragma_or_notadb(c, "user_version");
  if (application_id == kHistoryApplicationId) {
    if (user_version > kHistorySchemaVersion) {
      throw NotAHistory(path + ": a pairbench history of schema version " + std::to_string(user_version) +
                        ", written by a newer pairbench (this one reads version " +
                        std::to_string(kHistorySchemaVersion) + ")");
    }
    return SqliteIdentity::kOurs;
  }
  if (application_id != 0) {
    char id[16];
    std::snprintf(id, sizeof id, "0x%08x", static_cast<unsigned>(application_id));
    throw NotAHistory(path + ": an SQLite database of another program (application_id " + id +
                      "), not a pairbench history");
  }
  Connection& base = c;  // the interface's default arguments
  std::set<std::string> tables;
  for (const auto& row :
       base.query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'")) {
    tables.insert(row.text(0));
  }
  bool legacy =
      user_version == 0 && !tables.empty() &&
      std::all_of(tables.begin(), tables.end(), [](const std::string& t) { return kLegacyTables.count(t) > 0; });
  for (const auto& [table, columns] : kLegacyColumns) {
    if (!legacy) break;
    std::set<std::string> have;
    for (const auto& row : base.query("PRAGMA table_info(" + table + ")")) have.insert(row.text(1));
    legacy = std::all_of(columns.begin(), columns.end(), [&](const std::string& col) { return have.count(col) > 0; });
  }
  if (legacy) return SqliteIdentity::kLegacy;
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

// Builds a new, stamped history in a temporary file beside `path` and moves it into place unless
// another process got there first. `path` never holds a half-made or empty database, which a
// concurrent opener would refuse.
void create_history(const std::string& path, const std::function<void(Connection&)>& create_schema) {
  std::string tmp = path + ".new-XXXXXX";
  const int fd = mkstemp(tmp.data());
  if (fd < 0) throw std::runtime_error(path + ": cannot create history database: " + std::strerror(errno));
  fchmod(fd, 0644);
  close(fd);
  try {
    {
      SqliteConnection db(tmp, kHistoryBusyTimeoutMs);
      try {
        db.exec("PRAGMA application_id = " + std::to_string(kHistoryApplicationId));
        Transaction t(db);
        create_schema(db);
        t.commit();
      } catch (const std::exception& e) {
        throw std::runtime_error(path + ": cannot create history database: " + e.what());
      }
    }
    // No-replace moves: a history another process has just created is kept, never overwritten.
    if (renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) != 0 && errno != EEXIST) {
      if (link(tmp.c_str(), path.c_str()) != 0 && errno != EEXIST) {
        throw std::runtime_error(path + ": cannot create history database: " + std::strerror(errno));
      }
    }
  } catch (...) {
    unlink(tmp.c_str());
    throw;
  }
  unlink(tmp.c_str());  // still there where link() made the history or another process won
}

}  // namespace

std::int64_t sqlite_pragma(Connection& c, const std::string& pragma) {
  const auto rows = c.query("PRAGMA " + pragma);
  if (rows.empty()) throw std::runtime_error(c.name() + ": PRAGMA " + pragma + " returned nothing");
  return rows[0].integer(0);
}

void check_sqlite_history(const std::string& path) {
  refuse_non_history_file(path);
  if (non_regular_reason(path) == "does not exist") return;
  SqliteConnection db(path, kCheckBusyTimeoutMs);
  try {
    examine(db);
  } catch (const HistoryBusy&) {
    return;  // held by a writer past the wait: judged again when opened for use, which waits longer
  } catch (const NotAHistory&) {
    throw;
  } catch (const std::runtime_error&) {
    if (is_busy(sqlite3_errcode(db.handle()))) return;
    throw;
  }
}

OpenedSqlite open_sqlite_history(const std::string& path, int busy_timeout_ms,
                                 const std::function<void(Connection&)>& create_schema) {
  refuse_non_history_file(path);
  if (non_regular_reason(path) == "does not exist") create_history(path, create_schema);
  refuse_non_history_file(path);  // what another process may have put there meanwhile
  auto db = std::make_unique<SqliteConnection>(path, busy_timeout_ms);
  const SqliteIdentity identity = examine(*db);
  db->exec("PRAGMA journal_mode=WAL");    // readers never block the writer, and vice versa
  db->exec("PRAGMA synchronous=NORMAL");  // with WAL: durable at checkpoints, never corrupt
  db->exec("PRAGMA foreign_keys=ON");
  return {std::move(db), identity};
}

}  // namespace pairbench::harness::sql
