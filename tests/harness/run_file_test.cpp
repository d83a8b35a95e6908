// Run-file writer and reader: round trip, atomic replacement, and one clear error per bad input,
// including the table of malformed run files shared with the plot report
// (tests/fixtures/bad_run_files/expected.tsv, also read by tests/plots/test_bad_run_files.py).
#include "harness/store/run_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <sstream>

namespace pairbench::harness {
namespace {
namespace fs = std::filesystem;

class RunFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/pairbench-run-file-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  void write_text(const std::string& file, const std::string& text) const { std::ofstream(path(file)) << text; }

  static nlohmann::json valid_doc() {
    return {{"context", {{"date", "2026-11-22T00:00:00Z"}}},
            {"benchmarks",
             {{{"name", "dispatch.sync_vs_async/sync/device:cpu/ops:1000"},
               {"experiment", "dispatch.sync_vs_async"},
               {"arm", "sync"},
               {"real_time", 12.5},
               {"metric_value", 512.0}}}},
            {"pairbench",
             {{"schema_version", 1},
              {"environment", {{"cpu_model", "x"}}},
              {"experiments",
               {{{"name", "dispatch.sync_vs_async"},
                 {"metric", "ns_per_op"},
                 {"unit", "ns"},
                 {"better", "lower"},
                 {"points", nlohmann::json::array()}}}}}}};
  }
  // The error message of reading `file`, or "" if it read fine.
  std::string read_error(const std::string& file) const {
    try {
      read_run_file(path(file));
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "";
  }
  std::string dir_;
};

TEST_F(RunFileTest, RoundTripKeepsEverything) {
  write_json_atomically(path("run.json"), valid_doc());
  EXPECT_EQ(read_run_file(path("run.json")), valid_doc());
}

TEST_F(RunFileTest, AtomicWriteReplacesAndLeavesNoTemporaries) {
  write_json_atomically(path("run.json"), valid_doc());
  nlohmann::json second = valid_doc();
  second["context"]["date"] = "later";
  write_json_atomically(path("run.json"), second);
  EXPECT_EQ(read_run_file(path("run.json"))["context"]["date"], "later");
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir_)) files += entry.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST_F(RunFileTest, UnwritableDirectoryIsReportedBeforeRunning) {
  write_text("not_a_dir", "x");
  try {
    check_writable(path("not_a_dir/run.json"));
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("not_a_dir/run.json"), std::string::npos) << e.what();
  }
  EXPECT_THROW(check_writable(dir_), std::runtime_error);  // a directory is not a file
  EXPECT_NO_THROW(check_writable(path("fresh/sub/run.json")));
}

TEST_F(RunFileTest, TruncatedJsonNamesTheFile) {
  const std::string text = valid_doc().dump();
  write_text("cut.json", text.substr(0, text.size() / 2));
  const std::string err = read_error("cut.json");
  EXPECT_NE(err.find(path("cut.json")), std::string::npos) << err;
  EXPECT_NE(err.find("not valid JSON"), std::string::npos) << err;
}

TEST_F(RunFileTest, WrongSchemaVersionNamesTheField) {
  nlohmann::json doc = valid_doc();
  doc["pairbench"]["schema_version"] = 99;
  write_text("v99.json", doc.dump());
  EXPECT_EQ(read_error("v99.json"), path("v99.json") +
                                        ": pairbench.schema_version: expected 1 (the run-file version "
                                        "this pairbench reads), is the number 99");
}

TEST_F(RunFileTest, MissingFieldsNameTheField) {
  struct Case {
    std::string pointer, expected;
  };
  for (const Case& c :
       {Case{"/context", "context"}, Case{"/benchmarks", "benchmarks"}, Case{"/pairbench", "pairbench"},
        Case{"/pairbench/environment", "pairbench.environment"}, Case{"/benchmarks/0/name", "benchmarks[0].name"},
        Case{"/benchmarks/0/arm", "benchmarks[0].arm"}, Case{"/benchmarks/0/real_time", "benchmarks[0].real_time"}}) {
    nlohmann::json doc = valid_doc();
    const nlohmann::json::json_pointer ptr(c.pointer);
    doc[ptr.parent_pointer()].erase(ptr.back());
    write_text("missing.json", doc.dump());
    EXPECT_NE(read_error("missing.json").find(c.expected + ":"), std::string::npos)
        << c.pointer << " -> " << read_error("missing.json");
  }
}

