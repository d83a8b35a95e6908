// The PostgreSQL back end of the history: a Connection over libpq (Debian's libpq-dev; the C
// library is all the history needs, and is what libpqxx would wrap). Statements arrive with `?`
// placeholders and are sent as $1..$n; large reads go through a cursor, a batch at a time.
#include <libpq-fe.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>

#include "harness/store/history.h"
#include "harness/store/history_sql.h"

namespace pairbench::harness::sql {
namespace {

// Type OIDs (pg_type.h) of the parameters and columns the history uses.
constexpr Oid kBool = 16, kBytea = 17, kInt8 = 20, kInt2 = 21, kInt4 = 23, kFloat4 = 700, kFloat8 = 701,
              kNumeric = 1700;

// Rows fetched from a cursor per round trip.
constexpr int kFetchRows = 50'000;

// `?` -> `$1`, `$2`, ... outside quoted literals and identifiers.
std::string numbered_placeholders(const std::string& sql) {
  std::string out;
  out.reserve(sql.size() + 16);
  int n = 0;
  char quote = 0;
  for (const char c : sql) {
    if (quote) {
      if (c == quote) quote = 0;
      out += c;
    } else if (c == '\'' || c == '"') {
      quote = c;
      out += c;
    } else if (c == '?') {
      out += "$" + std::to_string(++n);
    } else {
      out += c;
    }
  }
  return out;
}

// One line from libpq's message (which may end in a newline or span several).
std::string one_line(const char* message) {
  std::string s = message ? message : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (char& c : s) {
    if (c == '\n') c = ' ';
  }
  return s;
}

using Result = std::unique_ptr<PGresult, decltype(&PQclear)>;

class PostgresConnection final : public Connection {
 public:
  PostgresConnection(const std::string& url, int connect_timeout_ms) : name_(redact_db(url)) {
    // connect_timeout is whole seconds (at least 2, libpq's minimum that means anything).
    const std::string timeout = std::to_string(std::max(2, (connect_timeout_ms + 999) / 1000));
    const char* keys[] = {"dbname", "connect_timeout", "application_name", "client_encoding", nullptr};
    const char* values[] = {url.c_str(), timeout.c_str(), "pairbench", "UTF8", nullptr};
    conn_ = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
    if (!conn_) throw HistoryBusy(name_ + ": cannot connect: out of memory");
    if (PQstatus(conn_) != CONNECTION_OK) {
      const std::string why = one_line(PQerrorMessage(conn_));
      PQfinish(conn_);
      conn_ = nullptr;
      throw HistoryBusy(name_ + ": cannot connect: " + why);
    }
    // Notices ("relation already exists, skipping") are not ours to print.
    PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);
  }
  ~PostgresConnection() override { PQfinish(conn_); }

  Dialect dialect() const override { return Dialect::kPostgres; }
  const std::string& name() const override { return name_; }

  void exec(const std::string& statements) override { check(PQexec(conn_, statements.c_str()), statements); }

  std::vector<Row> query(const std::string& statement, const std::vector<Value>& params) override {
    const Result r = run(statement, params);
    std::vector<Row> rows(PQntuples(r.get()));
    for (int i = 0; i < PQntuples(r.get()); ++i) fill(r.get(), i, rows[i]);
    return rows;
  }

  void for_each_row(const std::string& statement, const std::vector<Value>& params,
                    const std::function<void(const Row&)>& each) override {
    exec("BEGIN READ ONLY");
    try {
      run("DECLARE pairbench_rows NO SCROLL CURSOR FOR " + statement, params);
      const std::string fetch = "FETCH FORWARD " + std::to_string(kFetchRows) + " FROM pairbench_rows";
      Row row;
      for (;;) {
        const Result r = run(fetch, {}, /*binary=*/true);  // numbers and bytes as they are, not as text
        const int n = PQntuples(r.get());
        for (int i = 0; i < n; ++i) {
          fill(r.get(), i, row);
          each(row);
        }
        if (n < kFetchRows) break;
      }
      exec("COMMIT");
    } catch (...) {
      rollback();
      throw;
    }
  }

  void begin() override { exec("BEGIN"); }
  void rollback() noexcept override {
    if (PQtransactionStatus(conn_) == PQTRANS_IDLE || PQstatus(conn_) != CONNECTION_OK) return;
    PQclear(PQexec(conn_, "ROLLBACK"));
  }

 private:
  Result run(const std::string& statement, const std::vector<Value>& params, bool binary = false) {
    std::vector<std::string> text(params.size());
    std::vector<const char*> values(params.size(), nullptr);
    std::vector<int> lengths(params.size(), 0), formats(params.size(), 0);
    std::vector<Oid> types(params.size(), 0);
    for (std::size_t i = 0; i < params.size(); ++i) {
      const Value& v = params[i];
      if (const auto* s = std::get_if<std::string>(&v)) {
        values[i] = s->c_str();
      } else if (const auto* b = std::get_if<Bytes>(&v)) {
        values[i] = b->data.data();
        lengths[i] = static_cast<int>(b->data.size());
        formats[i] = 1;  // binary: the bytes as they are
        types[i] = kBytea;
      } else if (const auto* n = std::get_if<std::int64_t>(&v)) {
        text[i] = std::to_string(*n);
        values[i] = text[i].c_str();
        types[i] = kInt8;
      } else if (const auto* d = std::get_if<double>(&v)) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.17g", *d);  // reads back exactly
        text[i] = buf;
        values[i] = text[i].c_str();
        types[i] = kFloat8;
      }
    }
    const std::string numbered = numbered_placeholders(statement);
    return check(PQexecParams(conn_, numbered.c_str(), static_cast<int>(params.size()), types.data(), values.data(),
                              lengths.data(), formats.data(), /*resultFormat=*/binary ? 1 : 0),
                 statement);
  }

