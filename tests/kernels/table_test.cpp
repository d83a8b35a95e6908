// The table kernels: CSV and columnar round trips, scans and lookups against the in-memory
// reference, and malformed files rejected with messages naming the file and field.
#include "kernels/table/table.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <iterator>

namespace kt = pairbench::kernels::table;

namespace {

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}
void spit(const std::filesystem::path& p, const std::string& s) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << s;
}

void expect_same_table(const kt::Table& a, const kt::Table& b) {
  ASSERT_EQ(a.rows(), b.rows());
  for (std::size_t i = 0; i < a.rows(); ++i) {
    ASSERT_EQ(a.row(i), b.row(i)) << "row " << i;
  }
  EXPECT_EQ(a.name_offsets, b.name_offsets);
  EXPECT_EQ(a.name_bytes, b.name_bytes);
}

// Runs `f`, expects E, and that its message contains every fragment.
template <class E, class F>
void expect_error(F&& f, std::initializer_list<const char*> fragments) {
  try {
    f();
    ADD_FAILURE() << "no exception";
  } catch (const E& e) {
    for (const char* s : fragments) EXPECT_NE(std::strstr(e.what(), s), nullptr) << e.what() << "\nlacks: " << s;
  }
}

class TableFiles : public ::testing::Test {
 protected:
  kt::ScratchDirectory dir;
  std::filesystem::path csv = dir.path() / "t.csv";
  std::filesystem::path col = dir.path() / "t.pbcol";
};

TEST_F(TableFiles, RoundTripEveryFieldOfEveryRow) {
  for (std::size_t rows : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{1237}}) {
    const kt::Table t = kt::generate_table(rows, kt::fresh_seed());
    kt::write_csv(t, csv);
    kt::write_columnar(t, col);
    SCOPED_TRACE(rows);
    expect_same_table(kt::read_csv(csv), t);
    expect_same_table(kt::read_columnar(col), t);
  }
}

TEST_F(TableFiles, ScansMatchTheReferenceBitForBit) {
  const kt::Table t = kt::generate_table(5000, kt::fresh_seed());
  kt::write_csv(t, csv);
  kt::write_columnar(t, col);
  for (std::int32_t category : {0, 3, 49, 50}) {  // 50 matches nothing
    const kt::ScanResult want = kt::scan_reference(t, category);
    EXPECT_EQ(kt::scan_csv(csv, category), want) << kt::to_string(kt::scan_csv(csv, category));
    EXPECT_EQ(kt::scan_columnar(col, category), want) << kt::to_string(kt::scan_columnar(col, category));
    EXPECT_EQ(want.rows, 5000u);
    if (category == 0) {
      EXPECT_GT(want.matched, 0u);
    }
    if (category == 50) {
      EXPECT_EQ(want.matched, 0u);
    }
  }
}

TEST_F(TableFiles, RandomLookupsReturnTheReferenceRows) {
  const std::uint64_t seed = kt::fresh_seed();
  const kt::Table t = kt::generate_table(3001, seed);
  kt::write_csv(t, csv);
  kt::write_columnar(t, col);
  const kt::CsvReader c(csv);
  const kt::ColumnarReader k(col);
  std::uint64_t s = seed;
  for (int n = 0; n < 200; ++n) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const std::uint64_t i = n == 0 ? 0 : n == 1 ? t.rows() - 1 : (s >> 33) % t.rows();
    EXPECT_EQ(c.row(i), t.row(i)) << i;
    EXPECT_EQ(k.row(i), t.row(i)) << i;
  }
  expect_error<kt::CsvError>([&] { c.row(t.rows()); }, {"t.csv", "no row 3001", "3001 rows"});
  expect_error<kt::ColumnarError>([&] { k.row(t.rows()); }, {"t.pbcol", "no row 3001"});
}