TEST_F(RunFileTest, ZeroNegativeNaNAndInfiniteValuesAreRejectedNamingTheField) {
  struct Case {
    std::string field, value, expected;
  };
  for (const Case& c : {Case{"real_time", "0", "expected a number > 0, is the number 0"},
                        Case{"real_time", "-1.5", "expected a number > 0, is the number -1.5"},
                        Case{"real_time", "NaN", "not valid JSON at line 1"},
                        Case{"real_time", "\"fast\"", "expected a number, is the string \"fast\""},
                        Case{"metric_value", "0", "expected a number > 0, is the number 0"},
                        Case{"metric_value", "-Infinity", "NaN and Infinity are not JSON numbers"},
                        Case{"metric_value", "1e999", "expected a finite number"}}) {
    std::string text = valid_doc().dump();
    const std::string from = "\"" + c.field + "\":" + (c.field == "real_time" ? "12.5" : "512.0");
    ASSERT_NE(text.find(from), std::string::npos) << from;
    text.replace(text.find(from), from.size(), "\"" + c.field + "\":" + c.value);
    write_text("bad.json", text);
    const std::string err = read_error("bad.json");
    EXPECT_EQ(err.rfind(path("bad.json") + ": benchmarks[0]." + c.field + ": ", 0), 0u) << c.value << " -> " << err;
    EXPECT_NE(err.find(c.expected), std::string::npos) << c.value << " -> " << err;
  }
}

TEST_F(RunFileTest, EmptyFileAndNonObject) {
  write_text("empty.json", "");
  EXPECT_NE(read_error("empty.json").find("not valid JSON"), std::string::npos);
  write_text("array.json", "[1,2]");
  EXPECT_EQ(read_error("array.json"), path("array.json") + ": (top level): expected an object, is an array");
  EXPECT_NE(read_error("does-not-exist.json").find("cannot open"), std::string::npos);
}

// One line per row of expected.tsv: "file<TAB>field path or -<TAB>piece of the error<TAB>why".
struct BadCase {
  std::string file, field, piece;
};

std::vector<BadCase> bad_cases() {
  std::ifstream in(std::string(FIXTURES_DIR) + "/bad_run_files/expected.tsv");
  std::vector<BadCase> out;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream row(line);
    BadCase c;
    std::getline(row, c.file, '\t');
    std::getline(row, c.field, '\t');
    std::getline(row, c.piece, '\t');
    out.push_back(c);
  }
  return out;
}

TEST(RunFileTable, EveryBadFileIsListedOnce) {
  std::set<std::string> listed, present;
  for (const BadCase& c : bad_cases()) EXPECT_TRUE(listed.insert(c.file).second) << c.file;
  for (const auto& entry : fs::directory_iterator(std::string(FIXTURES_DIR) + "/bad_run_files")) {
    if (entry.path().extension() == ".json") present.insert(entry.path().filename().string());
  }
  EXPECT_EQ(listed, present);
  EXPECT_GE(listed.size(), 15u);
}

