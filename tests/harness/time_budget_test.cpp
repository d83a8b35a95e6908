// The profile's time budget (docs/gate.md, "Time budget"): the planning rule's known answers, the
// process walls the calibration cache learns, and a nightly-profile run on the known-work bench
// that plans fewer processes for a benchmark known to be slow and says so in its run file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <vector>
#include <nlohmann/json.hpp>

#include "harness/cli/run_record.h"
#include "harness/exec/budget.h"
#include "harness/exec/calibration.h"
#include "harness/exec/jobs.h"
#include "harness/exec/process.h"

namespace pairbench::harness {
namespace {
namespace fs = std::filesystem;

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/pairbench-budget-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

nlohmann::json read(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

TEST(TimeBudget, PlannedProcessesKnownAnswers) {
  // clamp(floor(budget / wall), minimum, maximum)
  EXPECT_EQ(budgeted_processes(/*budget_s=*/14, /*process_wall_s=*/3.5, 4, 9), 4);
  EXPECT_EQ(budgeted_processes(14, 2.0, 4, 9), 7);
  EXPECT_EQ(budgeted_processes(14, 1.5, 4, 9), 9);  // floor(9.33)
  EXPECT_EQ(budgeted_processes(14, 0.7, 4, 9), 9);  // 20 fit: the profile's count
  EXPECT_EQ(budgeted_processes(14, 35, 4, 9), 4);   // over the budget even so: never below the minimum
  EXPECT_EQ(budgeted_processes(14, 0, 4, 9), 9);    // wall not known (first run): the profile's count
  EXPECT_EQ(budgeted_processes(0, 3.5, 4, 9), 9);   // no budget
  EXPECT_EQ(budgeted_processes(14, 3.5, 4, 2), 2);  // a minimum above the count is the count
  EXPECT_EQ(budgeted_processes(40, 21, 2, 3), 2);   // instruction processes: a 21 s simulation
  EXPECT_EQ(budgeted_processes(40, 13, 2, 3), 3);
  // The nightly's budgets: 2 s of time processes, 4 s of counting processes.
  EXPECT_EQ(budgeted_processes(kNightlyProcessBudgetS, 0.3, 4, 9), 6);
  EXPECT_EQ(budgeted_processes(kNightlyProcessBudgetS, 0.2, 4, 9), 9);
  EXPECT_EQ(budgeted_processes(kNightlyInstructionBudgetS, 2.0, 2, 3), 2);
}

// The whole-run budget: the instruction budget lowered first, then the process budget, each to the
// largest value that fits (within the search's 2 %), never below the minimum; a budget of 0 stays.
TEST(TimeBudget, AWallBudgetLowersTheCountingBudgetFirstThenTheProcessBudget) {
  int calls = 0;
  // A run of 600 s at the minimums, + 60 s per second of counting budget, + 30 s per second of
  // process budget (budgets above 4 and 2 change nothing; 0 is no budget, every process).
  const auto projected = [&](double p, double i) {
    ++calls;
    return 600 + 60 * (i == 0 ? 4 : std::min(i, 4.0)) + 30 * (p == 0 ? 2 : std::min(p, 2.0));
  };
  WallFit fit = fit_wall_budget(2, 4, 900, projected);  // fits as it is
  EXPECT_FALSE(fit.lowered);
  EXPECT_TRUE(fit.fits);
  EXPECT_EQ(fit.process_budget_s, 2);
  EXPECT_EQ(fit.instruction_budget_s, 4);
  EXPECT_DOUBLE_EQ(fit.projected_s, 900);

  fit = fit_wall_budget(2, 4, 840, projected);  // counting to 3 s suffices
  EXPECT_TRUE(fit.lowered && fit.fits);
  EXPECT_EQ(fit.process_budget_s, 2);
  EXPECT_LE(fit.instruction_budget_s, 3.0);
  EXPECT_GE(fit.instruction_budget_s, 3.0 * 0.97);
  EXPECT_LE(fit.projected_s, 840);

  fit = fit_wall_budget(2, 4, 620, projected);  // counting at its minimum, time processes to 0.67 s
  EXPECT_TRUE(fit.fits);
  EXPECT_EQ(fit.instruction_budget_s, kSmallestBudgetS);
  EXPECT_LE(fit.process_budget_s, 20.0 / 30);
  EXPECT_GE(fit.process_budget_s, 20.0 / 30 * 0.97);

  calls = 0;
  fit = fit_wall_budget(2, 4, 500, projected);  // even the minimums do not fit: said, not hidden
  EXPECT_FALSE(fit.fits);
  EXPECT_TRUE(fit.lowered);
  EXPECT_EQ(fit.process_budget_s, kSmallestBudgetS);
  EXPECT_EQ(fit.instruction_budget_s, kSmallestBudgetS);
  EXPECT_LT(calls, 10);  // no search where the minimum does not fit

  fit = fit_wall_budget(0, 4, 640, projected);  // no process budget (a count was given): stays none
  EXPECT_EQ(fit.process_budget_s, 0);
  EXPECT_EQ(fit.instruction_budget_s, kSmallestBudgetS);
  EXPECT_FALSE(fit.fits);
  EXPECT_EQ(fit_wall_budget(2, 4, 0, projected).instruction_budget_s, 4);  // 0 = no wall budget
}

TEST(TimeBudget, ProjectedWallIsOverheadPlusLoop) {
  ProcessWalls w;
  EXPECT_EQ(projected_process_wall_s(nullptr, nullptr, 100), 0);  // never ran here
  EXPECT_EQ(projected_process_wall_s(&w, nullptr, 100), 0);
  w.overhead_s = {1.0, 3.0, 2.0};  // the median of the runs: 2 s
  w.loop_s_per_iteration = {1e-3};
  EXPECT_DOUBLE_EQ(projected_process_wall_s(&w, nullptr, 100), 2.1);
  w.loop_s_per_iteration.clear();  // no loop observed: the calibration's wall per iteration
  const Calibration c{1e-4, 2e-3, ""};
  EXPECT_DOUBLE_EQ(projected_process_wall_s(&w, &c, 100), 2.2);
  EXPECT_EQ(projected_instruction_wall_s(&w, "callgrind"), 0);
  w.instruction_process_s["callgrind"] = {20, 22};
  EXPECT_DOUBLE_EQ(projected_instruction_wall_s(&w, "callgrind"), 21);
  EXPECT_EQ(projected_instruction_wall_s(&w, "perf"), 0);
  EXPECT_DOUBLE_EQ(running_median({5, 1, 3, 100}), 4);
}

TEST(TimeBudget, TheCacheKeepsTheLastRunsWalls) {
  TempDir dir;
  const std::string path = dir.path + "/cache.json";
  {
    CalibrationCache cache(path);
    cache.put("x", {2e-3, 3e-3, ""});
    for (int run = 1; run <= 7; ++run) cache.record_time_walls("x", run, 1e-3 * run);
    cache.record_instruction_wall("x", "callgrind", 30);
    cache.record_time_walls("uncalibrated", 0.5, 0);  // walls need no calibration
    EXPECT_EQ(cache.save(), "");
  }
  CalibrationCache again(path);
  ASSERT_NE(again.walls("x"), nullptr);
  EXPECT_EQ(again.walls("x")->overhead_s, (std::vector<double>{3, 4, 5, 6, 7}));  // the last kWallRuns runs
  EXPECT_EQ(again.walls("x")->loop_s_per_iteration.size(), kWallRuns);
  EXPECT_EQ(again.walls("x")->instruction_process_s.at("callgrind"), std::vector<double>{30});
  ASSERT_NE(again.walls("uncalibrated"), nullptr);
  EXPECT_EQ(again.walls("absent"), nullptr);
  again.put("x", {1e-3, 1e-3, ""});  // recalibrated: the walls stay (the model is per iteration)
  EXPECT_NE(again.walls("x"), nullptr);
  // A cache written before walls were learnt still reads, with none.
  std::ofstream(path) << R"({"schema_version": 1, "benchmarks": {"y": {"measured_s_per_iteration": 1e-3,
                            "wall_s_per_iteration": 1e-3, "calibrated_at": ""}}})";
  CalibrationCache old(path);
  EXPECT_EQ(old.load_problem(), "");
  EXPECT_NE(old.find("y"), nullptr);
  EXPECT_EQ(old.walls("y"), nullptr);
}