  // Throws for a failed statement: HistoryBusy where the connection is gone or the server
  // asks for a retry (serialization failure, deadlock, shutdown), std::runtime_error otherwise.
  Result check(PGresult* raw, const std::string& statement) {
    Result r(raw, &PQclear);
    const ExecStatusType status = r ? PQresultStatus(r.get()) : PGRES_FATAL_ERROR;
    if (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK) return r;
    const std::string why = one_line(r ? PQresultErrorMessage(r.get()) : PQerrorMessage(conn_));
    const char* state = r ? PQresultErrorField(r.get(), PG_DIAG_SQLSTATE) : nullptr;
    const std::string sqlstate = state ? state : "";
    if (PQstatus(conn_) != CONNECTION_OK || sqlstate.rfind("08", 0) == 0 || sqlstate == "40001" ||
        sqlstate == "40P01" || sqlstate.rfind("57P", 0) == 0) {
      throw HistoryBusy(name_ + ": " + (why.empty() ? std::string("connection lost") : why));
    }
    (void)statement;
    throw std::runtime_error(name_ + ": " + why);
  }

  // A binary-format column: network byte order (PostgreSQL's send functions).
  static Value binary_value(Oid type, const char* v, int length) {
    auto be = [&](auto zero) {
      decltype(zero) x = 0;
      for (int k = 0; k < static_cast<int>(sizeof x); ++k) x = (x << 8) | static_cast<unsigned char>(v[k]);
      return x;
    };
    switch (type) {
      case kInt2:
        return static_cast<std::int64_t>(static_cast<std::int16_t>(be(std::uint16_t{})));
      case kInt4:
        return static_cast<std::int64_t>(static_cast<std::int32_t>(be(std::uint32_t{})));
      case kInt8:
        return static_cast<std::int64_t>(be(std::uint64_t{}));
      case kFloat8: {
        const std::uint64_t bits = be(std::uint64_t{});
        double d;
        std::memcpy(&d, &bits, sizeof d);
        return d;
      }
      case kFloat4: {
        const std::uint32_t bits = be(std::uint32_t{});
        float f;
        std::memcpy(&f, &bits, sizeof f);
        return static_cast<double>(f);
      }
      case kBool:
        return static_cast<std::int64_t>(v[0] != 0);
      case kBytea:
        return Bytes{std::string(v, static_cast<std::size_t>(length))};
      default:  // text, varchar, name: the bytes as they are
        return std::string(v, static_cast<std::size_t>(length));
    }
  }

  static void fill(PGresult* r, int i, Row& row) {
    const int n = PQnfields(r);
    row.columns.resize(n);
    for (int c = 0; c < n; ++c) {
      if (PQgetisnull(r, i, c)) {
        row.columns[c] = nullptr;
        continue;
      }
      const char* v = PQgetvalue(r, i, c);
      if (PQfformat(r, c) == 1) {
        if (PQftype(r, c) == kNumeric) throw std::runtime_error("numeric columns are not read in binary");
        row.columns[c] = binary_value(PQftype(r, c), v, PQgetlength(r, i, c));
        continue;
      }
      switch (PQftype(r, c)) {
        case kInt2:
        case kInt4:
        case kInt8:
          row.columns[c] = static_cast<std::int64_t>(std::strtoll(v, nullptr, 10));
          break;
        case kFloat4:
        case kFloat8:
        case kNumeric:
          row.columns[c] = std::strtod(v, nullptr);
          break;
        case kBool:
          row.columns[c] = static_cast<std::int64_t>(v[0] == 't');
          break;
        case kBytea: {
          std::size_t size = 0;
          unsigned char* bytes = PQunescapeBytea(reinterpret_cast<const unsigned char*>(v), &size);
          if (!bytes) throw std::runtime_error("out of memory reading bytea");
          row.columns[c] = Bytes{std::string(reinterpret_cast<char*>(bytes), size)};
          PQfreemem(bytes);
          break;
        }
        default:
          row.columns[c] = std::string(v, static_cast<std::size_t>(PQgetlength(r, i, c)));
      }
    }
  }

  PGconn* conn_ = nullptr;
  std::string name_;
};

}  // namespace

std::string postgres_url_problem(const std::string& url) {
  char* err = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &err);
  if (!options) {
    std::string why = err ? one_line(err) : "out of memory";
    PQfreemem(err);
    return "not a valid PostgreSQL URL: " + why;
  }
  PQconninfoFree(options);
  return "";
}

std::unique_ptr<Connection> open_postgres(const std::string& url, int connect_timeout_ms) {
  return std::make_unique<PostgresConnection>(url, connect_timeout_ms);
}

}  // namespace pairbench::harness::sql
