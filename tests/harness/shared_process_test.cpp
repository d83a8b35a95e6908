// Shared processes (RunOptions::share_processes, bench --pairbench_plan; issue 36): one process
// runs one sample of each of several benchmarks of an experiment, in an order drawn per process,
// so that a sample costs its work and not a process start. Mechanics on the simulated bench
// (tests/bench/sim_bench.cpp), whose process counter says how many processes ran: how many
// processes, which rows shared one and in what order, a crash costing only its own benchmark, and
// the bench main's plan flag on bad input.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "harness/exec/process.h"
#include "kernels/common/scratch.h"
#include "tests/harness/sim_build.h"

namespace pairbench::harness {
namespace {

struct TempDir {
  kernels::TempDir dir{"pairbench-shared-process"};
  std::string path = dir.path().string();
};

nlohmann::json read(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

// Processes the simulated bench in `bin` has started so far.
int processes_started(const std::string& bin) {
  std::ifstream in(bin + "/bench_sim.count");
  int n = 0;
  in >> n;
  return n;
}

ProcessResult run(const std::string& bin, const std::string& out, const std::vector<std::string>& more = {}) {
  std::vector<std::string> args = {PAIRBENCH_EXE,
                                   "run",
                                   "--bench-dir",
                                   bin,
                                   "--experiments",
                                   "sim.declared",
                                   "--repetitions",
                                   "4",
                                   "--min-time",
                                   "0.002",
                                   "--no-history",
                                   "--calibration",
                                   bin + "/cal.json",
                                   "--out",
                                   out,
                                   "--seed",
                                   "7"};
  args.insert(args.end(), more.begin(), more.end());
  return run_process(args, {}, std::chrono::seconds(300));
}

TEST(SharedProcess, OneProcessPerRoundRunsEveryCaseOnceInAnOrderOfItsOwn) {
  const TempDir t;
  const std::string bin = sim_build(t.path, {{"start_s", 0.05}});
  ASSERT_EQ(run(bin, t.path + "/warm.json").exit_code, 0);  // calibrates (one shared process)
  const int before = processes_started(bin);
  const ProcessResult pr = run(bin, t.path + "/r.json");
  ASSERT_EQ(pr.exit_code, 0) << pr.output;
  EXPECT_EQ(processes_started(bin) - before, 4);  // 4 cases x 4 repetitions in 4 processes
  const nlohmann::json doc = read(t.path + "/r.json");
  EXPECT_EQ(doc["pairbench"]["sampling"]["process_sharing"], "experiment");
  std::map<int, std::vector<std::pair<int, std::string>>> by_process;  // id -> (position, case)
  std::map<std::string, std::set<int>> repetitions;
  for (const auto& b : doc["benchmarks"]) {
    ASSERT_TRUE(b.contains("shared_process")) << b.dump();
    EXPECT_EQ(b["verification"], "passed");
    EXPECT_EQ(b["shared_process"]["benchmarks"], 4);
    EXPECT_GT(b["process_wall_s"].get<double>(), 0);
    by_process[b["shared_process"]["id"].get<int>()].emplace_back(b["shared_process"]["position"].get<int>(),
                                                                  b["name"].get<std::string>());
    repetitions[b["name"]].insert(b["repetition_index"].get<int>());
  }
  ASSERT_EQ(by_process.size(), 4u);
  std::set<std::vector<std::string>> orders;
  for (auto& [id, rows] : by_process) {
    std::sort(rows.begin(), rows.end());
    std::vector<std::string> order;
    std::set<std::string> cases;
    for (std::size_t k = 0; k < rows.size(); ++k) {
      EXPECT_EQ(rows[k].first, static_cast<int>(k)) << "process " << id;
      order.push_back(rows[k].second);
      cases.insert(rows[k].second);
    }
    EXPECT_EQ(cases.size(), 4u) << "each case once per process";
    orders.insert(order);
  }
  EXPECT_GT(orders.size(), 1u) << "the order is drawn per process (seed 7)";
  for (const auto& [name, reps] : repetitions) EXPECT_EQ(reps, (std::set<int>{0, 1, 2, 3})) << name;
}

// Each row's sample_wall counts the page faults of its own set-up (the pages it made resident): a
// case whose set-up writes 32 MiB shows at least those pages, one that allocates nothing almost none.
TEST(SharedProcess, EachRowCountsThePagesItsOwnSetUpMadeResident) {
  const TempDir t;
  const std::string bin = sim_build(t.path, {{"cases", {{"b", {{"setup_bytes", 32 << 20}}}}}});
  ASSERT_EQ(run(bin, t.path + "/warm.json", {"--process-sharing", "none"}).exit_code, 0);
  const ProcessResult pr = run(bin, t.path + "/r.json", {"--process-sharing", "none"});
  ASSERT_EQ(pr.exit_code, 0) << pr.output;
  EXPECT_NE(pr.output.find("resident"), std::string::npos) << pr.output;
  const double pages = (32 << 20) / static_cast<double>(sysconf(_SC_PAGESIZE));
  int rows = 0;
  const nlohmann::json doc = read(t.path + "/r.json");
  for (const auto& b : doc["benchmarks"]) {
    ASSERT_TRUE(b["sample_wall"].contains("setup_faults")) << b.dump();
    const auto faults = b["sample_wall"]["setup_faults"].get<double>();
    if (b["name"].get<std::string>().ends_with("case:b")) {
      EXPECT_GE(faults, 0.95 * pages) << b.dump();
    } else {
      EXPECT_LT(faults, 0.05 * pages) << b.dump();
    }
    ++rows;
  }
  EXPECT_EQ(rows, 16);
}

TEST(SharedProcess, NoneRunsOneBenchmarkPerProcess) {
  const TempDir t;
  const std::string bin = sim_build(t.path, nlohmann::json::object());
  ASSERT_EQ(run(bin, t.path + "/warm.json", {"--process-sharing", "none"}).exit_code, 0);
  const int before = processes_started(bin);
  ASSERT_EQ(run(bin, t.path + "/r.json", {"--process-sharing", "none"}).exit_code, 0);
  EXPECT_EQ(processes_started(bin) - before, 16);
  const nlohmann::json doc = read(t.path + "/r.json");
  EXPECT_EQ(doc["pairbench"]["sampling"]["process_sharing"], "none");
  for (const auto& b : doc["benchmarks"]) EXPECT_FALSE(b.contains("shared_process")) << b.dump();
}

TEST(SharedProcess, ACrashCostsOnlyItsOwnBenchmarkTheRestRunAgain) {
  const TempDir t;
  const std::string bin = sim_build(t.path, {{"cases", {{"b", {{"crash", true}}}}}});
  const ProcessResult pr = run(bin, t.path + "/r.json");
  EXPECT_EQ(pr.exit_code, 3) << pr.output;  // a benchmark process crashed; every other result written
  const nlohmann::json doc = read(t.path + "/r.json");
  std::map<std::string, int> passed;
  for (const auto& b : doc["benchmarks"]) {
    if (b["verification"] == "passed") ++passed[b["name"].get<std::string>()];
  }
  for (const char* name : {"sim.declared/sim/case:a", "sim.declared/sim/case:c", "sim.declared/sim/case:d"}) {
    EXPECT_EQ(passed[name], 4) << name << ": every repetition measured, wherever the crash fell";
  }
  EXPECT_EQ(passed["sim.declared/sim/case:b"], 0);
  bool named = false;
  for (const auto& b : doc["pairbench"]["not_run"]) {
    if (b["name"] == "sim.declared/sim/case:b")
      named = named || b["reason"].get<std::string>().find("SIGABRT") != std::string::npos;
  }
  EXPECT_TRUE(named) << doc["pairbench"]["not_run"].dump();
}

// The bench main's --pairbench_plan: one line naming the file or the benchmark, exit 2.
TEST(SharedProcess, ABadPlanIsRefusedNamingWhy) {
  const TempDir t;
  const std::string bin = sim_build(t.path, nlohmann::json::object());
  auto bench = [&](const std::string& plan_text, std::vector<std::string> more = {}) {
    std::ofstream(t.path + "/plan.json") << plan_text;
    std::vector<std::string> args = {bin + "/bench_sim", "--pairbench_plan=" + t.path + "/plan.json"};
    args.insert(args.end(), more.begin(), more.end());
    return run_process(args, {}, std::chrono::seconds(60));
  };
  ProcessResult pr = bench("{not json");
  EXPECT_EQ(pr.exit_code, 2);
  EXPECT_NE(pr.output.find("plan.json"), std::string::npos) << pr.output;
  pr = bench(R"({"benchmarks": [{"name": "sim.declared/sim/case:z", "out": "o", "record": "r"}]})");
  EXPECT_EQ(pr.exit_code, 2);
  EXPECT_NE(pr.output.find("case:z"), std::string::npos) << pr.output;
  pr = bench(R"({"benchmarks": []})");
  EXPECT_EQ(pr.exit_code, 2);
  pr = bench(R"({"benchmarks": [{"name": "sim.declared/sim/case:a", "out": "o", "record": "r"}]})",
             {"--pairbench_only=sim.declared/sim/case:a"});
  EXPECT_EQ(pr.exit_code, 2);
  EXPECT_NE(pr.output.find("--pairbench_only"), std::string::npos) << pr.output;
  // A good plan: each benchmark's outputs, in the plan's order.
  const std::string a = t.path + "/a", c = t.path + "/c";
  pr = bench(R"({"benchmarks": [{"name": "sim.declared/sim/case:c", "iterations": 3, "out": ")" + c +
             R"(.json", "record": ")" + c + R"(.rec"}, {"name": "sim.declared/sim/case:a", "iterations": 2, "out": ")" +
             a + R"(.json", "record": ")" + a + R"(.rec"}]})");
  ASSERT_EQ(pr.exit_code, 0) << pr.output;
  EXPECT_EQ(read(c + ".rec")["iterations_recorded"], 3);
  EXPECT_EQ(read(a + ".rec")["iterations_recorded"], 2);
  EXPECT_LT(read(c + ".rec")["finished_s"].get<double>(), read(a + ".rec")["finished_s"].get<double>());
  EXPECT_EQ(read(a + ".json")["benchmarks"][0]["run_name"], "sim.declared/sim/case:a/iterations:2/manual_time");
}

}  // namespace
}  // namespace pairbench::harness
