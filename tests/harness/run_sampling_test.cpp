// `pairbench run --baseline F --budget S` on the known-work bench against a run of itself: after
// the planned processes it adds rounds for the benchmarks still undecided against the baseline,
// within the cap and the budget; the run file keeps every process in its own place and records
// the sampling; the gate's table carries the always-valid verdicts; an unchanged build is never a
// regression. Bad input (the gate's options without a baseline) is refused before anything runs.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/exec/process.h"
#include "kernels/common/scratch.h"

namespace pairbench::harness {
namespace {
namespace fs = std::filesystem;

// A scratch directory for one test, removed after it (kernels::TempDir: $TMPDIR, a clear error
// when it cannot be made), its path as the string the commands take.
struct TempDir {
  kernels::TempDir dir{"pairbench-run-sampling"};
  std::string path = dir.path().string();
};

nlohmann::json read(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

ProcessResult pairbench(std::vector<std::string> args, int limit_s = 300) {
  args.insert(args.begin(), PAIRBENCH_EXE);
  return run_process(args, {}, std::chrono::seconds(limit_s));
}

std::vector<std::string> run_args(const std::string& out, const std::string& seed) {
  return {"run", "--bench-dir", TIMING_BENCH_DIR, "--experiments", "timing.work", "--min-time", "0.002",
          "--no-history", "--calibration", "none", "--out", out, "--seed", seed};
}

// Per benchmark, its processes' repetition indices.
std::map<std::string, std::multiset<int>> repetitions(const nlohmann::json& doc) {
  std::map<std::string, std::multiset<int>> out;
  for (const auto& b : doc["benchmarks"]) out[b["name"]].insert(b["repetition_index"].get<int>());
  return out;
}

int line_count(const std::string& s) {
  int n = 0;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) n += !line.empty();
  return n;
}

// At the quick profile's 4 processes the current side's always-valid interval is still unbounded
// (at its share of the 90 % level), so every benchmark is undecided at the first look and rounds
// are added; a threshold of 50 % lets a few more processes decide it.
TEST(RunSampling, MoreProcessesForTheUndecidedWithinTheCapEachInItsOwnPlace) {
  TempDir dir;
  const std::string base = dir.path + "/base.json", cur = dir.path + "/cur.json";
  const ProcessResult b = pairbench(run_args(base, "7"));
  ASSERT_EQ(b.exit_code, 0) << b.output;
  auto args = run_args(cur, "8");
  args.insert(args.end(), {"--baseline", base, "--budget", "20", "--max-repetitions", "7", "--threshold", "0.5", "--json",
                           dir.path + "/gate.json"});
  const ProcessResult r = pairbench(args);
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 4) << r.output;  // the same build: never a regression
  EXPECT_NE(r.output.find("run: round 1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("sampled until decided, always-valid interval"), std::string::npos) << r.output;
  const nlohmann::json doc = read(cur);
  bool sampled_more = false;
  for (const auto& [name, reps] : repetitions(doc)) {
    EXPECT_GE(reps.size(), 4u) << name;  // the planned processes (quick profile)
    EXPECT_LE(reps.size(), 7u) << name;  // the cap (odd: the last round adds 1)
    sampled_more = sampled_more || reps.size() > 4;
    std::multiset<int> expected;  // every process keeps its own repetition index: 0..n-1 once each
    for (int i = 0; i < static_cast<int>(reps.size()); ++i) expected.insert(i);
    EXPECT_EQ(reps, expected) << name;
  }
  EXPECT_TRUE(sampled_more) << r.output;
  const auto& until = doc["pairbench"]["sampling"]["until_decided"];
  EXPECT_GE(until["rounds"].get<int>(), 1) << until;
  EXPECT_GT(until["added_processes"].get<int>(), 0) << until;
  EXPECT_EQ(until["baseline"], base);
  // The summary counts every process, not only the planned ones.
  EXPECT_NE(doc["pairbench"]["experiments"].dump().find("timing.work"), std::string::npos);
  const nlohmann::json gate = read(dir.path + "/gate.json");
  EXPECT_TRUE(gate.contains("headline")) << gate.dump();
  EXPECT_EQ(gate.dump().find("\"regression\""), std::string::npos) << gate.dump();
}

TEST(RunSampling, BaselineWithoutBudgetIsTheFixedGate) {
  TempDir dir;
  const std::string base = dir.path + "/base.json", cur = dir.path + "/cur.json";
  ASSERT_EQ(pairbench(run_args(base, "7")).exit_code, 0);
  auto args = run_args(cur, "8");
  args.insert(args.end(), {"--baseline", base, "--undecided", "pass"});
  const ProcessResult r = pairbench(args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("sampled until decided"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("regressions"), std::string::npos) << r.output;  // the gate's headline
  for (const auto& [name, reps] : repetitions(read(cur))) EXPECT_EQ(reps.size(), 4u) << name;
  EXPECT_FALSE(read(cur)["pairbench"]["sampling"].contains("until_decided"));
}

// Refused as bad input before anything runs: exit 2, one line naming the option, no run file.
TEST(RunSampling, TheGatesOptionsWithoutABaselineAreRefused) {
  TempDir dir;
  const std::string out = dir.path + "/r.json";
  // Another machine's run: the fixture with its CPU renamed.
  nlohmann::json other = read(std::string(FIXTURES_DIR) + "/run_cpu_a.json");
  other["pairbench"]["environment"]["cpu_model"] = "Another CPU";
  const std::string other_path = dir.path + "/other.json";
  std::ofstream(other_path) << other.dump();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--budget", "20"}, "--budget"},
      {{"--max-repetitions", "8"}, "--max-repetitions"},
      {{"--threshold", "0.1"}, "--threshold"},
      {{"--markdown", dir.path + "/g.md"}, "--markdown"},
      {{"--baseline", dir.path + "/absent.json", "--budget", "20"}, "--baseline"},
      {{"--baseline", std::string(FIXTURES_DIR) + "/run_cpu_a.json", "--max-repetitions", "8"}, "--max-repetitions"},
      {{"--baseline", std::string(FIXTURES_DIR) + "/run_cpu_a.json", "--budget", "-1"}, "--budget"},
      // Another machine's run: refused before measuring, naming --baseline and --force.
      {{"--baseline", other_path, "--budget", "20"}, "--force"},
  };
  for (const auto& [extra, what] : cases) {
    auto args = run_args(out, "1");
    args.insert(args.end(), extra.begin(), extra.end());
    SCOPED_TRACE(what);
    const ProcessResult r = pairbench(args, 30);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(line_count(r.output), 1) << r.output;
    EXPECT_NE(r.output.find(what), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(out)) << "measured before refusing: " << r.output;
  }
}

// `--baseline history` where this machine has none: refused before measuring, saying how to store one.
TEST(RunSampling, NoStoredBaselineIsRefusedBeforeMeasuring) {
  TempDir dir;
  const std::string out = dir.path + "/r.json";
  auto args = run_args(out, "1");
  args.insert(args.end(), {"--baseline", "history", "--budget", "20"});
  const std::string cwd = fs::current_path();
  fs::current_path(dir.path);  // no results/baselines/ here
  const ProcessResult r = pairbench(args, 30);
  fs::current_path(cwd);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(line_count(r.output), 1) << r.output;
  EXPECT_NE(r.output.find("--baseline: no baseline for machine"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
}  // namespace pairbench::harness
