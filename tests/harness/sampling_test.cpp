// How samples are made: fixed iterations and in-process batches (bench --pairbench_* flags and
// the timed-region record), the self-test's planted work, instruction counts (callgrind, where
// valgrind is installed), the iteration policy and its per-machine cache, and a whole
// `pairbench run` on a bench binary with known work.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <nlohmann/json.hpp>

#include "harness/exec/calibration.h"
#include "harness/exec/instructions.h"
#include "harness/exec/jobs.h"
#include "harness/exec/process.h"
#include "harness/exec/runner.h"
#include "kernels/common/cpus.h"

namespace pairbench::harness {
namespace {
namespace fs = std::filesystem;

const std::string kBench = std::string(TIMING_BENCH_DIR) + "/bench_timing";

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/pairbench-sampling-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
};

nlohmann::json read(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

ProcessResult bench(const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {}) {
  std::vector<std::string> argv = {kBench};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_process(argv, env, std::chrono::seconds(120));
}

TEST(TimedRegions, FixedIterationsSplitIntoBatches) {
  TempDir dir;
  const ProcessResult r = bench({"--pairbench_only=timing.work/steps/work:1000", "--pairbench_iterations=12",
                                 "--pairbench_batches=4", "--pairbench_record=" + dir.path + "/rec.json",
                                 "--benchmark_out=" + dir.path + "/out.json", "--benchmark_out_format=json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto rec = read(dir.path + "/rec.json");
  EXPECT_EQ(rec["max_iterations"], 12);
  EXPECT_EQ(rec["iterations_recorded"], 12);
  EXPECT_EQ(rec["batch_iterations"], nlohmann::json({3, 3, 3, 3}));
  double sum = 0;
  for (double s : rec["batch_seconds"]) {
    EXPECT_GT(s, 0);
    sum += s;
  }
  EXPECT_NEAR(sum, rec["measured_s"].get<double>(), 1e-12);
  const auto out = read(dir.path + "/out.json");
  EXPECT_EQ(out["benchmarks"][0]["iterations"], 12);  // exactly: no min-time ramp
  // Fewer iterations than batches: one batch per iteration.
  ASSERT_EQ(bench({"--pairbench_only=timing.work/steps/work:1000", "--pairbench_iterations=2", "--pairbench_batches=5",
                   "--pairbench_record=" + dir.path + "/rec2.json"})
                .exit_code,
            0);
  EXPECT_EQ(read(dir.path + "/rec2.json")["batch_iterations"], nlohmann::json({1, 1}));
}

TEST(TimedRegions, BadFlagValuesAreOneLineAndExitTwo) {
  for (const std::string flag : {"--pairbench_iterations=0", "--pairbench_iterations=12x", "--pairbench_batches=-1",
                                 "--pairbench_count_instructions=cycles"}) {
    SCOPED_TRACE(flag);
    const ProcessResult r = bench({"--pairbench_only=timing.work/steps/work:1000", flag});
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_NE(r.output.find(flag.substr(0, flag.find('='))), std::string::npos) << r.output;
  }
}

TEST(TimedRegions, PlantedLoopsAreExactWithTheirFractionCarried) {
  TempDir dir;
  const ProcessResult r = bench({"--pairbench_only=timing.work/steps/work:1000", "--pairbench_iterations=10",
                                 "--pairbench_record=" + dir.path + "/rec.json"},
                                {{"PAIRBENCH_INJECT_LOOPS", "2.5"}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto rec = read(dir.path + "/rec.json");
  EXPECT_EQ(rec["injection"]["loops_done"], 25);  // 2.5 per region over 10 regions
  // Without the variable nothing is planted and the record says nothing about it.
  ASSERT_EQ(bench({"--pairbench_only=timing.work/steps/work:1000", "--pairbench_iterations=10",
                   "--pairbench_record=" + dir.path + "/rec0.json"})
                .exit_code,
            0);
  EXPECT_FALSE(read(dir.path + "/rec0.json").contains("injection"));
}

TEST(TimedRegions, ProportionalPlantingRunsRealWork) {
  TempDir dir;
  const ProcessResult r = bench({"--pairbench_only=timing.work/steps/work:100000", "--pairbench_iterations=20",
                                 "--pairbench_record=" + dir.path + "/rec.json"},
                                {{"PAIRBENCH_INJECT_SLOWDOWN_PCT", "10"}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto rec = read(dir.path + "/rec.json");
  EXPECT_DOUBLE_EQ(rec["injection"]["slowdown_fraction"].get<double>(), 0.10);
  EXPECT_GT(rec["injection"]["loops_done"].get<double>(), 0);  // loops executed, not a clock spin
}

std::string valgrind_or_skip() {
  const InstructionCounterChoice c = choose_instruction_counter("callgrind");
  return c.name == "callgrind" ? c.tool : "";
}

// Instructions inside timed regions, counted by callgrind for `iterations` of `work` steps.
std::uint64_t callgrind_count(const std::string& valgrind, const std::string& dir, int work, int iterations,
                              const std::map<std::string, std::string>& env = {}) {
  const std::string out =
      dir + "/cg." + std::to_string(work) + "." + std::to_string(iterations) + "." + std::to_string(env.size());
  std::vector<std::string> argv = instruction_counter_prefix({"callgrind", valgrind, ""}, out);
  for (const std::string& a : {kBench, "--pairbench_only=timing.work/steps/work:" + std::to_string(work),
                               "--pairbench_iterations=" + std::to_string(iterations),
                               std::string("--pairbench_count_instructions=callgrind")}) {
    argv.push_back(a);
  }
  const ProcessResult r = run_process(argv, env, std::chrono::seconds(300));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto total = read_callgrind_total(out);
  EXPECT_TRUE(total.has_value());
  return total.value_or(0);
}

TEST(InstructionCounts, CallgrindCountsTheTimedRegionsExactly) {
  const std::string valgrind = valgrind_or_skip();
  if (valgrind.empty()) GTEST_SKIP() << "skipped: valgrind is not installed";
  TempDir dir;
  const std::uint64_t a = callgrind_count(valgrind, dir.path, 1000, 4);
  const std::uint64_t b = callgrind_count(valgrind, dir.path, 1000, 4);
  const std::uint64_t c = callgrind_count(valgrind, dir.path, 1000, 8);
  const std::uint64_t d = callgrind_count(valgrind, dir.path, 1000, 12);
  EXPECT_EQ(a, b);  // deterministic
  // Only the timed regions count, each the same: 4 more regions add the same instructions twice,
  // at least the 1000 xorshift steps (6 instructions each) a region runs.
  EXPECT_EQ(c - a, d - c);
  EXPECT_GE(static_cast<double>(c - a) / 4, 6000);
  // Planted loops: exactly kInjectedInstructionsPerLoop each, plus a few instructions of the
  // injection's own arithmetic per region (3 counted regions: the first is the warm-up).
  const std::uint64_t planted = callgrind_count(valgrind, dir.path, 1000, 4, {{"PAIRBENCH_INJECT_LOOPS", "10000"}});
  const double extra = static_cast<double>(planted - a);
  EXPECT_NEAR(extra, 3 * 10000 * kInjectedInstructionsPerLoop, 3 * 200.0) << extra;
}

TEST(InstructionCounts, CallgrindOutputParser) {
  TempDir dir;
  std::ofstream(dir.path + "/a") << "version: 1\nevents: Ir\nsummary: 123\nfl=x\n0 5\ntotals: 456\n";
  std::ofstream(dir.path + "/b") << "version: 1\nevents: Ir\n";
  std::ofstream(dir.path + "/c") << "summary: lots\n";
  EXPECT_EQ(read_callgrind_total(dir.path + "/a"), 456u);
  EXPECT_FALSE(read_callgrind_total(dir.path + "/b").has_value());
  EXPECT_FALSE(read_callgrind_total(dir.path + "/c").has_value());
  EXPECT_FALSE(read_callgrind_total(dir.path + "/absent").has_value());
}

TEST(InstructionCounts, ChoosingNoneOrAnAbsentCounterSaysWhy) {
  EXPECT_EQ(choose_instruction_counter("none").name, "");
  const InstructionCounterChoice detected = choose_instruction_counter("");
  EXPECT_TRUE(detected.name == "perf" || detected.name == "callgrind" || !detected.reason.empty());
  EXPECT_FALSE(detected.reason.empty());
}

TEST(Calibration, IterationPolicy) {
  const SamplingPlan quick{5, 0.004, 0.25};
  EXPECT_EQ(planned_iterations({1e-3, 1e-3, ""}, quick), 20);    // 5 batches x 4 ms at 1 ms each
  EXPECT_EQ(planned_iterations({0.1, 0.1, ""}, quick), 1);       // one long iteration: one batch
  EXPECT_EQ(planned_iterations({1e-6, 0.05, ""}, quick), 5);     // slow untimed part: the wall cap
  EXPECT_EQ(planned_iterations({1e-6, 10.0, ""}, quick), 1);     // never below one
  EXPECT_EQ(instruction_iterations({1e-4, 1e-4, ""}, 200), 21);  // ~2 ms natively, plus the warm-up
  EXPECT_EQ(instruction_iterations({1e-6, 1e-6, ""}, 50), 51);   // never more than the timed processes
  EXPECT_EQ(instruction_iterations({1.0, 1.0, ""}, 1), 2);       // a counted iteration after the warm-up
  EXPECT_TRUE(calibration_drifted({1e-3, 1e-3, ""}, 4e-3));
  EXPECT_FALSE(calibration_drifted({1e-3, 1e-3, ""}, 2e-3));
}

TEST(Calibration, CacheRoundTripsAndSurvivesABadFile) {
  TempDir dir;
  const std::string path = dir.path + "/sub/cache.json";
  {
    CalibrationCache cache(path);
    EXPECT_EQ(cache.find("x"), nullptr);
    cache.put("x", {2e-3, 3e-3, "2026-11-24T00:00:00Z"});
    EXPECT_EQ(cache.save(), "");
  }
  CalibrationCache again(path);
  ASSERT_NE(again.find("x"), nullptr);
  EXPECT_DOUBLE_EQ(again.find("x")->measured_s_per_iteration, 2e-3);
  std::ofstream(path) << "{\"schema_version\": 1, \"benchmarks\": [";
  CalibrationCache broken(path);
  EXPECT_EQ(broken.find("x"), nullptr);
  EXPECT_NE(broken.load_problem().find(path), std::string::npos);
}

TEST(Calibration, FailuresAreRememberedAndWildlyOffIsOrdersOfMagnitude) {
  TempDir dir;
  const std::string path = dir.path + "/cache.json";
  {
    CalibrationCache cache(path);
    cache.put("ok", {2e-3, 3e-3, ""});
    cache.put_failure("stuck", "the calibration process timed out after 60 s");
    EXPECT_EQ(cache.find("stuck"), nullptr);
    EXPECT_EQ(cache.save(), "");
  }
  CalibrationCache again(path);
  ASSERT_NE(again.failure("stuck"), nullptr);
  EXPECT_EQ(again.failure("stuck")->reason, "the calibration process timed out after 60 s");
  EXPECT_FALSE(again.failure("stuck")->at.empty());
  EXPECT_EQ(again.failure("ok"), nullptr);
  again.put("stuck", {1e-6, 1e-6, ""});  // calibrated at last: no longer a failure
  EXPECT_EQ(again.failure("stuck"), nullptr);
  again.forget("ok");
  EXPECT_EQ(again.find("ok"), nullptr);

  EXPECT_TRUE(wildly_off(8.05, 200e-9));
  EXPECT_TRUE(wildly_off(1e-9, 1.01e-7));
  EXPECT_FALSE(wildly_off(1e-9, 0.99e-7));
  EXPECT_FALSE(wildly_off(0, 1));  // nothing to compare
}

// A benchmark whose calibration process crashes is named and remembered, not calibrated again in
// every run; --recalibrate tries again.
TEST(Run, AnUncalibratableBenchmarkIsRememberedNotRetried) {
  TempDir dir;
  auto run = [&](const std::string& out, bool recalibrate) {
    std::vector<std::string> argv = {PAIRBENCH_EXE,
                                     "run",
                                     "--bench-dir",
                                     FAULT_BENCH_DIR,
                                     "--arms",
                                     "ok,crash",
                                     "--repetitions",
                                     "1",
                                     "--no-history",
                                     "--calibration",
                                     dir.path + "/cal.json",
                                     "--out",
                                     out,
                                     "--instruction-processes",
                                     "0"};
    if (recalibrate) argv.push_back("--recalibrate");
    return run_process(argv, {}, std::chrono::seconds(300));
  };
  const ProcessResult first = run(dir.path + "/r1.json", false);
  EXPECT_EQ(first.exit_code, 3) << first.output;  // the crashing arm's processes fail
  const auto cache = read(dir.path + "/cal.json");
  ASSERT_TRUE(cache.contains("uncalibratable")) << cache.dump();
  EXPECT_EQ(cache["uncalibratable"].size(), 2u) << cache.dump();  // crash at size 1 and 2
  EXPECT_EQ(cache["benchmarks"].size(), 2u) << cache.dump();      // ok at size 1 and 2
  const ProcessResult second = run(dir.path + "/r2.json", false);
  EXPECT_EQ(read(dir.path + "/r2.json")["pairbench"]["sampling"]["calibrated_in_this_run"], 0);
  EXPECT_EQ(second.output.find("pairbench: calibrated"), std::string::npos) << second.output;  // nothing tried
  std::size_t named = 0;
  for (std::size_t at = second.output.find("is not calibrated"); at != std::string::npos;
       at = second.output.find("is not calibrated", at + 1)) {
    ++named;
  }
  EXPECT_EQ(named, 2u) << second.output;  // each once
  const ProcessResult third = run(dir.path + "/r3.json", true);
  EXPECT_NE(third.output.find("calibrated 2 of 4 benchmarks"), std::string::npos) << third.output;
}

// A ramp of fewer iterations than the plan's batches runs again where it may hide a stall: its
// thread was off its CPU for part of them (a preemption, a stolen vCPU), or the bench did not say.
// One whose thread ran throughout is its work (a slow iteration): running it again would only pay
// its set-up again. Batches orders of magnitude apart are run again whatever the CPU time says.
TEST(Calibration, AFewIterationRampRunsAgainOnlyWhereItsThreadLeftItsCpu) {
  using detail::worth_another_ramp;
  const auto ramp = [](double recorded, std::vector<double> seconds, std::optional<double> cpu_share) {
    std::vector<double> iterations(seconds.size(), recorded / static_cast<double>(seconds.size()));
    double measured = 0;
    for (double x : seconds) measured += x;
    Sample s;
    s.has_value = true;
    s.gbench["pairbench_record"] = {{"iterations_recorded", recorded},
                                    {"measured_s", measured},
                                    {"loop_wall_s", measured},
                                    {"batch_seconds", seconds},
                                    {"batch_iterations", iterations}};
    if (cpu_share) {
      s.gbench["pairbench_record"]["early_iterations"] = recorded;
      s.gbench["pairbench_record"]["early_wall_s"] = measured;
      s.gbench["pairbench_record"]["early_cpu_s"] = *cpu_share * measured;
    }
    return s;
  };
  EXPECT_FALSE(worth_another_ramp(ramp(1, {0.3}, 0.97), 5));  // one slow iteration, on its CPU throughout
  EXPECT_FALSE(worth_another_ramp(ramp(2, {0.2, 0.2}, 0.95), 5));
  EXPECT_TRUE(worth_another_ramp(ramp(1, {0.3}, 0.02), 5));          // a 300 ms sleep or preemption
  EXPECT_TRUE(worth_another_ramp(ramp(1, {0.3}, 0.85), 5));          // off its CPU for 15 % of it
  EXPECT_TRUE(worth_another_ramp(ramp(1, {0.3}, std::nullopt), 5));  // an older bench: unknown
  EXPECT_FALSE(worth_another_ramp(ramp(100, {0.01, 0.01, 0.01, 0.01, 0.01}, std::nullopt), 5));  // batches show it
  EXPECT_TRUE(worth_another_ramp(ramp(100, {0.01, 0.01, 5.0, 0.01, 0.01}, 1.0), 5));             // orders apart
  // The CPU time must cover every iteration of the ramp.
  Sample partial = ramp(3, {0.3, 0.3, 0.3}, 1.0);
  partial.gbench["pairbench_record"]["early_iterations"] = 2;
  EXPECT_TRUE(worth_another_ramp(partial, 5));
  EXPECT_TRUE(ramp_may_hide_stall(0.3, 0.0));
  EXPECT_FALSE(ramp_may_hide_stall(0.3, kOnCpuShare * 0.3));
}

// A benchmark whose iteration declares other work than when it was calibrated (its definition
// changed) is calibrated again next run, and the walls learnt from the old iteration are dropped;
// the same work keeps both; a calibration that predates the record takes the run's work; only
// side 0 (the calibrated one) counts. The cache round-trips the work.
TEST(Calibration, AnIterationWhoseDeclaredWorkChangedIsCalibratedAgain) {
  TempDir dir;
  const std::string path = dir.path + "/cal.json";
  const std::string three = R"({"ops":3000.0})", one = R"({"ops":1000.0})";
  {
    CalibrationCache cache(path);
    cache.put("a", {0.1, 0.1, "t", one});
    cache.put("b", {0.1, 0.1, "t", one});
    cache.put("c", {0.1, 0.1, "t", ""});
    cache.put("d", {0.1, 0.1, "t", one});
    for (const char* name : {"a", "b", "c", "d"}) cache.record_time_walls(name, 0.05, 0.1);
    ASSERT_EQ(cache.save(), "");
  }
  CalibrationCache cache(path);
  ASSERT_NE(cache.find("a"), nullptr);
  EXPECT_EQ(cache.find("a")->work, one);
  const auto sample = [](const std::string& name, const std::string& work, int side) {
    Sample s;
    s.benchmark = name;
    s.side = side;
    s.has_value = true;
    s.instrument = Instrument::time;
    s.work_per_iteration = work;
    return s;
  };
  const std::vector<std::string> forgotten =
      detail::forget_changed_work(cache, {sample("a", three, 0), sample("b", one, 0), sample("c", three, 0),
                                          sample("d", three, 1), sample("d", one, 0), sample("e", three, 0)});
  EXPECT_EQ(forgotten, std::vector<std::string>{"a"});
  EXPECT_EQ(cache.find("a"), nullptr);
  EXPECT_EQ(cache.walls("a"), nullptr);
  ASSERT_NE(cache.find("b"), nullptr);
  EXPECT_NE(cache.walls("b"), nullptr);
  ASSERT_NE(cache.find("c"), nullptr);
  EXPECT_EQ(cache.find("c")->work, three);  // adopted
  ASSERT_NE(cache.find("d"), nullptr);      // its side 1 ran other work: not its calibration's side
}

// A calibration whose ramp stopped on one stalled iteration (a preemption on a loaded machine)
// is not kept: the ramp runs again and the fastest per iteration sizes the processes. Without
// the retry the cache holds 0.3 s per iteration and every process runs one iteration.
TEST(Run, ACalibrationRampStalledOnItsFirstIterationIsRunAgain) {
  TempDir dir;
  const ProcessResult r = run_process({PAIRBENCH_EXE, "run", "--bench-dir", FAULT_BENCH_DIR, "--arms", "stall_once",
                                       "--repetitions", "1", "--no-history", "--calibration", dir.path + "/cal.json",
                                       "--out", dir.path + "/run.json", "--instruction-processes", "0"},
                                      {{"PAIRBENCH_TEST_STALL_DIR", dir.path}}, std::chrono::seconds(300));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  int stalled = 0;
  for (const auto& e : fs::directory_iterator(dir.path))
    stalled += e.path().filename().string().starts_with("stalled-");
  EXPECT_EQ(stalled, 2) << "both grid points' first processes stalled";
  const auto cache = read(dir.path + "/cal.json");
  ASSERT_EQ(cache["benchmarks"].size(), 2u) << cache.dump();
  for (const auto& [name, c] : cache["benchmarks"].items()) {
    EXPECT_LT(c["measured_s_per_iteration"].get<double>(), 0.01) << name << ": the stalled ramp was kept";
  }
  // (The document held by name: a range-for over read(...)["benchmarks"] iterates a destroyed
  // temporary and checked nothing.)
  const nlohmann::json run = read(dir.path + "/run.json");
  ASSERT_FALSE(run["benchmarks"].empty());
  for (const auto& b : run["benchmarks"]) EXPECT_GT(b["iterations"].get<std::int64_t>(), 100) << b.dump();
}

// An arm's check before timing (bench experiment.h, check_due): done by the calibration process
// (or the run's first), then only in a drawn quarter of the processes; one failed check refuses the
// arm in every process of the run, those that relied on the others' checks included, and every
// process after it checks again. Each process of the test arms logs whether it checked.
TEST(Run, AnArmIsCheckedFirstAndInADrawnShareAndRefusedWholeWhenOneCheckFails) {
  TempDir dir;
  const ProcessResult r =
      run_process({PAIRBENCH_EXE, "run", "--bench-dir", FAULT_BENCH_DIR, "--experiments", "faults.checks",
                   "--repetitions", "12", "--seed", "7", "--no-history", "--calibration", dir.path + "/cal.json",
                   "--out", dir.path + "/run.json", "--instruction-processes", "0"},
                  {{"PAIRBENCH_TEST_CHECK_DIR", dir.path}}, std::chrono::seconds(300));
  EXPECT_EQ(r.exit_code, 3) << r.output;  // the wrong arm's processes
  // Each log line: "checked PID" or "elsewhere PID".
  const auto log = [&](const std::string& name) {
    std::vector<std::pair<std::string, std::string>> lines;
    std::ifstream in(dir.path + "/" + name);
    for (std::string what, pid; in >> what >> pid;) lines.emplace_back(what, pid);
    return lines;
  };
  const auto ok = log("checked_ok-1"), wrong = log("wrong_on_recheck-1");
  ASSERT_FALSE(ok.empty());
  ASSERT_FALSE(wrong.empty());
  EXPECT_EQ(ok.front().first, "checked");  // the calibration process's
  const auto count = [](auto from, auto to, const std::string& what) {
    return static_cast<int>(std::count_if(from, to, [&](const auto& l) { return l.first == what; }));
  };
  const int elsewhere = count(ok.begin(), ok.end(), "elsewhere");
  // Of 12 timed processes, most relied on the others' checks and a drawn few checked (seed 7).
  EXPECT_GE(elsewhere, 6);
  EXPECT_LE(elsewhere, 11);
  const nlohmann::json run = read(dir.path + "/run.json");
  int ok_rows = 0, ok_elsewhere_rows = 0;
  for (const auto& b : run["benchmarks"]) {
    EXPECT_NE(b["arm"], "wrong_on_recheck") << "a row of the arm a check found wrong: " << b.dump();
    if (b["arm"] != "checked_ok") continue;
    ++ok_rows;
    EXPECT_EQ(b["verification"], "passed");
    ok_elsewhere_rows += b.value("checked_in", "") == "another process";
  }
  EXPECT_EQ(ok_rows, 12);
  EXPECT_EQ(ok_elsewhere_rows, elsewhere);  // each row says whether its own process checked
  // The wrong arm: a drawn check in another process than the first failed, after processes that
  // relied on the first one; every process after it checked (and was refused), and the arm is
  // incorrect in the run, none of it kept.
  const std::string first_pid = wrong.front().second;
  const auto failed_at = std::find_if(wrong.begin(), wrong.end(),
                                      [&](const auto& l) { return l.first == "checked" && l.second != first_pid; });
  ASSERT_NE(failed_at, wrong.end()) << "no drawn check of the wrong arm: choose another seed";
  EXPECT_GT(count(wrong.begin(), failed_at, "elsewhere"), 0);
  EXPECT_EQ(count(failed_at, wrong.end(), "elsewhere"), 0);
  bool refused = false;
  for (const auto& n : run["pairbench"]["not_run"]) {
    if (n["arm"] == "wrong_on_recheck") refused = n["verification"] == "incorrect";
  }
  EXPECT_TRUE(refused) << run["pairbench"]["not_run"].dump();
}

TEST(Batches, FollowTheMetricsTimeRelation) {
  const nlohmann::json record = {
      {"iterations_recorded", 4}, {"measured_s", 4.0}, {"batch_iterations", {2, 2}}, {"batch_seconds", {1.0, 3.0}}};
  ExperimentEntry e;
  Sample s;
  s.has_value = true;
  s.metric_value = 10;  // over all iterations, mean 1 s each
  e.time_relation = "proportional";
  add_batches(s, record, e);
  EXPECT_EQ(s.batches, (std::vector<double>{5, 15}));  // 0.5 s and 1.5 s per iteration
  e.time_relation = "inverse";
  add_batches(s, record, e);
  EXPECT_EQ(s.batches, (std::vector<double>{20, 10.0 / 1.5}));
  e.time_relation = "none";
  add_batches(s, record, e);
  EXPECT_TRUE(s.batches.empty());
}

// A whole run on the known-work bench: fixed iterations from a calibration stored per machine and
// reused, in-process batches in the run file, and instruction counts where valgrind is installed.
TEST(Run, FixedIterationsCalibratedOnceAndReused) {
  TempDir dir;
  const bool counting = !valgrind_or_skip().empty();
  auto run = [&](const std::string& out) {
    return run_process({PAIRBENCH_EXE, "run", "--bench-dir", TIMING_BENCH_DIR, "--experiments", "timing.work",
                        "--repetitions", "3", "--no-history", "--calibration", dir.path + "/cal.json", "--out", out,
                        "--instruction-processes", counting ? "2" : "0"},
                       {}, std::chrono::seconds(600));
  };
  const ProcessResult first = run(dir.path + "/r1.json");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  const ProcessResult second = run(dir.path + "/r2.json");
  ASSERT_EQ(second.exit_code, 0) << second.output;
  const auto r1 = read(dir.path + "/r1.json"), r2 = read(dir.path + "/r2.json");
  EXPECT_EQ(r1["pairbench"]["sampling"]["calibrated_in_this_run"], 2);
  EXPECT_EQ(r2["pairbench"]["sampling"]["calibrated_in_this_run"], 0);
  std::map<std::string, std::set<std::int64_t>> iterations;
  for (const auto* doc : {&r1, &r2}) {
    for (const auto& b : (*doc)["benchmarks"]) {
      iterations[b["name"]].insert(b["iterations"].get<std::int64_t>());
      EXPECT_EQ(b["metric_batches"].size(), std::min<std::size_t>(5, b["iterations"].get<std::size_t>())) << b.dump();
    }
  }
  ASSERT_EQ(iterations.size(), 2u);
  for (const auto& [name, counts] : iterations) EXPECT_EQ(counts.size(), 1u) << name;  // the same work every run
  if (counting) {
    ASSERT_EQ(r1["pairbench"]["instructions"].size(), 4u);
    std::map<std::string, std::set<double>> counts;
    for (const auto& i : r1["pairbench"]["instructions"])
      counts[i["name"]].insert(i["instructions_per_iteration"].get<double>());
    for (const auto& [name, c] : counts) EXPECT_EQ(c.size(), 1u) << name;  // deterministic across processes
    // The gate on the two runs: every instruction row unchanged. (Its time rows are not checked:
    // two runs one after the other under ctest's load differ by 5 % and more, and a CI run once
    // called +4.6 % from 3 processes a side a regression; since a change within a row's resolution
    // is a suspect, such a row is undecided, so --undecided pass keeps the exit status off them.)
    const ProcessResult gate =
        run_process({PAIRBENCH_EXE, "compare", dir.path + "/r1.json", dir.path + "/r2.json", "--undecided", "pass"}, {},
                    std::chrono::seconds(60));
    EXPECT_TRUE(gate.exit_code == 0 || gate.exit_code == 1) << gate.output;
    std::istringstream lines(gate.output);
    int instruction_rows = 0;
    for (std::string line; std::getline(lines, line);) {
      if (line.find("[instructions]") == std::string::npos || line.find("timing.work") != 0) continue;
      ++instruction_rows;
      EXPECT_NE(line.find(" unchanged "), std::string::npos) << line;
    }
    EXPECT_EQ(instruction_rows, 2) << gate.output;
  }
}

// The listing carries each benchmark's declared threads (issue 23): 1 where nothing is declared.
TEST(Threads, TheListingCarriesEachBenchmarksThreads) {
  const ProcessResult r =
      run_process({kBench, "--pairbench_list"}, {}, std::chrono::seconds(60), -1, std::size_t{1} << 20);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::map<std::string, int> threads;
  const nlohmann::json listing = nlohmann::json::parse(r.output);
  for (const auto& e : listing["experiments"]) {
    for (const auto& b : e["benchmarks"]) threads[b["name"].get<std::string>()] = b["threads"].get<int>();
  }
  EXPECT_EQ(threads.at("timing.work/steps/work:1000"), 1);
  EXPECT_EQ(threads.at("timing.threads/steps/work:1000"), 2);
  const auto catalogue = load_catalogue({kBench}, "quick");
  for (const auto& e : catalogue) {
    for (const auto& b : e.benchmarks) EXPECT_EQ(b.threads, threads.at(b.name)) << b.name;
  }
}

// A duet of both sides of the known-work bench on a pool of CPUs: only the benchmarks whose two
// sides fit at once are paired, each side pinned to as many cores as it declares threads; the
// rest run one side at a time, unpinned, and are named with why (as are those `one_side_at_a_time`
// names, as ab's regime probe names them).
RunOutcome duet_on(const std::vector<int>& pool, const std::map<std::string, std::string>& one_side_at_a_time = {},
                   std::uint64_t seed = 23) {
  std::vector<ExperimentEntry> experiments = load_catalogue({kBench}, "quick");
  for (auto& e : experiments) {
    std::erase_if(e.benchmarks, [](const BenchmarkEntry& b) { return !b.name.ends_with("/work:1000"); });
  }
  RunOptions options;
  options.repetitions = 2;
  options.plan = {2, 0.0005, 0.25};
  options.pairing = "duet";
  options.duet_cpu_pool = pool;
  options.seed = seed;
  options.one_side_at_a_time = one_side_at_a_time;
  return run_sides({Side{"a", experiments, {}, {}, {}}, Side{"b", experiments, {}, {}, {}}}, options);
}

TEST(Threads, TwoThreadsOnTwoCpusAreNotPairedInDuet) {
  const std::vector<int> usable = kernels::usable_cpu_list();
  if (usable.size() < 2) GTEST_SKIP() << "skipped: a duet needs two usable CPUs, this machine has " << usable.size();
  const RunOutcome out = duet_on({usable[0], usable[1]});
  EXPECT_EQ(out.pairing, "duet");
  EXPECT_EQ(out.failed_processes, 0);
  ASSERT_EQ(out.sequential_in_duet.size(), 1u);
  EXPECT_EQ(out.sequential_in_duet[0].benchmark, "timing.threads/steps/work:1000");
  EXPECT_EQ(out.sequential_in_duet[0].threads, 2);
  EXPECT_EQ(out.sequential_in_duet[0].reason, "2 threads per side need 4 cores for both sides at once; 2 usable");
  std::map<std::string, int> processes;
  for (const Sample& s : out.samples) {
    ++processes[s.benchmark];
    if (s.benchmark.starts_with("timing.threads/")) {
      EXPECT_EQ(s.pair, -1);
      EXPECT_TRUE(s.cpus.empty());
      EXPECT_EQ(s.cpu, -1);
    } else {
      EXPECT_GE(s.pair, 0);
      ASSERT_EQ(s.cpus.size(), 1u);
      EXPECT_EQ(s.cpu, s.cpus[0]);
    }
  }
  EXPECT_EQ(processes["timing.threads/steps/work:1000"], 4);  // 2 per side, one at a time
  EXPECT_EQ(processes["timing.work/steps/work:1000"], 4);
  // Every benchmark with a calibration and time samples has its ratio, per side.
  EXPECT_EQ(out.calibration_ratios.size(), 4u);
}

// A benchmark that uses the CUDA device never runs both sides at once in duet (one GPU would
// time-slice between the two processes); the listing says which do.
TEST(Threads, ACudaBenchmarkRunsOneSideAtATimeInDuet) {
  const std::vector<int> usable = kernels::usable_cpu_list();
  if (usable.size() < 2) GTEST_SKIP() << "skipped: a duet needs two usable CPUs, this machine has " << usable.size();
  std::vector<ExperimentEntry> experiments = load_catalogue({kBench}, "quick");
  for (auto& e : experiments) {
    for (const auto& b : e.benchmarks) EXPECT_FALSE(b.cuda) << b.name;  // the known-work bench is CPU only
    std::erase_if(e.benchmarks, [](const BenchmarkEntry& b) { return b.name != "timing.work/steps/work:1000"; });
    for (auto& b : e.benchmarks) b.cuda = true;
  }
  std::erase_if(experiments, [](const ExperimentEntry& e) { return e.benchmarks.empty(); });
  RunOptions options;
  options.repetitions = 2;
  options.plan = {2, 0.0005, 0.25};
  options.pairing = "duet";
  options.duet_cpu_pool = {usable[0], usable[1]};
  options.seed = 29;
  const RunOutcome out = run_sides({Side{"a", experiments, {}, {}, {}}, Side{"b", experiments, {}, {}, {}}}, options);
  EXPECT_EQ(out.failed_processes, 0);
  ASSERT_EQ(out.sequential_in_duet.size(), 1u);
  EXPECT_EQ(out.sequential_in_duet[0].benchmark, "timing.work/steps/work:1000");
  EXPECT_EQ(out.sequential_in_duet[0].reason, "both sides would share the CUDA device");
  ASSERT_EQ(out.samples.size(), 4u);
  for (const Sample& s : out.samples) EXPECT_EQ(s.pair, -1) << s.benchmark;
}

// What ab's regime probe found (RunOptions::one_side_at_a_time) runs one side at a time, with its reason.
TEST(Threads, ABenchmarkTheProbeNamedRunsOneSideAtATime) {
  const std::vector<int> usable = kernels::usable_cpu_list();
  if (usable.size() < 2) GTEST_SKIP() << "skipped: a duet needs two usable CPUs, this machine has " << usable.size();
  const RunOutcome out =
      duet_on({usable[0], usable[1]}, {{"timing.work/steps/work:1000", "a duet probe ran it above 1.5x"}}, 31);
  EXPECT_EQ(out.failed_processes, 0);
  std::map<std::string, std::string> reasons;
  for (const auto& q : out.sequential_in_duet) reasons[q.benchmark] = q.reason;
  EXPECT_EQ(reasons["timing.work/steps/work:1000"], "a duet probe ran it above 1.5x");
  for (const Sample& s : out.samples) {
    if (s.benchmark == "timing.work/steps/work:1000") {
      EXPECT_EQ(s.pair, -1);
    }
  }
}

TEST(Threads, TwoThreadsOnFourCpusGetTwoCoresPerSide) {
  const std::vector<int> usable = kernels::usable_cpu_list();
  if (usable.size() < 4) GTEST_SKIP() << "skipped: needs four usable CPUs, this machine has " << usable.size();
  const RunOutcome out = duet_on({usable[0], usable[1], usable[2], usable[3]});
  EXPECT_TRUE(out.sequential_in_duet.empty());
  std::map<int, std::vector<std::vector<int>>> pairs;
  for (const Sample& s : out.samples) {
    ASSERT_GE(s.pair, 0) << s.benchmark;
    EXPECT_EQ(s.cpus.size(), s.benchmark.starts_with("timing.threads/") ? 2u : 1u) << s.benchmark;
    pairs[s.pair].push_back(s.cpus);
  }
  for (const auto& [pair, sides] : pairs) {
    ASSERT_EQ(sides.size(), 2u);
    for (int cpu : sides[0]) EXPECT_EQ(std::count(sides[1].begin(), sides[1].end(), cpu), 0) << "pair " << pair;
  }
}

}  // namespace
}  // namespace pairbench::harness
