// A bench binary that misbehaves on purpose, so tests can check that the harness survives a
// crashing, hanging or wrong arm and still writes every other arm's results.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include <unistd.h>

#include "bench/common/exec.h"
#include "bench/common/experiment.h"

namespace pairbench::bench {
namespace {

void ok_arm(benchmark::State& state, const Point&) {
  mark_verified(state);
  exec(state, Work{.ops = 1}, [&] { benchmark::DoNotOptimize(state.iterations()); });
}

// The first process of this point (of all processes sharing PAIRBENCH_TEST_STALL_DIR) is preempted
// for 300 ms in its first iteration, as a loaded machine does: the calibration process's ramp then
// stops after one iteration that reads as 300 ms. Every later process runs at full speed.
void stall_once_arm(benchmark::State& state, const Point& p) {
  const char* dir = std::getenv("PAIRBENCH_TEST_STALL_DIR");
  bool stall = false;
  if (dir) {
    const std::string marker = std::string(dir) + "/stalled-size-" + p.get("size");
    stall = !std::filesystem::exists(marker);
    if (stall) std::ofstream(marker) << "stalled\n";
  }
  mark_verified(state);
  exec(state, Work{.ops = 1}, [&] {
    if (stall) {
      stall = false;
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
    benchmark::DoNotOptimize(state.iterations());
  });
}

// An arm whose check before timing runs only where the harness asks for it (check_due): each
// call appends "checked" or "elsewhere" to PAIRBENCH_TEST_CHECK_DIR/<arm>-<size>. With
// `wrong_after_first`, the first check passes and every later one fails: a fault the first
// process's inputs did not show, found by a drawn check.
void check_logging_arm(benchmark::State& state, const Point& p, const std::string& arm, bool wrong_after_first) {
  const char* dir = std::getenv("PAIRBENCH_TEST_CHECK_DIR");
  const std::string log = dir ? std::string(dir) + "/" + arm + "-" + p.get("size") : std::string();
  const std::string pid = std::to_string(getpid());
  if (!check_due()) {
    if (!log.empty()) std::ofstream(log, std::ios::app) << "elsewhere " << pid << "\n";
    mark_checked_elsewhere(state);
  } else {
    // Whether this is the first process to check it (in all its calls: a calibration ramp calls
    // the arm several times).
    static std::map<std::string, bool> first_process;
    const bool first = first_process.emplace(log, log.empty() || !std::filesystem::exists(log)).first->second;
    if (!log.empty()) std::ofstream(log, std::ios::app) << "checked " << pid << "\n";
    if (wrong_after_first && !first) return fail_verification(state, "wrong on this process's inputs");
    mark_verified(state);
  }
  exec(state, Work{.ops = 1}, [&] { benchmark::DoNotOptimize(state.iterations()); });
}

}  // namespace

PAIRBENCH_EXPERIMENT(faults) {
  return Experiment{
      .name = "faults.mixed",
      .claim = "",
      .question = "Does the harness survive arms that crash, hang or compute wrong answers?",
      .arms = {{.name = "ok", .run = ok_arm},
               {.name = "crash", .run = [](benchmark::State&, const Point&) { std::abort(); }},
               {.name = "hang",
                .run =
                    [](benchmark::State&, const Point&) {
                      for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
                    }},
               {.name = "wrong", .run = [](benchmark::State& s, const Point&) { fail_verification(s, "2 + 2 != 5"); }},
               {.name = "absent",
                .run = ok_arm,
                .unavailable = [](const Point&) { return std::string("needs a unicorn"); }},
               {.name = "env_echo",
                .run =
                    [](benchmark::State& s, const Point& p) {
                      // Environment arm: only verified when the harness set the variable it declares.
                      const char* v = std::getenv("PAIRBENCH_TEST_ENV");
                      if (!v || std::string(v) != "on") return fail_verification(s, "PAIRBENCH_TEST_ENV not set");
                      ok_arm(s, p);
                    },
                .env = {{"PAIRBENCH_TEST_ENV", "on"}}},
               {.name = "stall_once", .run = stall_once_arm}},
      .grid = {{.name = "size", .quick = {"1", "2"}}},
      .timing = Timing::kWallClock,
      .metric = {.name = "ns_per_op", .unit = "ns", .better = Better::kLower},
  };
}

PAIRBENCH_EXPERIMENT(fault_checks) {
  return Experiment{
      .name = "faults.checks",
      .claim = "",
      .question =
          "Is an arm checked in its first process and a drawn share of the rest, and refused whole when one check "
          "fails?",
      .arms = {{.name = "checked_ok",
                .run = [](benchmark::State& s, const Point& p) { check_logging_arm(s, p, "checked_ok", false); }},
               {.name = "wrong_on_recheck",
                .run = [](benchmark::State& s, const Point& p) { check_logging_arm(s, p, "wrong_on_recheck", true); }}},
      .grid = {{.name = "size", .quick = {"1"}}},
      .timing = Timing::kWallClock,
      .metric = {.name = "ns_per_op", .unit = "ns", .better = Better::kLower},
  };
}

}  // namespace pairbench::bench