// A run's processes teach the cache each benchmark's mean overhead, not its median: a shared
// process's start lands on whichever benchmark runs first in it (their order is drawn), and a
// budget needs what the processes take together. Four samples of x, one of them first in its
// process (0.95 s of start and set-up), three after another benchmark (0.05 s): 0.275 s, where the
// median said 0.05 s, a fifth of it.
TEST(TimeBudget, AProcessStartLandsInTheMeanOverheadOfWhicheverRanFirst) {
  CalibrationCache cache;
  std::vector<Sample> samples;
  for (const double wall : {1.0, 0.1, 0.1, 0.1}) {
    Sample s;
    s.benchmark = "x";
    s.verification = Verification::passed;
    s.has_value = true;
    s.process_wall_s = wall;
    s.iterations = 10;
    s.loop_wall_s = 0.05;
    samples.push_back(s);
  }
  detail::learn_walls(cache, samples, {Side{}}, "");
  ASSERT_NE(cache.walls("x"), nullptr);
  EXPECT_DOUBLE_EQ(cache.walls("x")->overhead_s.back(), 0.275);
  EXPECT_DOUBLE_EQ(cache.walls("x")->loop_s_per_iteration.back(), 0.005);
}

// The nightly profile on the known-work bench, with a cache that knows one benchmark's processes
// to take 10 s: it gets the minimum of 4 processes, spread over the 9 rounds, and the run file
// says why; the other, unknown, gets the profile's 9. The run teaches the cache both walls;
// --plan then projects from them without running; --repetitions forces its count, no budget.
// ab's regime check (docs/gate.md, "Duet pairing"): a side's time per iteration over 1.5x its time
// in `run` is listed, unless its own runs here already spread that far above their median (then
// the ratio is what `run` does from run to run, not a regime); both ways, known answers.
TEST(TimeBudget, TheRegimeCheckListsRatiosBeyondTheLimitAndTheBenchmarksOwnSpread) {
  RunOutcome outcome;
  auto ratio = [](const std::string& name, double observed, double spread) {
    CalibrationRatio c;
    c.benchmark = name;
    c.observed_s_per_iteration = observed;
    c.calibrated_s_per_iteration = 1.0;
    c.against_run = true;
    c.run_spread = spread;
    return c;
  };
  outcome.calibration_ratios = {ratio("steady", 3.0, 0), ratio("steady_known", 3.0, 1.2), ratio("bimodal", 3.0, 13.0),
                                ratio("bimodal_far", 20.0, 13.0), ratio("fine", 1.4, 0)};
  const RunRecord::CalibrationCheck check = calibration_check(outcome, 0, 1.5);
  std::vector<std::string> over;
  for (const auto& c : check.over) over.push_back(c.name);
  EXPECT_EQ(over, (std::vector<std::string>{"bimodal_far", "steady", "steady_known"}));
  ASSERT_TRUE(check.max.has_value());
  EXPECT_EQ(check.max->name, "bimodal_far");
  EXPECT_DOUBLE_EQ(check.max->run_spread, 13.0);
}

