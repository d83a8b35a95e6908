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

}  // namespace
}  // namespace pairbench::harness
