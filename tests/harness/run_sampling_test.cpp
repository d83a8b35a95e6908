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

#include "harness/sampling/unpaired.h"
#include "harness/exec/process.h"
#include "tests/harness/sim_build.h"
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
  return {"run",          "--bench-dir",   TIMING_BENCH_DIR, "--experiments", "timing.work", "--min-time", "0.002",
          "--no-history", "--calibration", "none",           "--out",         out,           "--seed",     seed};
}

// The same on the simulated bench (sim_build.h), its four cases at 0.5 % noise between processes:
// what is decided follows from the declaration, not from the machine's load (issue 37).
std::vector<std::string> sim_run_args(const std::string& bench_dir, const std::string& out, const std::string& seed) {
  return {"run",           "--bench-dir", bench_dir, "--experiments",
          "sim.declared",  "--min-time",  "0.002",   "--no-history",
          "--calibration", "none",        "--out",   out,
          "--seed",        seed};
}

nlohmann::json quiet_cases() {
  const nlohmann::json quiet = {{"process_sd", 0.005}, {"inprocess_sd", 0.001}};
  return {{"cases", {{"a", quiet}, {"b", quiet}, {"c", quiet}, {"d", quiet}}}};
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

// The rounds end to end: the benchmarks the planned look leaves undecided get more processes, each
// up to the cap, its processes numbered in place. The timing bench is so quiet that the planned
// look's fixed test often decides every benchmark a round could (then no round runs); either way
// each benchmark's processes are numbered 0..n-1 between the planned count and the cap, and no round
// is skipped that could have decided something. The rounds' merging itself: MergeRound below. On
// the simulated bench (0.3 % noise declared): that nothing is decided a regression follows from the
// declaration, where two real runs under ctest's load can differ by more than the threshold.
TEST(RunSampling, MoreProcessesForTheUndecidedWithinTheCapEachInItsOwnPlace) {
  TempDir dir;
  const nlohmann::json quiet = {{"process_sd", 0.003}, {"inprocess_sd", 0.001}};
  const std::string bench = sim_build(dir.path, {{"cases", {{"a", quiet}, {"b", quiet}, {"c", quiet}, {"d", quiet}}}});
  const std::string base = dir.path + "/base.json", cur = dir.path + "/cur.json";
  auto base_args = sim_run_args(bench, base, "7");
  base_args.insert(base_args.end(), {"--repetitions", "12"});
  const ProcessResult b = pairbench(base_args);
  ASSERT_EQ(b.exit_code, 0) << b.output;
  auto args = sim_run_args(bench, cur, "8");
  args.insert(args.end(), {"--repetitions", "3", "--baseline", base, "--budget", "20", "--max-repetitions", "7",
                           "--threshold", "0.008", "--alpha", "1e-6", "--json", dir.path + "/gate.json"});
  const ProcessResult r = pairbench(args);
  EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 4) << r.output;  // alpha 1e-6: no decided change
  const bool rounds = r.output.find("run: round 1") != std::string::npos;
  // No round only where none could help: decided at the planned look, the baseline's own processes
  // leave more than the threshold, or the noise asks for more processes than the cap (each says so).
  EXPECT_TRUE(rounds || r.output.find("decided at the planned look") != std::string::npos ||
              r.output.find("no number of processes of this run decides it") != std::string::npos ||
              r.output.find("no number of processes decides it at this noise") != std::string::npos ||
              r.output.find("more than the cap of 7") != std::string::npos)
      << r.output;
  if (rounds) {
    EXPECT_NE(r.output.find("sampled until decided, always-valid 95 % interval"), std::string::npos) << r.output;
  }
  const nlohmann::json doc = read(cur);
  bool sampled_more = false;
  for (const auto& [name, reps] : repetitions(doc)) {
    EXPECT_GE(reps.size(), 3u) << name;  // the planned processes
    EXPECT_LE(reps.size(), 7u) << name;  // the cap (odd: the last round adds 1)
    sampled_more = sampled_more || reps.size() > 3;
    std::multiset<int> expected;  // every process keeps its own repetition index: 0..n-1 once each
    for (int i = 0; i < static_cast<int>(reps.size()); ++i) expected.insert(i);
    EXPECT_EQ(reps, expected) << name;
  }
  EXPECT_EQ(sampled_more, rounds) << r.output;
  const auto& until = doc["pairbench"]["sampling"]["until_decided"];
  EXPECT_EQ(until["rounds"].get<int>() >= 1, rounds) << until;
  EXPECT_EQ(until["added_processes"].get<int>() > 0, rounds) << until;
  EXPECT_EQ(until["baseline"], base);
  // The summary counts every process, not only the planned ones.
  EXPECT_NE(doc["pairbench"]["experiments"].dump().find("sim.declared"), std::string::npos);
  const nlohmann::json gate = read(dir.path + "/gate.json");
  EXPECT_TRUE(gate.contains("headline")) << gate.dump();
  EXPECT_EQ(gate.dump().find("\"regression\""), std::string::npos) << gate.dump();
}