// The spread the check uses comes from the cache's kept runs: their largest over their median,
// known only from 3 runs on.
TEST(TimeBudget, TheRunSpreadIsTheLargestKeptRunOverTheirMedian) {
  TempDir dir;
  CalibrationCache cache(dir.path + "/cache.json");
  cache.record_run_per_iteration("b", 1.0);
  cache.record_run_per_iteration("b", 4.0);
  ASSERT_NE(cache.walls("b"), nullptr);
  EXPECT_EQ(cache.walls("b")->run_s_per_iteration.size(), 2u);
  EXPECT_EQ(run_spread(cache.walls("b")->run_s_per_iteration), 0.0);  // two runs: not known
  cache.record_run_per_iteration("b", 2.0);
  EXPECT_DOUBLE_EQ(run_spread(cache.walls("b")->run_s_per_iteration), 2.0);  // 4 over the median 2
  EXPECT_EQ(run_spread({}), 0.0);
}

TEST(TimeBudget, ANightlyRunPlansFewerProcessesForASlowBenchmarkAndSaysWhy) {
  TempDir dir;
  const std::string cache = dir.path + "/cal.json", slow = "timing.work/steps/work:1000",
                    other = "timing.work/steps/work:100000";
  std::ofstream(cache) << nlohmann::json{{"schema_version", 1},
                                         {"benchmarks", nlohmann::json::object()},
                                         {"process_walls",
                                          {{slow, {{"overhead_s", {10.0}}, {"loop_s_per_iteration", {0.0}}}}}}}
                              .dump();
  const auto run = [&](const std::string& out, std::vector<std::string> extra) {
    std::vector<std::string> argv = {PAIRBENCH_EXE,
                                     "run",
                                     "--bench-dir",
                                     TIMING_BENCH_DIR,
                                     "--profile",
                                     "nightly",
                                     "--experiments",
                                     "timing.work",
                                     "--instruction-processes",
                                     "0",
                                     "--no-history",
                                     "--calibration",
                                     cache,
                                     "--seed",
                                     "24"};
    if (!out.empty()) argv.insert(argv.end(), {"--out", out});
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_process(argv, {}, std::chrono::seconds(600));
  };
  const ProcessResult first = run(dir.path + "/r1.json", {});
  ASSERT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("1 of 2 benchmarks planned fewer processes"), std::string::npos) << first.output;
  const auto doc = read(dir.path + "/r1.json");
  const auto& budget = doc["pairbench"]["sampling"]["process_budget"];
  ASSERT_TRUE(budget.is_object()) << doc["pairbench"]["sampling"].dump();
  EXPECT_EQ(budget["budget_s"], kNightlyProcessBudgetS);
  EXPECT_EQ(budget["min_processes"], 4);
  EXPECT_EQ(budget["benchmarks_cut"], 1);
  EXPECT_EQ(budget["unknown_wall"], 1);
  std::map<std::string, nlohmann::json> planned;
  for (const auto& b : budget["benchmarks"]) planned[b["name"]] = b;
  ASSERT_EQ(planned.size(), 2u);
  EXPECT_EQ(planned[slow]["processes"], 4);
  EXPECT_EQ(planned[slow]["profile_processes"], 9);
  EXPECT_EQ(planned[slow]["reason"].get<std::string>().rfind("4 of 9: 10 s per process, budget 2 s (the minimum)", 0),
            0u)
      << planned[slow];
  EXPECT_EQ(planned[other]["processes"], 9);
  EXPECT_TRUE(planned[other]["process_wall_s"].is_null());
  EXPECT_EQ(planned[other]["reason"], "9 of 9: its process wall is not known here yet");
  std::map<std::string, std::vector<int>> repetitions;
  for (const auto& b : doc["benchmarks"]) {
    repetitions[b["name"]].push_back(b["repetition_index"].get<int>());
    EXPECT_EQ(b["repetitions"], b["name"] == slow ? 4 : 9) << b.dump();
  }
  EXPECT_EQ(repetitions[slow], (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(repetitions[other].size(), 9u);
  // Spread over the rounds: the slow benchmark's processes do not all come first.
  std::map<std::string, int> last_sequence;
  for (const auto& b : doc["benchmarks"]) {
    last_sequence[b["name"]] = std::max(last_sequence[b["name"]], b["sequence"].get<int>());
  }
  EXPECT_GE(last_sequence[slow], last_sequence[other] - 1) << doc["benchmarks"].dump();  // both in the last round

  // Learnt: one more run for the slow benchmark, the first for the other.
  const auto walls = read(cache)["process_walls"];
  EXPECT_EQ(walls[slow]["overhead_s"].size(), 2u) << walls.dump();
  EXPECT_EQ(walls[other]["overhead_s"].size(), 1u) << walls.dump();
  // And "its time in run", the timed region per iteration, what ab's regime check compares with.
  ASSERT_EQ(walls[other]["run_s_per_iteration"].size(), 1u) << walls.dump();
  EXPECT_GT(walls[other]["run_s_per_iteration"][0].get<double>(), 0) << walls.dump();

  const ProcessResult plan = run("", {"--plan"});
  ASSERT_EQ(plan.exit_code, 0) << plan.output;
  EXPECT_NE(plan.output.find(slow + ": 4 of 9:"), std::string::npos) << plan.output;
  EXPECT_NE(plan.output.find("1 of 2 benchmarks planned fewer processes"), std::string::npos) << plan.output;
  EXPECT_EQ(plan.output.find("without a known process wall"), std::string::npos) << plan.output;
  // The nightly's whole-run budget: a roomy one changes nothing; one below what even the minimums
  // project lowers every benchmark to its minimum and says that the run is over it even so.
  const ProcessResult roomy = run("", {"--plan", "--wall-budget", "86400"});
  ASSERT_EQ(roomy.exit_code, 0) << roomy.output;
  EXPECT_NE(roomy.output.find("wall budget 86400 s: the per-benchmark budgets fit"), std::string::npos) << roomy.output;
  const ProcessResult tight = run("", {"--plan", "--wall-budget", "1"});
  ASSERT_EQ(tight.exit_code, 0) << tight.output;
  EXPECT_NE(tight.output.find("wall budget 1 s: per-benchmark budgets lowered from 2 s"), std::string::npos)
      << tight.output;
  EXPECT_NE(tight.output.find("over it even so"), std::string::npos) << tight.output;
  EXPECT_NE(tight.output.find("2 of 2 benchmarks planned fewer processes"), std::string::npos) << tight.output;

  const ProcessResult forced = run(dir.path + "/r2.json", {"--repetitions", "3"});
  ASSERT_EQ(forced.exit_code, 0) << forced.output;
  const auto doc2 = read(dir.path + "/r2.json");
  EXPECT_FALSE(doc2["pairbench"]["sampling"].contains("process_budget"));
  std::map<std::string, int> count;
  for (const auto& b : doc2["benchmarks"]) ++count[b["name"]];
  EXPECT_EQ(count[slow], 3);
  EXPECT_EQ(count[other], 3);
}

// Instructions per iteration follow the code, not the size: under the nightly's counting budget a
// grid point whose one callgrind process costs more than the whole budget (10 s here, known from
// the cache) is not counted when a cheaper point of its arm is, and the plan, the run file and a
// gate against a run that counted it all say where its code is counted. The cheapest point of a
// family is counted whatever it costs.
TEST(TimeBudget, ACostlyCountingPointIsCoveredByTheCheaperPointOfItsArm) {
  if (std::system("command -v valgrind >/dev/null 2>&1") != 0) GTEST_SKIP() << "valgrind (callgrind) not installed";
  TempDir dir;
  const std::string cache = dir.path + "/cal.json", costly = "timing.work/steps/work:100000",
                    cheap = "timing.work/steps/work:1000";
  const auto walls = [](double counting_s) {
    return nlohmann::json{{"overhead_s", {0.01}},
                          {"loop_s_per_iteration", {0.0}},
                          {"instruction_process_s", {{"callgrind", {counting_s}}}}};
  };
  std::ofstream(cache) << nlohmann::json{{"schema_version", 1},
                                         {"benchmarks", nlohmann::json::object()},
                                         {"process_walls", {{costly, walls(10.0)}, {cheap, walls(5.0)}}}}
                              .dump();
  const auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv = {PAIRBENCH_EXE,  "run",           "--bench-dir", TIMING_BENCH_DIR, "--profile",
                                     "nightly",      "--experiments", "timing.work", "--instructions", "callgrind",
                                     "--no-history", "--calibration", cache,         "--seed",         "25"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return run_process(argv, {}, std::chrono::seconds(600));
  };
  const ProcessResult plan = run({"--plan"});
  ASSERT_EQ(plan.exit_code, 0) << plan.output;
  EXPECT_NE(
      plan.output.find("; instructions 0 of 3: 10 s per callgrind process, more than the whole budget of 4 s; its "
                       "code is counted at " +
                       cheap + " (5 s per process)"),
      std::string::npos)
      << plan.output;
  // The cheapest point is counted although it too costs more than the budget: at the minimum.
  EXPECT_NE(plan.output.find(cheap + ": 9 of 9: its process wall is not known here yet; instructions 2 of 3: 5 s"),
            std::string::npos)
      << plan.output;

  const std::string counted_all = dir.path + "/all.json", covered = dir.path + "/covered.json";
  const ProcessResult all = run({"--instruction-budget", "0", "--out", counted_all});
  ASSERT_EQ(all.exit_code, 0) << all.output;
  // The cache learnt the real walls (well under a second each): put the costly one back first.
  const nlohmann::json calibrated = read(cache)["benchmarks"];
  std::ofstream(cache) << nlohmann::json{{"schema_version", 1},
                                         {"benchmarks", calibrated},
                                         {"process_walls", {{costly, walls(10.0)}, {cheap, walls(5.0)}}}}
                              .dump();
  const ProcessResult cut = run({"--out", covered});
  ASSERT_EQ(cut.exit_code, 0) << cut.output;
  const auto doc = read(covered);
  std::map<std::string, int> counts;
  for (const auto& c : doc["pairbench"]["instructions"]) ++counts[c["name"]];
  EXPECT_EQ(counts[costly], 0) << doc["pairbench"]["instructions"].dump();
  EXPECT_EQ(counts[cheap], 2);
  bool recorded = false;
  for (const auto& n : doc["pairbench"]["not_run"]) {
    if (n["name"] == costly && n.value("instrument", "") == "instructions") {
      recorded = true;
      EXPECT_EQ(n["verification"], "not_supported");
      EXPECT_NE(n["reason"].get<std::string>().find("its code is counted at " + cheap), std::string::npos) << n;
    }
  }
  EXPECT_TRUE(recorded) << doc["pairbench"]["not_run"].dump();

  // Gated against the run that counted it: the row is missing, says why, and no instruction row
  // fails (callgrind's counts are exact). The time rows are not looked at: they are two real runs
  // under ctest's load, whose verdict says nothing about this (issue 37).
  const std::string gate_json = dir.path + "/gate.json";
  const ProcessResult gate = run_process({PAIRBENCH_EXE, "gate", "--baseline", counted_all, "--current", covered,
                                          "--db", "none", "--undecided", "pass", "--json", gate_json},
                                         {}, std::chrono::seconds(120));
  EXPECT_NE(gate.output.find("its code is counted at " + cheap), std::string::npos) << gate.output;
  ASSERT_TRUE(gate.exit_code == 0 || gate.exit_code == 1) << gate.output;
  int instruction_rows = 0;
  const nlohmann::json rows = read(gate_json)["benchmarks"];
  for (const auto& row : rows) {
    if (row.value("instrument", "") != "instructions") continue;
    ++instruction_rows;
    EXPECT_NE(row["verdict"], "regression") << row.dump();
  }
  EXPECT_GT(instruction_rows, 0) << gate.output;
}

}  // namespace
}  // namespace pairbench::harness