TEST_F(TableFiles, EmptyAndOneRowTables) {
  const kt::Table empty = kt::generate_table(0, 1);
  kt::write_csv(empty, csv);
  kt::write_columnar(empty, col);
  EXPECT_EQ(slurp(csv), std::string(kt::kCsvHeader) + "\n");
  EXPECT_EQ(kt::scan_csv(csv, 0), kt::ScanResult{});
  EXPECT_EQ(kt::scan_columnar(col, 0), kt::ScanResult{});
  EXPECT_EQ(kt::ColumnarReader(col).rows(), 0u);
  EXPECT_THROW(kt::CsvReader(csv).row(0), kt::CsvError);

  kt::Table one;
  one.append({.id = -7, .category = 2, .price = 0.1, .score = 1.0f / 3.0f, .name = "x"});
  kt::write_csv(one, csv);
  kt::write_columnar(one, col);
  // Shortest round-trip text, not a fixed precision.
  EXPECT_EQ(slurp(csv), std::string(kt::kCsvHeader) + "\n-7,2,0.1,0.33333334,x\n");
  expect_same_table(kt::read_csv(csv), one);
  expect_same_table(kt::read_columnar(col), one);
  const kt::ScanResult s = kt::scan_columnar(col, 2);
  EXPECT_EQ(s.matched, 1u);
  EXPECT_EQ(s.id_sum, -7);
  EXPECT_EQ(s.price_sum, 0.1);
  EXPECT_EQ(s.score_sum, static_cast<double>(1.0f / 3.0f));
  EXPECT_EQ(s.name_bytes, 1u);
  EXPECT_EQ(kt::scan_csv(csv, 2), s);
}

TEST_F(TableFiles, CsvWithoutFinalNewlineIsRead) {
  spit(csv, std::string(kt::kCsvHeader) + "\n1,2,3.5,4.25,ab\n2,3,1,0,cd");
  const kt::Table t = kt::read_csv(csv);
  ASSERT_EQ(t.rows(), 2u);
  EXPECT_EQ(t.row(1), (kt::Row{2, 3, 1.0, 0.0f, "cd"}));
  EXPECT_EQ(kt::CsvReader(csv).row(1), t.row(1));
}

TEST_F(TableFiles, MalformedCsvNamesLineAndColumn) {
  const std::string h = std::string(kt::kCsvHeader) + "\n";
  const std::string good = "1,2,3.5,4.25,ab\n";
  spit(csv, h + good + "2,3,1.5\n");
  expect_error<kt::CsvError>([&] { kt::read_csv(csv); }, {"t.csv", "line 3", "column 4 'score'", "missing field"});
  spit(csv, h + good + good + "2,3,abc,1,x\n");
  expect_error<kt::CsvError>([&] { kt::scan_csv(csv, 0); },
                             {"t.csv", "line 4", "column 3 'price'", "not a number", "abc"});
  spit(csv, h + "12x,3,1,1,x\n");
  expect_error<kt::CsvError>([&] { kt::read_csv(csv); }, {"line 2", "column 1 'id'", "not a number", "12x"});
  spit(csv, h + "1,3,1,1,x,extra\n");
  expect_error<kt::CsvError>([&] { kt::read_csv(csv); }, {"line 2", "more than 5 fields"});
  spit(csv, h + "1,99999999999,1,1,x\n");
  expect_error<kt::CsvError>([&] { kt::read_csv(csv); }, {"line 2", "column 2 'category'", "out of range"});
  spit(csv, h + good + "\n");
  expect_error<kt::CsvError>([&] { kt::read_csv(csv); }, {"line 3", "column 1 'id'", "missing field"});
  spit(csv, "id,cat,price,score,name\n" + good);
  expect_error<kt::CsvError>([&] { kt::read_csv(csv); }, {"t.csv", "line 1", "header"});
  spit(csv, "");
  expect_error<kt::CsvError>([&] { kt::CsvReader r(csv); }, {"t.csv", "empty file"});
  // A lookup parses its row too.
  spit(csv, h + good + "5,6,7,oops,z\n");
  expect_error<kt::CsvError>([&] { kt::CsvReader(csv).row(1); }, {"line 3", "column 4 'score'", "not a number"});

  kt::Table bad;
  bad.append({.id = 1, .category = 1, .price = 1, .score = 1, .name = "a,b"});
  expect_error<kt::CsvError>([&] { kt::write_csv(bad, csv); }, {"comma"});
}

