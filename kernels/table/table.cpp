// The generated table, its CSV and columnar files, their readers and the scan aggregate.
#include "kernels/table/table.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <random>
#include <system_error>

namespace pairbench::kernels::table {

static_assert(std::endian::native == std::endian::little, "the columnar layout is little-endian");

namespace {

[[noreturn]] void throw_errno(const std::string& what, const std::filesystem::path& path) {
  throw std::system_error(errno, std::generic_category(), what + " " + path.string());
}

void write_file(const std::filesystem::path& path, std::string_view bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) throw_errno("cannot create", path);
  const std::size_t written = bytes.empty() ? 0 : std::fwrite(bytes.data(), 1, bytes.size(), f);
  const bool closed = std::fclose(f) == 0;
  if (written != bytes.size() || !closed) throw_errno("cannot write", path);
}

// Shortest text that parses back to the same value (std::to_chars without precision).
template <class T>
void append_number(std::string& out, T v) {
  std::array<char, 32> buf;
  const auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
  if (ec != std::errc{}) throw std::runtime_error("to_chars failed");
  out.append(buf.data(), end);
}

}  // namespace

void Table::append(const Row& r) {
  id.push_back(r.id);
  category.push_back(r.category);
  price.push_back(r.price);
  score.push_back(r.score);
  name_bytes += r.name;
  if (name_bytes.size() > UINT32_MAX) throw std::length_error("names exceed the 4 GiB a u32 offset can address");
  name_offsets.push_back(static_cast<std::uint32_t>(name_bytes.size()));
}

Table generate_table(std::size_t rows, std::uint64_t seed) {
  static constexpr std::array<const char*, 16> kSyllables = {"ka", "lo", "mi", "ne", "ru",  "ta",  "shi", "zen",
                                                             "vo", "pa", "da", "xi", "qua", "bel", "or",  "un"};
  std::uint64_t s = seed;
  Table t;
  t.id.reserve(rows);
  t.category.reserve(rows);
  t.price.reserve(rows);
  t.score.reserve(rows);
  t.name_offsets.reserve(rows + 1);
  t.name_bytes.reserve(rows * 12);
  std::int64_t id = 1'000'000 + static_cast<std::int64_t>(splitmix64_next(s) % 1'000'000);
  Row r;
  for (std::size_t i = 0; i < rows; ++i) {
    const std::uint64_t a = splitmix64_next(s);
    const std::uint64_t b = splitmix64_next(s);
    id += 1 + static_cast<std::int64_t>(a % 3);  // increasing, with gaps (deleted rows)
    r.id = id;
    // The smaller of two uniform draws: low categories are common, as in real category data.
    r.category = static_cast<std::int32_t>(std::min((a >> 8) % 50, (b >> 8) % 50));
    r.price = static_cast<double>(99 + (a >> 20) % 99'900) / 100.0;  // 0.99 .. 999.98, whole cents
    r.score = static_cast<float>(b >> 40) * (5.0f / 16777216.0f);    // [0, 5), 24 random bits
    r.name.clear();
    const int syllables = 1 + static_cast<int>((b >> 4) % 6);
    std::uint64_t pick = splitmix64_next(s);
    for (int k = 0; k < syllables; ++k, pick >>= 5) {
      if (k == 3 && (pick & 16)) r.name += '_';
      r.name += kSyllables[pick & 15];
    }
    t.append(r);
  }
  return t;
}

ScanResult scan_reference(const Table& t, std::int32_t category) {
  ScanResult r;
  r.rows = t.rows();
  for (std::size_t i = 0; i < t.rows(); ++i) {
    if (t.category[i] != category) continue;
    ++r.matched;
    r.id_sum += t.id[i];
    r.price_sum += t.price[i];
    r.score_sum += static_cast<double>(t.score[i]);
    r.name_bytes += t.name_offsets[i + 1] - t.name_offsets[i];
  }
  return r;
}

std::string to_string(const ScanResult& r) {
  std::string s = "{rows " + std::to_string(r.rows) + ", matched " + std::to_string(r.matched) + ", id_sum " +
                  std::to_string(r.id_sum) + ", price_sum ";
  append_number(s, r.price_sum);
  s += ", score_sum ";
  append_number(s, r.score_sum);
  return s + ", name_bytes " + std::to_string(r.name_bytes) + "}";
}

// --- files ----------------------------------------------------------------------------------

MappedFile::MappedFile(const std::filesystem::path& path, bool populate) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw_errno("cannot open", path);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    errno = e;
    throw_errno("cannot stat", path);
  }
  size_ = static_cast<std::size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE | (populate ? MAP_POPULATE : 0), fd, 0);
    if (p == MAP_FAILED) {
      const int e = errno;
      ::close(fd);
      errno = e;
      throw_errno("cannot mmap", path);
    }
    data_ = static_cast<const char*>(p);
  }
  ::close(fd);  // the mapping keeps the file
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<char*>(data_), size_);
}