// The budget is the wall of the processes that measure (issue 43): a run whose benchmarks this
// machine's calibration cache does not hold calibrates them before its budget starts, said before
// it and with what it took; the next run with that cache has nothing to calibrate and says nothing.
TEST(RunSampling, WhatNeverRanHereIsCalibratedBeforeTheBudgetStarts) {
  TempDir dir;
  const std::string bench = sim_build(dir.path, quiet_cases());
  const std::string base = dir.path + "/base.json";
  const ProcessResult b = pairbench(sim_run_args(bench, base, "7"));
  ASSERT_EQ(b.exit_code, 0) << b.output;
  const auto budgeted = [&](const std::string& out) {
    auto args = sim_run_args(bench, out, "8");
    for (std::size_t i = 0; i + 1 < args.size(); ++i) {
      if (args[i] == "--calibration") args[i + 1] = dir.path + "/calibration.json";
    }
    args.insert(args.end(), {"--baseline", base, "--budget", "20", "--threshold", "0.5"});
    return pairbench(args);
  };
  const ProcessResult first = budgeted(dir.path + "/first.json");
  EXPECT_TRUE(first.exit_code == 0 || first.exit_code == 4) << first.output;
  const std::size_t calibrating = first.output.find(
      "run: 4 of the 4 benchmarks have no calibration here: calibrating them first, outside the 20 s budget");
  const std::size_t took = first.output.find("run: calibration took "),
                    look = first.output.find("run: the planned look (");
  ASSERT_NE(calibrating, std::string::npos) << first.output;
  ASSERT_NE(took, std::string::npos) << first.output;
  ASSERT_NE(look, std::string::npos) << first.output;
  EXPECT_LT(calibrating, took) << first.output;
  EXPECT_LT(took, look) << first.output;
  const ProcessResult next = budgeted(dir.path + "/next.json");
  EXPECT_TRUE(next.exit_code == 0 || next.exit_code == 4) << next.output;
  EXPECT_EQ(next.output.find("calibrating them first"), std::string::npos) << next.output;
  EXPECT_NE(next.output.find("run: the planned look ("), std::string::npos) << next.output;
}

// A round's processes join the run after those already there: each keeps its benchmark's own
// repetition numbering (continued, not restarted), launch sequence and start time after the
// run's, and the counts add up.
TEST(RunSampling, MergeRoundNumbersEachProcessAfterTheRunsOwn) {
  const auto sample = [](const std::string& name, int repetition, int sequence, double start_s) {
    Sample s;
    s.benchmark = name;
    s.repetition = repetition;
    s.sequence = sequence;
    s.start_s = start_s;
    s.process_wall_s = 1;
    return s;
  };
  RunOutcome run, round;
  run.samples = {sample("a", 0, 0, 0), sample("b", 0, 1, 1), sample("a", 1, 2, 2), sample("b", 1, 3, 3)};
  run.completed_processes = run.planned_processes = 4;
  run.wall_s = 4;
  round.samples = {sample("b", 0, 0, 0), sample("b", 1, 1, 1)};
  round.completed_processes = round.planned_processes = 2;
  round.wall_s = 2;
  merge_round(run, round);
  ASSERT_EQ(run.samples.size(), 6u);
  EXPECT_EQ(run.samples[4].benchmark, "b");
  EXPECT_EQ(run.samples[4].repetition, 2);
  EXPECT_EQ(run.samples[5].repetition, 3);
  EXPECT_EQ(run.samples[4].sequence, 4);
  EXPECT_EQ(run.samples[5].sequence, 5);
  EXPECT_DOUBLE_EQ(run.samples[4].start_s, 4.0);  // after the last process (started at 3, 1 s long)
  EXPECT_EQ(run.completed_processes, 6u);
  EXPECT_EQ(run.planned_processes, 6u);
  EXPECT_DOUBLE_EQ(run.wall_s, 6.0);
}

// Stage 1: where the planned processes already show the change inside ±50 %, the fixed test at
// half of alpha decides every benchmark at the planned look, and no round runs.
TEST(RunSampling, ThePlannedLookDecidesWhatItCanAndNeedsNoRound) {
  TempDir dir;
  const std::string bench = sim_build(dir.path, quiet_cases());
  const std::string base = dir.path + "/base.json", cur = dir.path + "/cur.json";
  ASSERT_EQ(pairbench(sim_run_args(bench, base, "7")).exit_code, 0);
  auto args = sim_run_args(bench, cur, "8");
  args.insert(args.end(), {"--baseline", base, "--budget", "20", "--threshold", "0.5"});
  const ProcessResult r = pairbench(args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("run: round 1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("decided at the planned look"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("95 % interval"), std::string::npos) << r.output;
  const nlohmann::json doc = read(cur);
  const auto& until = doc["pairbench"]["sampling"]["until_decided"];
  EXPECT_EQ(until["rounds"], 0) << until;
  EXPECT_GT(until["decided_at_planned_look"].get<int>(), 0) << until;
  for (const auto& [name, reps] : repetitions(doc)) EXPECT_EQ(reps.size(), 4u) << name;
}

TEST(RunSampling, BaselineWithoutBudgetIsTheFixedGate) {
  TempDir dir;
  const std::string bench = sim_build(dir.path, quiet_cases());
  const std::string base = dir.path + "/base.json", cur = dir.path + "/cur.json";
  ASSERT_EQ(pairbench(sim_run_args(bench, base, "7")).exit_code, 0);
  auto args = sim_run_args(bench, cur, "8");
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

// `run --bench-dir` of a build configured otherwise than this pairbench (bench binaries only, CUDA
// the other way): the run file records how its binaries were built, not this harness's build, and
// says so.
TEST(RunSampling, ABenchDirConfiguredOtherwiseIsRecordedAsItsBinariesWereBuilt) {
  TempDir dir;
  const std::string real = sim_build(dir.path + "/real", quiet_cases());
  const std::string other = sim_build_reporting_other_cuda(dir.path + "/other", real);
  const std::string out = dir.path + "/r.json";
  auto args = sim_run_args(other, out, "1");
  args.insert(args.end(), {"--repetitions", "2"});
  const ProcessResult r = pairbench(args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("pairbench: warning: the bench binaries were built otherwise than this fingerprint says"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(read(out).at("pairbench").at("environment").at("built_with_cuda"), !PAIRBENCH_HAVE_CUDA);
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
