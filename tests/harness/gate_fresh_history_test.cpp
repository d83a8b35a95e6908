// Issue 38: three quick runs of unchanged code into a fresh history, then the gate, twice: it must
// pass (exit 0), whatever the noise of a benchmark, and its first line must not count as
// "unchanged" what it gated only at a resolution too wide to mean anything. On the simulated bench
// (tests/bench/sim_bench.cpp), whose cases declare the noise of real profiles' shapes: a quiet one,
// one as noisy as pipeline.loader between processes, a bimodal one and one with outlier processes.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/exec/process.h"
#include "kernels/common/scratch.h"
#include "tests/harness/sim_build.h"

namespace pairbench::harness {
namespace {

nlohmann::json read(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

TEST(GateFreshHistory, ThreeQuickRunsOfUnchangedCodeThenTheGatePassesTwice) {
  const kernels::TempDir tmp("pairbench-gate-fresh-history");
  const std::string dir = tmp.path().string(), db = dir + "/history.sqlite";
  const nlohmann::json cases = {{"a", {{"process_sd", 0.005}}},
                                {"b", {{"process_sd", 0.20}, {"inprocess_sd", 0.05}}},
                                {"c", {{"bimodal_p", 0.3}, {"bimodal_x", 1.5}}},
                                {"d", {{"outlier_p", 0.2}, {"outlier_x", 3}}}};
  const std::string bin = sim_build(dir, {{"seed", 38}, {"cases", cases}});
  auto pairbench = [](std::vector<std::string> args) {
    args.insert(args.begin(), PAIRBENCH_EXE);
    return run_process(args, {}, std::chrono::seconds(300));
  };
  for (int k = 1; k <= 3; ++k) {
    const std::string out = dir + "/run-" + std::to_string(k) + ".json";
    const ProcessResult r =
        pairbench({"run", "--bench-dir", bin, "--experiments", "sim.declared", "--profile", "quick", "--db", db,
                   "--calibration", dir + "/cal.json", "--out", out, "--seed", std::to_string(100 + k)});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    if (k == 1) {
      const ProcessResult b = pairbench({"baseline", "update", "--run", out, "--results-dir", dir, "--db", db});
      ASSERT_EQ(b.exit_code, 0) << b.output;
      continue;
    }
    const std::string json = dir + "/gate-" + std::to_string(k) + ".json";
    const ProcessResult g = pairbench({"gate", "--current", out, "--results-dir", dir, "--db", db, "--json", json});
    EXPECT_EQ(g.exit_code, 0) << "run " << k << ": " << g.output;
    const nlohmann::json gate = read(json);
    int counted_unchanged = 0;
    for (const auto& row : gate["benchmarks"]) {
      if (row["instrument"] != "time") continue;
      EXPECT_NE(row["verdict"], "regression") << row.dump();
      if (row["verdict"] == "unchanged") {
        ++counted_unchanged;
        EXPECT_LE(row["gated_at"].get<double>(), 0.25) << row.dump();  // counted only where it means something
      }
    }
    // The first line counts the rows gated too widely apart from the unchanged ones.
    const std::string headline = gate["headline"];
    EXPECT_NE(headline.find(std::to_string(counted_unchanged) + " unchanged"), std::string::npos) << headline;
  }
}

// A whole run that moved (the machine, not the code) between two real `pairbench run`s of the
// simulated bench, gated by the real `pairbench gate`: every case 20 % slower, the machine's limits
// (sim.machine, kind `limit`) with them, is named in the gate's second line and its regressions are
// held undecided as suspects; the code's cases 20 % slower with the limits where they were is not a
// whole run, and nothing is held. Both ways, on declared times (harness/gate/gate.cpp,
// detect_run_shift; the limits rule itself on synthetic rows: RunShift.* in gate_test.cpp).
TEST(GateRunShift, AWholeRunSlowerWithItsLimitsIsHeldAndWithoutThemItIsNot) {
  const kernels::TempDir tmp("pairbench-gate-run-shift");
  const std::string dir = tmp.path().string();
  auto declaration = [](double code, double machine) {
    nlohmann::json cases;
    for (const char* c : {"a", "b", "c", "d"}) cases[c] = {{"process_sd", 0.005}, {"change", code}};
    for (const char* c : {"m1", "m2", "m3", "m4"}) cases[c] = {{"process_sd", 0.005}, {"change", machine}};
    return nlohmann::json{{"seed", 44}, {"cases", cases}};
  };
  auto pairbench = [](std::vector<std::string> args) {
    args.insert(args.begin(), PAIRBENCH_EXE);
    return run_process(args, {}, std::chrono::seconds(300));
  };
  auto run = [&](const std::string& name, const nlohmann::json& spec) {
    const std::string bin = sim_build(dir + "/" + name, spec), out = dir + "/" + name + ".json";
    const ProcessResult r =
        pairbench({"run", "--bench-dir", bin, "--experiments", "sim.declared,sim.machine", "--profile", "quick",
                   "--min-time", "0.002", "--no-history", "--calibration", "none", "--out", out, "--seed", "44"});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return out;
  };
  const std::string base = run("base", declaration(0, 0));
  auto gate = [&](const std::string& current, const std::string& json) {
    return pairbench({"gate", "--baseline", base, "--current", current, "--db", "none", "--resolution", "off",
                      "--force", "--json", json});
  };
  const ProcessResult moved = gate(run("moved", declaration(0.2, 0.2)), dir + "/moved-gate.json");
  const nlohmann::json m = read(dir + "/moved-gate.json");
  EXPECT_TRUE(m["run_shift"]["moved"].get<bool>()) << moved.output;
  EXPECT_GE(m["run_shift"]["held"].get<int>(), 4) << moved.output;
  EXPECT_NE(moved.output.find("WHOLE RUN MOVED"), std::string::npos) << moved.output;
  for (const auto& row : m["benchmarks"]) {
    if (row["instrument"] != "time") continue;
    EXPECT_NE(row["verdict"], "regression") << row.dump();
  }
  EXPECT_EQ(moved.exit_code, 4) << moved.output;

  const ProcessResult code = gate(run("code", declaration(0.2, 0)), dir + "/code-gate.json");
  const nlohmann::json c = read(dir + "/code-gate.json");
  EXPECT_FALSE(c["run_shift"]["moved"].get<bool>()) << code.output;
  EXPECT_EQ(c["run_shift"]["held"].get<int>(), 0) << code.output;
  EXPECT_EQ(code.output.find("WHOLE RUN MOVED"), std::string::npos) << code.output;
}

}  // namespace
}  // namespace pairbench::harness