// --- CSV ------------------------------------------------------------------------------------
namespace {

constexpr std::array<const char*, kColumnCount> kColumnNames = {"id", "category", "price", "score", "name"};

// Where a CSV parse is, for error messages.
struct CsvPlace {
  const std::filesystem::path& path;
  std::uint64_t line;  // 1-based; the header is line 1
};

std::string field_text(const char* p, const char* end) {
  const char* stop = p;
  while (stop < end && *stop != ',' && *stop != '\n' && stop - p < 24) ++stop;
  return std::string(p, stop);
}

[[noreturn]] void csv_fail(const CsvPlace& at, int column, const std::string& what) {
  std::string msg = "csv file " + at.path.string() + ": line " + std::to_string(at.line);
  if (column >= 0) msg += ", column " + std::to_string(column + 1) + " '" + kColumnNames[column] + "'";
  throw CsvError(msg + ": " + what);
}

// Parses field `column` as a number ending at ','; returns the start of the next field.
template <class T>
const char* parse_number(const char* p, const char* end, T& v, int column, const CsvPlace& at) {
  const auto [q, ec] = std::from_chars(p, end, v);
  if (ec == std::errc{} && q < end && *q == ',') return q + 1;  // the fast path
  if (p == end || *p == '\n') csv_fail(at, column, "missing field (the row has " + std::to_string(column) + " fields)");
  if (ec == std::errc::result_out_of_range) csv_fail(at, column, "number out of range ('" + field_text(p, end) + "')");
  if (ec == std::errc{} && (q == end || *q == '\n')) {
    csv_fail(at, column + 1, "missing field (the row has " + std::to_string(column + 1) + " fields)");
  }
  csv_fail(at, column, "not a number ('" + field_text(p, end) + "')");
}

// Parses one row starting at p; calls sink(id, category, price, score, name) and returns the
// start of the next line (or end).
template <class Sink>
const char* parse_row(const char* p, const char* end, const CsvPlace& at, Sink&& sink) {
  std::int64_t id;
  std::int32_t category;
  double price;
  float score;
  p = parse_number(p, end, id, 0, at);
  p = parse_number(p, end, category, 1, at);
  p = parse_number(p, end, price, 2, at);
  p = parse_number(p, end, score, 3, at);
  const char* nl = static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
  const char* stop = nl != nullptr ? nl : end;
  if (std::memchr(p, ',', static_cast<std::size_t>(stop - p)) != nullptr) {
    csv_fail(at, -1, "more than " + std::to_string(kColumnCount) + " fields");
  }
  sink(id, category, price, score, std::string_view(p, static_cast<std::size_t>(stop - p)));
  return nl != nullptr ? nl + 1 : end;
}

// The first data row, after checking the header row.
const char* skip_header(const MappedFile& f) {
  const std::string_view header(kCsvHeader);
  const std::string_view text(f.data() == nullptr ? "" : f.data(), f.size());
  const CsvPlace at{f.path(), 1};
  if (text.empty()) csv_fail(at, -1, "empty file, expected the header row '" + std::string(header) + "'");
  const std::size_t nl = text.find('\n');
  const std::string_view first = text.substr(0, nl);
  if (first != header) {
    csv_fail(at, -1,
             "header row is '" + std::string(first.substr(0, 80)) + "', expected '" + std::string(header) + "'");
  }
  return nl == std::string_view::npos ? f.data() + f.size() : f.data() + nl + 1;
}

}  // namespace

