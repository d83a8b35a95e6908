// Run files and baselines that used to crash or hang `compare`, `gate` and `baseline update`, given
// to the built pairbench: a few hundred thousand nested brackets (a stack overflow in recursive
// parsing and serialisation), a FIFO (a reader blocked forever), metric values that are 0 or NaN
// in either run. Each must end within seconds with exit 2 and one line naming the file.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/exec/process.h"

namespace pairbench::harness {
namespace {
namespace fs = std::filesystem;

const std::string kGood = std::string(FIXTURES_DIR) + "/run_cpu_a.json";

class RunFileCli : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/pairbench-run-file-cli-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(dir_ + "/" + name, std::ios::binary) << text;
    return dir_ + "/" + name;
  }
  // The good fixture's text with `from` (which must occur) replaced by `to` once.
  std::string good_with(const std::string& from, const std::string& to) const {
    std::ifstream in(kGood);
    std::stringstream text;
    text << in.rdbuf();
    std::string s = text.str();
    const auto at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) s.replace(at, from.size(), to);
    return s;
  }
  // Runs pairbench with a 20 s limit: none of these inputs may take longer than that to refuse.
  ProcessResult pairbench(std::vector<std::string> args) const {
    args.insert(args.begin(), PAIRBENCH_EXE);
    return run_process(args, {}, std::chrono::seconds(20));
  }
  // Exit 2 with one line that names `file` and contains `piece`.
  void expect_refused(const std::vector<std::string>& args, const std::string& file, const std::string& piece) const {
    std::string command;
    for (const auto& a : args) command += a.size() > 80 ? " ..." : " " + a;
    SCOPED_TRACE(command);
    const ProcessResult r = pairbench(args);
    ASSERT_EQ(r.status, ProcessResult::Status::kExited) << r.describe() << "\n" << r.output;
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
    EXPECT_NE(r.output.find(file), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(piece), std::string::npos) << r.output;
  }
  std::string results_dir() const { return dir_ + "/results"; }
  std::string dir_;
};

TEST_F(RunFileCli, NestedBracketsAreRefusedByCompareGateAndBaselineUpdate) {
  const std::string bomb = write("bomb.json", std::string(300000, '['));
  // The same depth inside an otherwise valid run file, where a reader that checks fields first would go.
  const std::string hidden =
      write("hidden.json", good_with("\"environment\": {", "\"environment\": {\"x\": " + std::string(300000, '[') +
                                                               "1" + std::string(300000, ']') + ", "));
  for (const std::string& file : {bomb, hidden}) {
    expect_refused({"compare", kGood, file, "--history", "none"}, file, "nested at most 64 levels");
    expect_refused({"compare", file, kGood, "--history", "none"}, file, "nested at most 64 levels");
    expect_refused(
        {"gate", "--baseline", kGood, "--current", file, "--history", "none", "--results-dir", results_dir()}, file,
        "nested at most 64 levels");
    expect_refused(
        {"gate", "--baseline", file, "--current", kGood, "--history", "none", "--results-dir", results_dir()}, file,
        "nested at most 64 levels");
    expect_refused({"baseline", "update", "--run", file, "--results-dir", results_dir()}, file,
                   "nested at most 64 levels");
  }
  EXPECT_FALSE(fs::exists(results_dir() + "/baselines")) << "a baseline was stored from a refused run";
}

TEST_F(RunFileCli, FifoAsCurrentOrBaselineExitsWithinSeconds) {
  const std::string fifo = dir_ + "/run.fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // pairbench() gives each command 20 s; a reader that opened the FIFO would wait for a writer forever.
  expect_refused({"gate", "--baseline", kGood, "--current", fifo, "--history", "none", "--results-dir", results_dir()},
                 fifo, "FIFO");
  expect_refused({"gate", "--baseline", fifo, "--current", kGood, "--history", "none", "--results-dir", results_dir()},
                 fifo, "FIFO");
  expect_refused({"compare", kGood, fifo, "--history", "none"}, fifo, "FIFO");
  expect_refused({"baseline", "update", "--run", fifo, "--results-dir", results_dir()}, fifo, "FIFO");
}

TEST_F(RunFileCli, ZeroAndNaNMetricValuesInBaselineAndCurrentNameTheFileAndField) {
  // run_cpu_a.json's first process (benchmarks[0]) has "metric_value": 1695.774.
  const std::string from = "\"metric_value\": 1695.774";
  const std::string zero = write("zero.json", good_with(from, "\"metric_value\": 0"));
  const std::string negative = write("negative.json", good_with(from, "\"metric_value\": -3.5"));
  const std::string nan = write("nan.json", good_with(from, "\"metric_value\": NaN"));
  for (const auto& [file, piece] : {std::pair{zero,
                                              "benchmarks[0].metric_value: expected a number > 0, is the number 0 "
                                              "(benchmark \"limits.core_pingpong/futex\")"},
                                    std::pair{negative, "benchmarks[0].metric_value: expected a number > 0"},
                                    std::pair{nan, "benchmarks[0].metric_value: not valid JSON"}}) {
    expect_refused({"compare", file, kGood, "--history", "none"}, file, piece);  // as the baseline
    expect_refused({"compare", kGood, file, "--history", "none"}, file, piece);  // as the current run
    expect_refused(
        {"gate", "--baseline", file, "--current", kGood, "--history", "none", "--results-dir", results_dir()}, file,
        piece);
    expect_refused(
        {"gate", "--baseline", kGood, "--current", file, "--history", "none", "--results-dir", results_dir()}, file,
        piece);
  }
}

TEST_F(RunFileCli, ReportRefusesDevicesAndHugeFilesInOneLine) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  const std::string huge = dir_ + "/huge.json";
  const int fd = open(huge.c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, off_t{2} << 30), 0);  // 2 GiB, sparse: nothing is written
  close(fd);
  for (const auto& [file, piece] :
       {std::pair<std::string, std::string>{"/dev/urandom", "character device"}, {huge, "is 2147483648 bytes"}}) {
    SCOPED_TRACE(file);
    const ProcessResult r = pairbench({"report", "--run", file, "-o", dir_ + "/report"});
    ASSERT_EQ(r.status, ProcessResult::Status::kExited) << r.describe() << "\n" << r.output;
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(r.output.find("Traceback"), std::string::npos) << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
    EXPECT_NE(r.output.find(file), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(piece), std::string::npos) << r.output;
  }
}

}  // namespace
}  // namespace pairbench::harness
