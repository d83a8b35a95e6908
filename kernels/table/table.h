// One generated table (id, category, price, score, name) stored two ways: CSV text rows and a
// minimal columnar binary file (an Arrow-like layout written here: Arrow is not packaged in
// Debian 12). Readers for both, a whole-table scan aggregate and random row lookup.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/common/rng.h"
#include "kernels/common/scratch.h"

namespace pairbench::kernels::table {

// The fixed schema: id int64, category int32, price float64, score float32, name string.
inline constexpr int kColumnCount = 5;
inline constexpr const char* kCsvHeader = "id,category,price,score,name";

struct Row {
  std::int64_t id = 0;
  std::int32_t category = 0;
  double price = 0;
  float score = 0;
  std::string name;
  bool operator==(const Row&) const = default;
};

// In-memory columns; the reference every reader is checked against. Names are stored like
// Arrow's utf8 column: offsets (rows + 1 entries) into one byte buffer.
struct Table {
  std::vector<std::int64_t> id;
  std::vector<std::int32_t> category;
  std::vector<double> price;
  std::vector<float> score;
  std::vector<std::uint32_t> name_offsets{0};
  std::string name_bytes;

  std::size_t rows() const { return id.size(); }
  std::string_view name(std::size_t i) const {
    return std::string_view(name_bytes).substr(name_offsets[i], name_offsets[i + 1] - name_offsets[i]);
  }
  Row row(std::size_t i) const { return {id[i], category[i], price[i], score[i], std::string(name(i))}; }
  void append(const Row& r);
};

// Deterministic from the seed: increasing ids with gaps, 50 categories (skewed), prices in
// whole cents up to 1000, scores in [0, 5) with full float precision, names of 1-6 syllables
// (lower-case letters and '_' only: never a comma, quote or newline, so CSV needs no quoting).
Table generate_table(std::size_t rows, std::uint64_t seed);

// The scan query both formats answer: over rows whose category equals `category`, the count,
// sum of ids, sum of prices and of scores (as float64, in row order, so equal readers give
// bit-identical sums) and the total name length in bytes; `rows` counts every row read.
struct ScanResult {
  std::uint64_t rows = 0;
  std::uint64_t matched = 0;
  std::int64_t id_sum = 0;
  double price_sum = 0;
  double score_sum = 0;
  std::uint64_t name_bytes = 0;
  bool operator==(const ScanResult&) const = default;
};
ScanResult scan_reference(const Table& t, std::int32_t category);
std::string to_string(const ScanResult& r);

// A read-only mapping of a whole file (empty files map nothing). `populate` asks the kernel to
// map every page up front (MAP_POPULATE), for readers that will touch all of it.
class MappedFile {
 public:
  explicit MappedFile(const std::filesystem::path& path, bool populate = false);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const char* data() const { return data_; }
  std::size_t size() const { return size_; }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  const char* data_ = nullptr;
  std::size_t size_ = 0;
};

// Where the table files go: a TempDir (kernels/common/scratch.h) named for this experiment.
class ScratchDirectory : public TempDir {
 public:
  ScratchDirectory() : TempDir("pairbench-table") {}
};

// --- CSV ------------------------------------------------------------------------------------
// Header row kCsvHeader, then one line per row, fields separated by ',' and no quoting: names
// must not contain ',', '"', '\r' or '\n' (write_csv throws if one does). Floats are written
// with std::to_chars' shortest round-trip form, so parsing gives back the same bits.
// Malformed input throws CsvError naming the file, line (1-based, header = 1) and column.
struct CsvError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
void write_csv(const Table& t, const std::filesystem::path& path);
Table read_csv(const std::filesystem::path& path);  // every field of every row
// Parses every field of every row (std::from_chars, no locale) and aggregates as scan_reference.
ScanResult scan_csv(const std::filesystem::path& path, std::int32_t category);

// A CSV file kept open for lookups. There is no index: row i is found by scanning newlines
// (memchr) from the first data row, so a lookup costs O(i) bytes.
class CsvReader {
 public:
  explicit CsvReader(const std::filesystem::path& path);  // checks the header row
  Row row(std::uint64_t i) const;                         // throws CsvError if there is no row i
  void row(std::uint64_t i, Row& out) const;              // reuses out.name's storage

 private:
  MappedFile file_;
  const char* first_row_ = nullptr;
};

// --- Columnar -------------------------------------------------------------------------------
// Little-endian. Header: magic "PBCOLUMN" (8 bytes), u32 version (1), u32 column count (5),
// u64 row count, then per column {u32 type, u32 reserved (0), u64 offset, u64 bytes}. Each
// column's data starts 64-byte aligned and is contiguous: fixed-width values, or for the string
// column (rows + 1) u32 offsets followed by the bytes (Arrow's utf8 layout). The reader checks
// magic, version, schema and that every column lies inside the file, and throws ColumnarError
// naming the file and the field.
struct ColumnarError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
enum class ColumnType : std::uint32_t { kInt64 = 1, kInt32 = 2, kFloat64 = 3, kFloat32 = 4, kString = 5 };
inline constexpr char kColumnarMagic[8] = {'P', 'B', 'C', 'O', 'L', 'U', 'M', 'N'};
inline constexpr std::uint32_t kColumnarVersion = 1;
void write_columnar(const Table& t, const std::filesystem::path& path);

// An open, validated columnar file (mmap). Column views point into the mapping; row(i) is O(1).
class ColumnarReader {
 public:
  explicit ColumnarReader(const std::filesystem::path& path, bool populate = false);
  std::uint64_t rows() const { return rows_; }
  std::span<const std::int64_t> id() const { return {id_, rows_}; }
  std::span<const std::int32_t> category() const { return {category_, rows_}; }
  std::span<const double> price() const { return {price_, rows_}; }
  std::span<const float> score() const { return {score_, rows_}; }
  std::span<const std::uint32_t> name_offsets() const { return {name_offsets_, rows_ + 1}; }
  const char* name_bytes() const { return name_bytes_; }
  std::uint32_t name_bytes_size() const { return name_bytes_size_; }
  Row row(std::uint64_t i) const;             // throws ColumnarError if there is no row i
  void row(std::uint64_t i, Row& out) const;  // reuses out.name's storage
  Table to_table() const;

 private:
  MappedFile file_;
  std::uint64_t rows_ = 0;
  const std::int64_t* id_ = nullptr;
  const std::int32_t* category_ = nullptr;
  const double* price_ = nullptr;
  const float* score_ = nullptr;
  const std::uint32_t* name_offsets_ = nullptr;
  const char* name_bytes_ = nullptr;
  std::uint32_t name_bytes_size_ = 0;
};
Table read_columnar(const std::filesystem::path& path);
// Opens (mmap, populated), validates and aggregates as scan_reference.
ScanResult scan_columnar(const std::filesystem::path& path, std::int32_t category);

using ::pairbench::kernels::fresh_seed;  // kernels/common/rng.h

}  // namespace pairbench::kernels::table