TEST(RunFileTable, EveryBadFileIsRefusedNamingItsField) {
  for (const BadCase& c : bad_cases()) {
    SCOPED_TRACE(c.file);
    const std::string file = std::string(FIXTURES_DIR) + "/bad_run_files/" + c.file;
    try {
      read_run_file(file);
      ADD_FAILURE() << "accepted";
    } catch (const RunFileError& e) {
      const std::string message = e.what();
      const std::string prefix = file + ": " + (c.field == "-" ? "" : c.field + ": ");
      EXPECT_EQ(message.rfind(prefix, 0), 0u) << message;
      EXPECT_NE(message.find(c.piece), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
}

TEST(RunFileTable, GoodFixturesAreAccepted) {
  int read = 0;
  for (const std::string& dir : {std::string(FIXTURES_DIR), std::string(PLOTS_DATA_DIR)}) {
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (entry.path().extension() != ".json" || (dir == FIXTURES_DIR && name.rfind("run_", 0) != 0)) continue;
      EXPECT_NO_THROW(read_run_file(entry.path().string())) << name;
      ++read;
    }
  }
  EXPECT_GE(read, 5);
}

TEST(RunFileSchema, VersionAndLimitsAreTheSchemaFiles) {
  const auto& schema = run_file_schema().document();
  EXPECT_EQ(schema.at("$defs").at("pairbench").at("properties").at("schema_version").at("const"),
            kRunFileSchemaVersion);
  EXPECT_EQ(run_file_limits().max_bytes, std::uint64_t{1} << 30);
  EXPECT_EQ(run_file_limits().max_depth, 64u);
}

TEST_F(RunFileTest, NonRegularFilesAreRefusedWithoutBlocking) {
  const std::string fifo = path("run.fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // A reader that opened the FIFO without O_NONBLOCK would wait for a writer forever: give it 10 s.
  auto pending = std::async(std::launch::async, [&] { return read_error("run.fifo"); });
  if (pending.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    const int writer = open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // unblocks it: end of file
    if (writer >= 0) close(writer);
    FAIL() << "read_run_file blocked on a FIFO";
  }
  const std::string err = pending.get();
  EXPECT_EQ(err, fifo + ": expected a regular file (a run file), is a FIFO (named pipe)");
  EXPECT_EQ(read_error("."), path(".") + ": expected a regular file (a run file), is a directory");
  try {
    read_run_file("/dev/zero");
    FAIL() << "read /dev/zero";
  } catch (const RunFileError& e) {
    EXPECT_EQ(std::string(e.what()), "/dev/zero: expected a regular file (a run file), is a character device");
  }
}

TEST_F(RunFileTest, FileOverTheSizeLimitIsRefusedBeforeReading) {
  const std::string big = path("big.json");
  const int fd = open(big.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, static_cast<off_t>(run_file_limits().max_bytes) + 1), 0);  // sparse: no data written
  close(fd);
  EXPECT_EQ(read_error("big.json"),
            big + ": expected a run file of at most 1073741824 bytes (1 GiB), is 1073741825 bytes");
}

TEST_F(RunFileTest, NestingAtTheLimitIsReadAndOneLevelMoreIsRefused) {
  // The environment is level 3; its member `nested` adds levels 4 to `depth`.
  auto with_depth = [&](std::size_t depth) {
    std::string text = valid_doc().dump();
    const std::string from = "\"environment\":{";
    text.replace(text.find(from), from.size(),
                 from + "\"nested\":" + std::string(depth - 3, '[') + std::string(depth - 3, ']') + ",");
    write_text("deep.json", text);
    return read_error("deep.json");
  };
  EXPECT_EQ(with_depth(64), "");
  EXPECT_EQ(with_depth(65), path("deep.json") +
                                ": expected JSON nested at most 64 levels deep (a run file needs 10), "
                                "is nested deeper");
  // Hundreds of thousands of levels: refused by the SAX pass, before anything recursive sees them.
  write_text("bomb.json", std::string(300000, '['));
  EXPECT_NE(read_error("bomb.json").find("nested at most 64 levels"), std::string::npos);
}

TEST_F(RunFileTest, ParseErrorsNameTheFieldWhereTheTextBroke) {
  std::string text = valid_doc().dump();
  const std::string cut = text.substr(0, text.find("\"real_time\":") + 12);  // ends where a value should start
  write_text("cut.json", cut);
  EXPECT_EQ(read_error("cut.json").rfind(path("cut.json") + ": benchmarks[0].real_time: not valid JSON at line 1, ", 0),
            0u)
      << read_error("cut.json");
  EXPECT_NE(read_error("cut.json").find("the text ends early (truncated?)"), std::string::npos)
      << read_error("cut.json");
  write_text("garbage.json", "{\"context\": {}, \"benchmarks\": [1, 2, @]}");
  EXPECT_EQ(read_error("garbage.json"),
            path("garbage.json") + ": benchmarks[2]: not valid JSON at line 1, column 38 (byte 38): unexpected \"@\"");
}

TEST_F(RunFileTest, CrossReferencesAreChecked) {
  nlohmann::json doc = valid_doc();
  doc["benchmarks"][0]["experiment"] = "dispatch.other";
  write_text("x.json", doc.dump());
  EXPECT_EQ(read_error("x.json"), path("x.json") +
                                      ": benchmarks[0].experiment: expected one of "
                                      "pairbench.experiments[].name, is the string \"dispatch.other\"");
}

}  // namespace
}  // namespace pairbench::harness
