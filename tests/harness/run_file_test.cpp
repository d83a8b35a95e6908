// Run-file writer and reader: round trip, atomic replacement, and one clear error per bad input.
#include "harness/run_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

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
            {"pairbench", {{"schema_version", 1}, {"environment", {{"cpu_model", "x"}}}, {"experiments", nlohmann::json::array()}}}};
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
  EXPECT_NE(read_error("v99.json").find("pairbench.schema_version: is 99"), std::string::npos) << read_error("v99.json");
}

TEST_F(RunFileTest, MissingFieldsNameTheField) {
  struct Case {
    std::string pointer, expected;
  };
  for (const Case& c : {Case{"/context", "context"}, Case{"/benchmarks", "benchmarks"},
                        Case{"/pairbench", "pairbench"}, Case{"/pairbench/environment", "pairbench.environment"},
                        Case{"/benchmarks/0/name", "benchmarks[0].name"},
                        Case{"/benchmarks/0/arm", "benchmarks[0].arm"},
                        Case{"/benchmarks/0/real_time", "benchmarks[0].real_time"}}) {
    nlohmann::json doc = valid_doc();
    const nlohmann::json::json_pointer ptr(c.pointer);
    doc[ptr.parent_pointer()].erase(ptr.back());
    write_text("missing.json", doc.dump());
    EXPECT_NE(read_error("missing.json").find(c.expected + ":"), std::string::npos)
        << c.pointer << " -> " << read_error("missing.json");
  }
}

TEST_F(RunFileTest, ZeroNegativeAndNaNTimesAreRejected) {
  for (const std::string bad : {"0", "-1.5", "NaN", "\"fast\""}) {
    std::string text = valid_doc().dump();
    const std::string from = "\"real_time\":12.5";
    ASSERT_NE(text.find(from), std::string::npos);
    text.replace(text.find(from), from.size(), "\"real_time\":" + bad);
    write_text("bad.json", text);
    EXPECT_FALSE(read_error("bad.json").empty()) << bad;
  }
}

TEST_F(RunFileTest, EmptyFileAndNonObject) {
  write_text("empty.json", "");
  EXPECT_NE(read_error("empty.json").find("not valid JSON"), std::string::npos);
  write_text("array.json", "[1,2]");
  EXPECT_NE(read_error("array.json").find("not a JSON object"), std::string::npos);
  EXPECT_NE(read_error("does-not-exist.json").find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace pairbench::harness
