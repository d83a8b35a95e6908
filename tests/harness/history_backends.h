// The history back ends every history test runs against: SQLite in a temporary directory, and
// PostgreSQL in a database of its own on the throw-away server of the ctest fixture
// (tests/fixtures/postgres/start.sh writes its URL to PG_STATE_FILE). Where that server is not
// there, PostgreSQL tests skip with "skipped: no PostgreSQL server".
#pragma once

#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

namespace pairbench::harness::testing_backends {

enum class Backend { kSqlite, kPostgres };

inline std::string backend_name(Backend b) { return b == Backend::kSqlite ? "sqlite" : "postgres"; }
// For GoogleTest's test names and messages ("GetParam() = postgres").
inline void PrintTo(Backend b, std::ostream* os) { *os << backend_name(b); }

// The fixture server's URL (its `postgres` database), or "" with `why` set.
inline std::string postgres_server_url(std::string* why) {
  std::ifstream in(PG_STATE_FILE);
  std::string url;
  std::getline(in, url);
  if (url.rfind("postgresql://", 0) == 0) return url;
  *why = url.empty() ? std::string("no ") + PG_STATE_FILE + " (the postgres fixture did not run)" : url;
  return "";
}

// Runs statements on the fixture server outside pairbench (to make, spoil and drop databases).
inline std::string postgres_exec(const std::string& url, const std::string& statements) {
  PGconn* c = PQconnectdb(url.c_str());
  std::string error;
  if (PQstatus(c) != CONNECTION_OK) {
    error = PQerrorMessage(c);
  } else {
    PGresult* r = PQexec(c, statements.c_str());
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK) error = PQresultErrorMessage(r);
    PQclear(r);
  }
  PQfinish(c);
  return error;
}

// One test's database: a new SQLite path in a new directory, or a new PostgreSQL database.
// Removed or dropped at the end.
class TestDatabase {
 public:
  explicit TestDatabase(Backend backend) : backend_(backend) {
    char tmpl[] = "/tmp/pairbench-history-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
    if (backend == Backend::kSqlite) {
      db_ = dir_ + "/history.sqlite";
      return;
    }
    server_ = postgres_server_url(&why_not_);
    if (server_.empty()) return;
    static std::atomic<int> counter{0};
    name_ = "pbtest_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + "_" +
            std::to_string(std::random_device{}() % 1000000);
    if (const std::string e = postgres_exec(server_, "CREATE DATABASE " + name_); !e.empty()) {
      why_not_ = "CREATE DATABASE failed: " + e;
      server_.clear();
      return;
    }
    db_ = url_of(name_);
  }
  ~TestDatabase() {
    if (!name_.empty() && !server_.empty())
      postgres_exec(server_, "DROP DATABASE IF EXISTS " + name_ + " WITH (FORCE)");
    std::filesystem::remove_all(dir_);
  }
  TestDatabase(const TestDatabase&) = delete;
  TestDatabase& operator=(const TestDatabase&) = delete;

  // Where the test may run: false (with why) for PostgreSQL without the fixture's server.
  bool available() const { return !db_.empty(); }
  const std::string& why_not() const { return why_not_; }
  // The history argument: an SQLite path or a postgresql:// URL.
  const std::string& db() const { return db_; }
  // A scratch directory of the test's own.
  const std::string& dir() const { return dir_; }
  Backend backend() const { return backend_; }
  // The URL of another database on the same server (PostgreSQL only).
  std::string url_of(const std::string& database) const {
    std::string url = server_;
    const std::size_t at = url.find("/postgres?");
    return url.replace(at, std::string("/postgres?").size(), "/" + database + "?");
  }
  // Runs SQL in the test's PostgreSQL database; "" on success, else the error.
  std::string exec(const std::string& statements) const { return postgres_exec(db_, statements); }

 private:
  Backend backend_;
  std::string dir_, db_, server_, name_, why_not_;
};

// Skips a PostgreSQL test where the fixture's server is missing, saying so.
#define SKIP_UNLESS_AVAILABLE(database)                                                                            \
  do {                                                                                                             \
    if (!(database).available()) GTEST_SKIP() << "skipped: no PostgreSQL server (" << (database).why_not() << ")"; \
  } while (0)

inline std::string param_name(const ::testing::TestParamInfo<Backend>& info) { return backend_name(info.param); }

}  // namespace pairbench::harness::testing_backends
