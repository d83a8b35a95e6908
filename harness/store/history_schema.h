// The history's schema: its versions, the migrations between them, and the packed forms its rows
// store (each run's medians, its deflated run document), written once for both back ends
// (history_sql.h). Only the history's own files include it.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "harness/store/history_sql.h"

namespace pairbench::harness::history_schema {

// The version a database's schema is at (0: none yet).
std::int64_t schema_version(sql::Connection& c);
// Applies every step after `from`, recording the version reached; inside the caller's transaction.
void migrate(sql::Connection& c, std::int64_t from);
// PostgreSQL: makes the database a history, or migrates it, or refuses it (NotAHistory): another
// program's tables or a newer schema. Concurrent openers of a new database make the schema once.
void open_postgres_schema(sql::Connection& c);

// A run document as stored (zlib), and back; a corrupt one throws naming `what`.
sql::Bytes deflate_text(const std::string& text);
std::string inflate_text(const std::string& deflated, std::size_t size, const std::string& what);

// A run and benchmark's sample values as stored: a JSON array.
std::string values_json(const std::vector<double>& values);

// Little-endian packing of the per-run arrays (the formats run_medians documents).
static_assert(std::endian::native == std::endian::little, "run_medians packs host-order values: little-endian hosts");

template <typename T>
sql::Bytes pack(const std::vector<T>& values) {
  sql::Bytes b;
  b.data.resize(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(b.data.data(), values.data(), b.data.size());
  return b;
}

template <typename T>
std::vector<T> unpack(const std::string& bytes) {
  std::vector<T> out(bytes.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

// One run's medians, packed into its run_medians row.
struct PackedMedians {
  std::vector<std::int32_t> ids;
  std::vector<double> medians;
  std::vector<std::int32_t> samples;
  void add(std::int64_t id, double median, std::int64_t n) {
    ids.push_back(static_cast<std::int32_t>(id));
    medians.push_back(median);
    samples.push_back(static_cast<std::int32_t>(n));
  }
  void store(sql::Connection& c, std::int64_t run_id) const {
    c.query("INSERT INTO run_medians(run_id, benchmark_ids, medians, samples) VALUES(?,?,?,?)",
            {run_id, pack(ids), pack(medians), pack(samples)});
  }
};

}  // namespace pairbench::harness::history_schema