TEST_F(TableFiles, MalformedColumnarNamesTheField) {
  const kt::Table t = kt::generate_table(100, kt::fresh_seed());
  kt::write_columnar(t, col);
  const std::string bytes = slurp(col);

  spit(col, bytes.substr(0, bytes.size() - 1));
  expect_error<kt::ColumnarError>([&] { kt::ColumnarReader r(col); }, {"t.pbcol", "column 'name'", "truncated"});
  spit(col, bytes.substr(0, 600));
  expect_error<kt::ColumnarError>([&] { kt::scan_columnar(col, 0); }, {"t.pbcol", "truncated"});
  spit(col, bytes.substr(0, 10));
  expect_error<kt::ColumnarError>([&] { kt::ColumnarReader r(col); }, {"t.pbcol", "header", "truncated"});
  spit(col, "");
  expect_error<kt::ColumnarError>([&] { kt::ColumnarReader r(col); }, {"t.pbcol", "header", "truncated"});

  std::string b = bytes;
  b[0] = 'X';
  spit(col, b);
  expect_error<kt::ColumnarError>([&] { kt::ColumnarReader r(col); }, {"t.pbcol", "magic"});
  b = bytes;
  b[8] = 2;  // version
  spit(col, b);
  expect_error<kt::ColumnarError>([&] { kt::ColumnarReader r(col); }, {"t.pbcol", "version", "unsupported version 2"});
  b = bytes;
  b[24 + 2 * 24] = 4;  // price column declared float32
  spit(col, b);
  expect_error<kt::ColumnarError>([&] { kt::ColumnarReader r(col); },
                                  {"column 'price'", "float32", "expected float64"});
  b = bytes;
  b[16] = static_cast<char>(200);  // row count 200 > the 100 written
  spit(col, b);
  expect_error<kt::ColumnarError>([&] { kt::ColumnarReader r(col); }, {"t.pbcol", "column 'id'"});
  b = bytes;
  std::memset(b.data() + 16, 0xFF, 8);  // absurd row count must not overflow the bounds checks
  spit(col, b);
  expect_error<kt::ColumnarError>([&] { kt::ColumnarReader r(col); }, {"t.pbcol", "column 'id'", "truncated"});
}

TEST(TableGenerate, DeterministicAndRealistic) {
  const kt::Table a = kt::generate_table(2000, 42), b = kt::generate_table(2000, 42), c = kt::generate_table(2000, 43);
  expect_same_table(a, b);
  EXPECT_NE(a.id, c.id);
  for (std::size_t i = 0; i < a.rows(); ++i) {
    if (i > 0) {
      EXPECT_GT(a.id[i], a.id[i - 1]);
    }
    EXPECT_GE(a.category[i], 0);
    EXPECT_LT(a.category[i], 50);
    EXPECT_GE(a.price[i], 0.99);
    EXPECT_LT(a.price[i], 1000.0);
    EXPECT_GE(a.score[i], 0.0f);
    EXPECT_LT(a.score[i], 5.0f);
    EXPECT_FALSE(a.name(i).empty());
    EXPECT_EQ(a.name(i).find_first_of(",\"\r\n"), std::string_view::npos);
  }
}

TEST(TableScratch, DirectoryIsRemoved) {
  std::filesystem::path p;
  {
    kt::ScratchDirectory d;
    p = d.path();
    spit(p / "f", "x");
    EXPECT_TRUE(std::filesystem::exists(p / "f"));
  }
  EXPECT_FALSE(std::filesystem::exists(p));
}

}  // namespace
