// The seam between the history's queries (history.cpp, written once) and its two back ends:
// SQLite (history_sqlite.cpp) and PostgreSQL through libpq (history_postgres.cpp). Statements are
// written with `?` placeholders; each back end binds them its own way. Only what the history
// needs: parameters and columns that are null, integers, reals, text or bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <variant>
#include <vector>

namespace pairbench::harness::sql {

// Bytes, as opposed to text (SQLite BLOB, PostgreSQL bytea).
struct Bytes {
  std::string data;
};

using Value = std::variant<std::nullptr_t, std::int64_t, double, std::string, Bytes>;

struct Row {
  std::vector<Value> columns;
  bool null(std::size_t i) const { return std::holds_alternative<std::nullptr_t>(columns.at(i)); }
  std::int64_t integer(std::size_t i) const;
  double real(std::size_t i) const;
  std::string text(std::size_t i) const;  // "" for null
  const std::string& bytes(std::size_t i) const;
};

enum class Dialect { kSqlite, kPostgres };

class Connection {
 public:
  virtual ~Connection() = default;
  virtual Dialect dialect() const = 0;
  // Runs one or more statements without parameters or results.
  virtual void exec(const std::string& statements) = 0;
  // Runs one statement; returns its rows.
  virtual std::vector<Row> query(const std::string& statement, const std::vector<Value>& params = {}) = 0;
  // Runs one read-only statement, handing its rows to `each` one at a time without holding them
  // all (a history's medians can be millions of rows). Not inside a Transaction.
  virtual void for_each_row(const std::string& statement, const std::vector<Value>& params,
                            const std::function<void(const Row&)>& each) = 0;
  // Starts the one kind of transaction the history uses: a write transaction that holds the
  // writers' lock from its start (SQLite BEGIN IMMEDIATE; PostgreSQL BEGIN), so that concurrent
  // appenders queue instead of failing half-way.
  virtual void begin() = 0;
  void commit() { exec("COMMIT"); }
  virtual void rollback() noexcept = 0;
  // The database's name for messages (a URL with its password redacted).
  virtual const std::string& name() const = 0;
};

// Ends the transaction unless committed: an exception rolls it back.
class Transaction {
 public:
  explicit Transaction(Connection& c) : c_(c) { c_.begin(); }
  ~Transaction() {
    if (!done_) c_.rollback();
  }
  void commit() {
    c_.commit();
    done_ = true;
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

 private:
  Connection& c_;
  bool done_ = false;
};

// SQLite. A file from before the application_id stamp (the first schema's tables, unstamped)
// is kLegacy: stamped by the caller, inside its first write transaction.
enum class SqliteIdentity { kOurs, kLegacy };
struct OpenedSqlite {
  std::unique_ptr<Connection> connection;
  SqliteIdentity identity;
};
// Opens the SQLite history at `path`: refuses what is not one (NotAHistory), and creates an
// absent one complete (`create_schema` runs on a new file beside `path` before it is moved into
// place, so `path` never holds a half-made database). Throws std::runtime_error naming the path.
OpenedSqlite open_sqlite_history(const std::string& path, int busy_timeout_ms,
                                 const std::function<void(Connection&)>& create_schema);
// Throws NotAHistory where open_sqlite_history would refuse `path`; writes nothing.
void check_sqlite_history(const std::string& path);
// PRAGMA `pragma` (application_id, user_version) as an integer.
std::int64_t sqlite_pragma(Connection& c, const std::string& pragma);

// PostgreSQL: connects to `url` (a postgresql:// URL). Throws HistoryBusy where the server
// cannot be reached (worth retrying), NotAHistory for a malformed URL.
std::unique_ptr<Connection> open_postgres(const std::string& url, int connect_timeout_ms);
// Checks a URL's syntax without connecting; "" when fine, else why not.
std::string postgres_url_problem(const std::string& url);

}  // namespace pairbench::harness::sql
