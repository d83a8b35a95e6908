// An environment arm end to end: the pairbench harness runs bench_alloc's glibc and jemalloc arms,
// the jemalloc process gets LD_PRELOAD, verifies it, and its run-file entries name jemalloc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "harness/exec/process.h"
#include "kernels/alloc/allocator_probe.h"

namespace pairbench::harness {
namespace {

TEST(AllocEnvironmentArm, HarnessRunsJemallocUnderItsPreload) {
  const std::string jemalloc = kernels::alloc::preloadable_allocators().at(0).path;
  if (!std::filesystem::exists(jemalloc)) GTEST_SKIP() << "skipped: libjemalloc2 not installed";
  const std::string out =
      (std::filesystem::temp_directory_path() / ("pairbench-alloc-arm-" + std::to_string(getpid()) + ".json")).string();
  const ProcessResult r =
      run_process({PAIRBENCH_EXE, "run", "--experiments", "alloc.small_objects", "--arms", "glibc,jemalloc",
                   "--repetitions", "2", "--min-time", "0.01", "--bench-dir", BENCH_ALLOC_DIR, "--out", out},
                  {}, std::chrono::seconds(240));
  ASSERT_EQ(r.status, ProcessResult::Status::kExited) << r.describe();
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(out);
  ASSERT_TRUE(in) << out;
  const nlohmann::json run = nlohmann::json::parse(in);
  std::filesystem::remove(out);
  std::map<std::string, int> samples;
  for (const auto& b : run.at("benchmarks")) {
    const std::string arm = b.at("arm");
    const std::string label = b.value("label", "");
    SCOPED_TRACE(b.at("name").get<std::string>() + ": " + label);
    ASSERT_TRUE(arm == "glibc" || arm == "jemalloc");
    EXPECT_EQ(b.at("verification"), "passed");
    EXPECT_EQ(label.rfind("allocator=" + arm + " ", 0), 0u);
    EXPECT_NE(label.find("real_calls=confirmed"), std::string::npos);
    EXPECT_GT(b.value("ops_per_second", 0.0), 0.0);
    EXPECT_GT(b.value("peak_rss_bytes", 0.0), 0.0);
    ++samples[arm];
  }
  // Two grid points (threads 1 and all), two repetitions each.
  EXPECT_EQ(samples["glibc"], 4);
  EXPECT_EQ(samples["jemalloc"], 4);
  EXPECT_TRUE(run.at("pairbench").at("not_run").empty()) << run.at("pairbench").at("not_run").dump();
}

}  // namespace
}  // namespace pairbench::harness