void write_csv(const Table& t, const std::filesystem::path& path) {
  std::string out = std::string(kCsvHeader) + "\n";
  out.reserve(t.rows() * 48 + out.size());
  for (std::size_t i = 0; i < t.rows(); ++i) {
    const std::string_view name = t.name(i);
    if (name.find_first_of(",\"\r\n") != std::string_view::npos) {
      throw CsvError("csv file " + path.string() + ": row " + std::to_string(i) +
                     " name contains a comma, quote or newline; this writer does no quoting");
    }
    append_number(out, t.id[i]);
    out += ',';
    append_number(out, t.category[i]);
    out += ',';
    append_number(out, t.price[i]);
    out += ',';
    append_number(out, t.score[i]);
    out += ',';
    out += name;
    out += '\n';
  }
  write_file(path, out);
}

Table read_csv(const std::filesystem::path& path) {
  const MappedFile f(path, /*populate=*/true);
  const char* p = skip_header(f);
  const char* end = f.data() + f.size();
  Table t;
  Row r;
  for (CsvPlace at{path, 2}; p < end; ++at.line) {
    p = parse_row(p, end, at, [&](std::int64_t id, std::int32_t c, double price, float score, std::string_view name) {
      r.id = id;
      r.category = c;
      r.price = price;
      r.score = score;
      r.name.assign(name);
      t.append(r);
    });
  }
  return t;
}

ScanResult scan_csv(const std::filesystem::path& path, std::int32_t category) {
  const MappedFile f(path, /*populate=*/true);
  const char* p = skip_header(f);
  const char* end = f.data() + f.size();
  ScanResult r;
  for (CsvPlace at{path, 2}; p < end; ++at.line) {
    p = parse_row(p, end, at, [&](std::int64_t id, std::int32_t c, double price, float score, std::string_view name) {
      ++r.rows;
      if (c != category) return;
      ++r.matched;
      r.id_sum += id;
      r.price_sum += price;
      r.score_sum += static_cast<double>(score);
      r.name_bytes += name.size();
    });
  }
  return r;
}

CsvReader::CsvReader(const std::filesystem::path& path) : file_(path) { first_row_ = skip_header(file_); }

void CsvReader::row(std::uint64_t i, Row& out) const {
  const char* end = file_.data() + file_.size();
  const char* p = first_row_;
  for (std::uint64_t k = 0; k < i; ++k) {  // no index: count newlines up to row i
    const void* nl = p < end ? std::memchr(p, '\n', static_cast<std::size_t>(end - p)) : nullptr;
    if (nl == nullptr) {
      throw CsvError("csv file " + file_.path().string() + ": no row " + std::to_string(i) + " (the file has " +
                     std::to_string(k + (p < end ? 1 : 0)) + " rows)");
    }
    p = static_cast<const char*>(nl) + 1;
  }
  if (p >= end) {
    throw CsvError("csv file " + file_.path().string() + ": no row " + std::to_string(i) + " (the file has " +
                   std::to_string(i) + " rows)");
  }
  parse_row(p, end, CsvPlace{file_.path(), i + 2},
            [&](std::int64_t id, std::int32_t c, double price, float score, std::string_view name) {
              out.id = id;
              out.category = c;
              out.price = price;
              out.score = score;
              out.name.assign(name);
            });
}

Row CsvReader::row(std::uint64_t i) const {
  Row r;
  row(i, r);
  return r;
}

