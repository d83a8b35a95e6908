// The history database: append and read back, per-run medians, concurrent writers from separate
// processes (WAL + busy timeout + transactions), change points on synthetic series.
#include "harness/history.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "harness/stats.h"

namespace pairbench::harness {
namespace {
namespace fs = std::filesystem;

nlohmann::json run_doc(const std::string& started, double value, int samples = 3) {
  nlohmann::json doc = {{"context", nlohmann::json::object()}, {"benchmarks", nlohmann::json::array()}};
  for (int i = 0; i < samples; ++i) {
    doc["benchmarks"].push_back({{"name", "demo.x/a/n:1"}, {"experiment", "demo.x"}, {"arm", "a"},
                                 {"repetition_index", i}, {"metric_value", value + i}});
  }
  doc["pairbench"] = {{"schema_version", 1},
                      {"started_at", started},
                      {"profile", "quick"},
                      {"environment", {{"machine_key", "m1"}, {"git_sha", "abc"}}},
                      {"experiments", {{{"name", "demo.x"}, {"metric", "ns_per_op"}, {"unit", "ns"}, {"better", "lower"}}}}};
  return doc;
}

class HistoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/pairbench-history-test-XXXXXX";
    dir_ = mkdtemp(tmpl);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string db() const { return dir_ + "/history.sqlite"; }
  std::string dir_;
};

TEST_F(HistoryTest, AppendsAndReadsPerRunMedians) {
  History h(db());
  h.append_run(run_doc("2026-01-01T00:00:00Z", 10), "r1.json");
  h.append_run(run_doc("2026-01-02T00:00:00Z", 20), "r2.json");
  const auto series = h.series("m1");
  ASSERT_EQ(series.size(), 1u);
  ASSERT_EQ(series[0].points.size(), 2u);
  EXPECT_EQ(series[0].points[0].median, 11);  // median of 10, 11, 12
  EXPECT_EQ(series[0].points[1].median, 21);
  EXPECT_EQ(series[0].points[1].samples, 3);
  EXPECT_EQ(series[0].unit, "ns");
  EXPECT_TRUE(h.series("other-machine").empty());
  EXPECT_EQ(h.series("m1", "demo.x/a/n:1", /*last_runs=*/1)[0].points.size(), 1u);
}

TEST_F(HistoryTest, ConcurrentWritersInSeparateProcessesLoseNothing) {
  constexpr int kWriters = 4, kRunsEach = 25;
  { History init(db()); }
  std::vector<pid_t> children;
  for (int w = 0; w < kWriters; ++w) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      try {
        History h(db());
        for (int i = 0; i < kRunsEach; ++i) h.append_run(run_doc("2026-01-01T00:00:00Z", 100 * w + i), "w.json");
      } catch (...) {
        _exit(1);
      }
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  History h(db());
  EXPECT_EQ(h.run_count(), kWriters * kRunsEach);
  const auto series = h.series("m1");
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0].points.size(), static_cast<std::size_t>(kWriters * kRunsEach));
  for (const auto& p : series[0].points) EXPECT_EQ(p.samples, 3);  // no run half-written
}

TEST_F(HistoryTest, BaselinesAndChangePointsAreStored) {
  History h(db());
  const auto id = h.append_run(run_doc("2026-01-01T00:00:00Z", 10), "r1.json");
  EXPECT_EQ(h.baseline_run("m1"), 0);
  h.set_baseline("m1", id);
  EXPECT_EQ(h.baseline_run("m1"), id);
  h.store_change_points("demo.x/a/n:1", "m1", {{id, 10, 12}});
  h.store_change_points("demo.x/a/n:1", "m1", {});  // replaces, does not accumulate
}

TEST_F(HistoryTest, UnopenablePathIsOneClearError) {
  try {
    History h("/proc/no/such/dir/history.sqlite");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/proc/no/such/dir/history.sqlite"), std::string::npos);
  }
}

TEST(ChangePoints, FindsAStepAndIgnoresNoise) {
  std::vector<double> series;
  for (int i = 0; i < 30; ++i) series.push_back(100 * (1 + 0.005 * ((i * 7) % 5 - 2)));
  EXPECT_TRUE(stats::detect_change_points(series).empty());
  for (int i = 0; i < 30; ++i) series.push_back(110 * (1 + 0.005 * ((i * 3) % 5 - 2)));
  const auto cps = stats::detect_change_points(series);
  ASSERT_EQ(cps.size(), 1u);
  EXPECT_EQ(cps[0], 30u);
}

TEST(ChangePoints, FindsTwoSteps) {
  std::vector<double> series;
  for (int i = 0; i < 20; ++i) series.push_back(100 + (i % 3));
  for (int i = 0; i < 20; ++i) series.push_back(130 + (i % 3));
  for (int i = 0; i < 20; ++i) series.push_back(90 + (i % 3));
  const auto cps = stats::detect_change_points(series);
  ASSERT_EQ(cps.size(), 2u);
  EXPECT_EQ(cps[0], 20u);
  EXPECT_EQ(cps[1], 40u);
}

TEST(MultipleTesting, HolmAndBenjaminiHochbergKnownAnswers) {
  // Textbook example: p = 0.01, 0.04, 0.03, 0.005 (m = 4).
  const std::vector<double> p = {0.01, 0.04, 0.03, 0.005};
  const auto holm = stats::holm_adjust(p);
  // Sorted 0.005, 0.01, 0.03, 0.04 -> 4*0.005=0.02, 3*0.01=0.03, 2*0.03=0.06, 1*0.04 -> max(0.06, 0.04) = 0.06.
  EXPECT_DOUBLE_EQ(holm[3], 0.02);
  EXPECT_DOUBLE_EQ(holm[0], 0.03);
  EXPECT_DOUBLE_EQ(holm[2], 0.06);
  EXPECT_DOUBLE_EQ(holm[1], 0.06);
  const auto bh = stats::benjamini_hochberg_adjust(p);
  // Sorted: 0.005*4/1=0.02, 0.01*4/2=0.02, 0.03*4/3=0.04, 0.04*4/4=0.04 (then running minimum from the top).
  EXPECT_DOUBLE_EQ(bh[3], 0.02);
  EXPECT_DOUBLE_EQ(bh[0], 0.02);
  EXPECT_DOUBLE_EQ(bh[2], 0.04);
  EXPECT_DOUBLE_EQ(bh[1], 0.04);
  EXPECT_THROW(stats::holm_adjust(std::vector<double>{1.5}), std::invalid_argument);
  EXPECT_TRUE(stats::holm_adjust(std::vector<double>{}).empty());
}

}  // namespace
}  // namespace pairbench::harness
