// Adding an experiment is one file (issue 16): tests/bench/throwaway/scratch/dot_product.cpp is
// built into bench_scratch by the same area mechanism as bench/ (no CMake line names it), and
// pairbench lists it, runs it (verified, summarised with its ratio and declared figure), draws it
// in the report, and keeps a README's generated experiment table in step with it.
// docs/adding-an-experiment.md shows exactly these commands.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "harness/exec/process.h"

namespace pairbench::harness {
namespace {
namespace fs = std::filesystem;

constexpr const char* kExperiment = "scratch.dot_product";

// Every pairbench call has its own limit: a hung run fails the test instead of stalling ctest.
ProcessResult pairbench(std::vector<std::string> args, int limit_s = 60) {
  args.insert(args.begin(), PAIRBENCH_EXE);
  return run_process(args, {}, std::chrono::seconds(limit_s));
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class ThrowawayExperiment : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/pairbench-throwaway-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(ThrowawayExperiment, OneFileIsBuiltListedRunSummarisedAndDrawn) {
  // Listed: the binary the area folder made declares it, with its figure.
  const ProcessResult list = pairbench({"list", "--format", "json", "--bench-dir", THROWAWAY_BENCH_DIR});
  ASSERT_EQ(list.exit_code, 0) << list.output;
  const nlohmann::json catalogue = nlohmann::json::parse(list.output);
  ASSERT_EQ(catalogue.size(), 1u) << list.output;
  const nlohmann::json& listed = catalogue[0];
  EXPECT_EQ(listed["name"], kExperiment);
  EXPECT_EQ(listed["binary"], "bench_scratch");
  EXPECT_EQ(listed["arms"][0]["name"], "one_chain");
  EXPECT_EQ(listed["arms"][0]["role"], "baseline");
  EXPECT_EQ(listed["figure"]["x_scale"], "log");
  EXPECT_EQ(listed["benchmarks"].size(), 4u);  // 2 arms x 2 quick grid points

  // Run: a few short processes, no history, no calibration cache left behind.
  const std::string run_file = dir_ + "/run.json";
  const ProcessResult run = pairbench(
      {"run", "--experiments", kExperiment, "--bench-dir", THROWAWAY_BENCH_DIR, "--repetitions", "3", "--batches", "3",
       "--min-time", "0.003", "--calibration", "none", "--no-history", "--seed", "16", "--out", run_file},
      120);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const nlohmann::json doc = nlohmann::json::parse(read_file(run_file));
  const nlohmann::json& experiments = doc["pairbench"]["experiments"];
  ASSERT_EQ(experiments.size(), 1u);
  const nlohmann::json& summarised = experiments[0];
  EXPECT_EQ(summarised["name"], kExperiment);
  EXPECT_EQ(summarised["figure"]["kind"], "metric");
  EXPECT_EQ(summarised["figure"]["x_scale"], "log");
  ASSERT_EQ(summarised["points"].size(), 2u);
  for (const nlohmann::json& point : summarised["points"]) {
    SCOPED_TRACE(point["params"].dump());
    ASSERT_EQ(point["arms"].size(), 2u);
    for (const nlohmann::json& arm : point["arms"]) {
      EXPECT_EQ(arm["verification"], "passed") << arm.dump();
      EXPECT_GT(arm["median"].get<double>(), 0);
    }
    ASSERT_EQ(point["ratios"].size(), 1u);
    EXPECT_EQ(point["ratios"][0]["treatment"], "four_chains");
    EXPECT_GT(point["ratios"][0]["ratio"].get<double>(), 0);
  }
  EXPECT_TRUE(doc["pairbench"]["not_run"].empty()) << doc["pairbench"]["not_run"].dump();

  // Drawn: the report names its ratio and metric figures, and they exist.
  const std::string report_dir = dir_ + "/report";
  const ProcessResult report = pairbench({"report", "--run", run_file, "-o", report_dir, "--timeout", "100"}, 120);
  ASSERT_EQ(report.exit_code, 0) << report.output;
  const std::string page = read_file(report_dir + "/index.html");
  for (const std::string figure : {"fig01-scratch.dot_product-ratio.png", "fig02-scratch.dot_product-metric.png"}) {
    EXPECT_TRUE(fs::exists(report_dir + "/" + figure)) << figure;
    EXPECT_NE(page.find(figure), std::string::npos) << figure << " is not in index.html";
  }
}

// The README's experiment table is generated: --update writes it between the markers, --check
// passes on the result and, once the table no longer matches the binaries, fails naming the
// command that refreshes it.
TEST_F(ThrowawayExperiment, MarkdownTableIsWrittenBetweenMarkersAndCheckedForStaleness) {
  const std::string readme = dir_ + "/README.md";
  std::ofstream(readme) << "# demo\n\nBefore.\n\n<!-- pairbench list --format markdown -->\n"
                        << "| old table |\n<!-- end pairbench list -->\n\nAfter.\n";
  const std::vector<std::string> markdown = {"list", "--format", "markdown", "--bench-dir", THROWAWAY_BENCH_DIR};
  auto with = [&](std::vector<std::string> extra) {
    std::vector<std::string> args = markdown;
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  };

  const ProcessResult stale = pairbench(with({"--check", readme}));
  EXPECT_EQ(stale.exit_code, 1) << stale.output;
  EXPECT_NE(stale.output.find("pairbench list --format markdown --update " + readme), std::string::npos)
      << stale.output;

  const ProcessResult update = pairbench(with({"--update", readme}));
  ASSERT_EQ(update.exit_code, 0) << update.output;
  const std::string text = read_file(readme);
  EXPECT_EQ(text.rfind("# demo\n\nBefore.\n\n<!-- pairbench list --format markdown -->\n| experiment |", 0), 0u)
      << text;
  EXPECT_NE(text.find("| `scratch.dot_product` | — | Does a dot product summed along four independent chains beat "
                      "one chain? | one_chain, four_chains | `elements_per_second` (higher) | wall_clock | "
                      "n 1024/65536 |\n<!-- end pairbench list -->\n\nAfter.\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("old table"), std::string::npos);

  const ProcessResult current = pairbench(with({"--check", readme}));
  EXPECT_EQ(current.exit_code, 0) << current.output;
  const ProcessResult other_profile = pairbench(with({"--check", readme, "--profile", "nightly"}));
  EXPECT_EQ(other_profile.exit_code, 1) << other_profile.output;  // the nightly grid differs

  std::ofstream(dir_ + "/no-markers.md") << "# nothing to replace\n";
  const ProcessResult no_markers = pairbench(with({"--update", dir_ + "/no-markers.md"}));
  EXPECT_EQ(no_markers.exit_code, 2) << no_markers.output;
  EXPECT_NE(no_markers.output.find(dir_ + "/no-markers.md: expected one line <!-- pairbench list"), std::string::npos)
      << no_markers.output;
  EXPECT_EQ(read_file(dir_ + "/no-markers.md"), "# nothing to replace\n");

  const ProcessResult not_markdown = pairbench({"list", "--bench-dir", THROWAWAY_BENCH_DIR, "--check", readme});
  EXPECT_EQ(not_markdown.exit_code, 2) << not_markdown.output;
  EXPECT_NE(not_markdown.output.find("--check: expected --format markdown"), std::string::npos) << not_markdown.output;
}

}  // namespace
}  // namespace pairbench::harness