// --- Columnar -------------------------------------------------------------------------------
namespace {

constexpr std::size_t kFileHeaderBytes = 8 + 4 + 4 + 8;   // magic, version, column count, rows
constexpr std::size_t kColumnEntryBytes = 4 + 4 + 8 + 8;  // type, reserved, offset, bytes
constexpr std::size_t kHeaderBytes = kFileHeaderBytes + kColumnCount * kColumnEntryBytes;
constexpr std::size_t kColumnAlign = 64;
constexpr std::array<ColumnType, kColumnCount> kSchema = {ColumnType::kInt64, ColumnType::kInt32, ColumnType::kFloat64,
                                                          ColumnType::kFloat32, ColumnType::kString};
constexpr std::array<std::size_t, kColumnCount> kWidth = {8, 4, 8, 4, 4};  // string: its u32 offsets

const char* type_name(std::uint32_t t) {
  switch (static_cast<ColumnType>(t)) {
    case ColumnType::kInt64:
      return "int64";
    case ColumnType::kInt32:
      return "int32";
    case ColumnType::kFloat64:
      return "float64";
    case ColumnType::kFloat32:
      return "float32";
    case ColumnType::kString:
      return "string";
  }
  return "unknown";
}

template <class T>
void put(std::string& out, std::size_t at, T v) {
  std::memcpy(out.data() + at, &v, sizeof v);
}
template <class T>
T get(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

std::size_t align_up(std::size_t n) { return (n + kColumnAlign - 1) / kColumnAlign * kColumnAlign; }

[[noreturn]] void columnar_fail(const std::filesystem::path& path, const std::string& field, const std::string& what) {
  throw ColumnarError("columnar file " + path.string() + ": " + field + ": " + what);
}

}  // namespace

void write_columnar(const Table& t, const std::filesystem::path& path) {
  const std::size_t rows = t.rows();
  const std::array<const void*, kColumnCount> data = {t.id.data(), t.category.data(), t.price.data(), t.score.data(),
                                                      t.name_offsets.data()};
  std::array<std::size_t, kColumnCount> offset{}, bytes{};
  std::size_t at = kHeaderBytes;
  for (int c = 0; c < kColumnCount; ++c) {
    offset[c] = at = align_up(at);
    bytes[c] = kWidth[c] * rows;
    if (kSchema[c] == ColumnType::kString) bytes[c] = 4 * (rows + 1) + t.name_bytes.size();
    at += bytes[c];
  }
  std::string out(at, '\0');
  std::memcpy(out.data(), kColumnarMagic, sizeof kColumnarMagic);
  put<std::uint32_t>(out, 8, kColumnarVersion);
  put<std::uint32_t>(out, 12, kColumnCount);
  put<std::uint64_t>(out, 16, rows);
  for (int c = 0; c < kColumnCount; ++c) {
    const std::size_t e = kFileHeaderBytes + c * kColumnEntryBytes;
    put<std::uint32_t>(out, e, static_cast<std::uint32_t>(kSchema[c]));
    put<std::uint32_t>(out, e + 4, 0);
    put<std::uint64_t>(out, e + 8, offset[c]);
    put<std::uint64_t>(out, e + 16, bytes[c]);
    if (kSchema[c] == ColumnType::kString) {
      std::memcpy(out.data() + offset[c], data[c], 4 * (rows + 1));
      std::memcpy(out.data() + offset[c] + 4 * (rows + 1), t.name_bytes.data(), t.name_bytes.size());
    } else if (rows > 0) {
      std::memcpy(out.data() + offset[c], data[c], kWidth[c] * rows);
    }
  }
  write_file(path, out);
}

ColumnarReader::ColumnarReader(const std::filesystem::path& path, bool populate) : file_(path, populate) {
  const char* base = file_.data();
  const std::size_t size = file_.size();
  const auto truncated = [&](std::size_t need) {
    return "truncated: needs " + std::to_string(need) + " bytes, the file has " + std::to_string(size);
  };
  if (size < kFileHeaderBytes) columnar_fail(path, "header", truncated(kFileHeaderBytes));
  if (std::memcmp(base, kColumnarMagic, sizeof kColumnarMagic) != 0) {
    columnar_fail(path, "magic", "bad magic '" + std::string(base, 8) + "', expected 'PBCOLUMN'");
  }
  if (const auto v = get<std::uint32_t>(base + 8); v != kColumnarVersion) {
    columnar_fail(path, "version",
                  "unsupported version " + std::to_string(v) + ", expected " + std::to_string(kColumnarVersion));
  }
  if (const auto n = get<std::uint32_t>(base + 12); n != kColumnCount) {
    columnar_fail(path, "column count", std::to_string(n) + " columns, expected " + std::to_string(kColumnCount));
  }
  if (size < kHeaderBytes) columnar_fail(path, "column directory", truncated(kHeaderBytes));
  rows_ = get<std::uint64_t>(base + 16);
  std::array<const char*, kColumnCount> column{};
  for (int c = 0; c < kColumnCount; ++c) {
    const char* e = base + kFileHeaderBytes + c * kColumnEntryBytes;
    const std::string field = std::string("column '") + kColumnNames[c] + "'";
    const auto type = get<std::uint32_t>(e);
    if (type != static_cast<std::uint32_t>(kSchema[c])) {
      columnar_fail(path, field,
                    std::string("type ") + type_name(type) + " (" + std::to_string(type) + "), expected " +
                        type_name(static_cast<std::uint32_t>(kSchema[c])));
    }
    const auto offset = get<std::uint64_t>(e + 8);
    const auto bytes = get<std::uint64_t>(e + 16);
    if (offset % kWidth[c] != 0 || offset < kHeaderBytes) {
      columnar_fail(path, field, "offset " + std::to_string(offset) + " is inside the header or misaligned");
    }
    // Overflow-safe: rows_ is untrusted.
    const bool is_string = kSchema[c] == ColumnType::kString;
    if (rows_ > size / kWidth[c]) {
      columnar_fail(
          path, field,
          "truncated: " + std::to_string(rows_) + " rows do not fit in the file's " + std::to_string(size) + " bytes");
    }
    const std::uint64_t fixed = kWidth[c] * (rows_ + (is_string ? 1 : 0));
    if (is_string ? bytes < fixed : bytes != fixed) {
      columnar_fail(path, field, std::to_string(bytes) + " bytes do not hold " + std::to_string(rows_) + " rows");
    }
    if (offset > size || bytes > size - offset) {
      columnar_fail(path, field,
                    "ends at byte " + std::to_string(offset + bytes) + " but the file has " + std::to_string(size) +
                        " bytes (truncated)");
    }
    column[c] = base + offset;
    if (is_string) {
      name_offsets_ = reinterpret_cast<const std::uint32_t*>(column[c]);
      name_bytes_ = column[c] + fixed;
      const std::uint64_t chars = bytes - fixed;
      if (chars > UINT32_MAX || name_offsets_[0] != 0 || name_offsets_[rows_] != chars) {
        columnar_fail(path, field,
                      "string offsets run from " + std::to_string(name_offsets_[0]) + " to " +
                          std::to_string(name_offsets_[rows_]) + ", expected 0 to " + std::to_string(chars));
      }
      name_bytes_size_ = static_cast<std::uint32_t>(chars);
    }
  }
  // Offsets are multiples of the value width and the mapping is page-aligned: typed access is aligned.
  id_ = reinterpret_cast<const std::int64_t*>(column[0]);
  category_ = reinterpret_cast<const std::int32_t*>(column[1]);
  price_ = reinterpret_cast<const double*>(column[2]);
  score_ = reinterpret_cast<const float*>(column[3]);
}

void ColumnarReader::row(std::uint64_t i, Row& out) const {
  if (i >= rows_) {
    throw ColumnarError("columnar file " + file_.path().string() + ": no row " + std::to_string(i) + " (the file has " +
                        std::to_string(rows_) + " rows)");
  }
  const std::uint32_t b = name_offsets_[i], e = name_offsets_[i + 1];
  if (b > e || e > name_bytes_size_) {
    columnar_fail(file_.path(), "column 'name'",
                  "row " + std::to_string(i) + " has offsets " + std::to_string(b) + ".." + std::to_string(e));
  }
  out.id = id_[i];
  out.category = category_[i];
  out.price = price_[i];
  out.score = score_[i];
  out.name.assign(name_bytes_ + b, e - b);
}

Row ColumnarReader::row(std::uint64_t i) const {
  Row r;
  row(i, r);
  return r;
}

Table ColumnarReader::to_table() const {
  Table t;
  Row r;
  for (std::uint64_t i = 0; i < rows_; ++i) {
    row(i, r);
    t.append(r);
  }
  return t;
}

Table read_columnar(const std::filesystem::path& path) { return ColumnarReader(path, /*populate=*/true).to_table(); }

ScanResult scan_columnar(const std::filesystem::path& path, std::int32_t category) {
  const ColumnarReader f(path, /*populate=*/true);
  const std::int32_t* cat = f.category().data();
  const std::int64_t* id = f.id().data();
  const double* price = f.price().data();
  const float* score = f.score().data();
  const std::uint32_t* off = f.name_offsets().data();
  ScanResult r;
  r.rows = f.rows();
  std::uint32_t bad_offsets = 0;
  for (std::uint64_t i = 0; i < r.rows; ++i) {
    if (cat[i] != category) continue;
    ++r.matched;
    r.id_sum += id[i];
    r.price_sum += price[i];
    r.score_sum += static_cast<double>(score[i]);
    r.name_bytes += off[i + 1] - off[i];
    bad_offsets |= static_cast<std::uint32_t>(off[i + 1] < off[i]);
  }
  if (bad_offsets != 0) columnar_fail(path, "column 'name'", "string offsets decrease");
  return r;
}

}  // namespace pairbench::kernels::table
