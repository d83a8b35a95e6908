// A bench binary whose processes take a while and hold a scratch directory (kernels/common/
// scratch.h's TempDir, under $TMPDIR) while they run, so tests can interrupt a run in the middle of
// a process, kill a process at its time limit, and check that no temporary is left behind.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "bench/common/exec.h"
#include "bench/common/experiment.h"
#include "kernels/common/scratch.h"

namespace pairbench::bench {
namespace {

// Set-up: a scratch directory with a file in it, then `setup_ms` of sleep (a signal to the
// harness finds most processes here, directory in place); each timed iteration sleeps 1 ms.
// PAIRBENCH_SLOW_HOLD=PATH: the set-up first waits, directory in place, until PATH exists (at most
// 60 s), so that a test can act while a process is provably running (issue 44), not within a time.
void sleepy_arm(benchmark::State& state, const Point& p) {
  const kernels::TempDir scratch("pairbench-slow-bench");
  std::ofstream(scratch.path() / "data") << "scratch";
  if (const char* hold = std::getenv("PAIRBENCH_SLOW_HOLD"); hold && *hold) {
    for (int i = 0; i < 12000 && !std::filesystem::exists(hold); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(p.get_int("setup_ms")));
  mark_verified(state);
  exec(state, Work{.ops = 1}, [] { std::this_thread::sleep_for(std::chrono::milliseconds(1)); });
}

// Makes its scratch directory, then never finishes: only the harness's SIGKILL at the time limit
// ends it, and the directory's destructor never runs.
void hang_arm(benchmark::State&, const Point&) {
  const kernels::TempDir scratch("pairbench-slow-bench");
  std::ofstream(scratch.path() / "data") << "scratch";
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

}  // namespace

PAIRBENCH_EXPERIMENT(slow_scratch) {
  return Experiment{
      .name = "slow.scratch",
      .claim = "",
      .question = "Does the harness leave nothing behind when a run is interrupted or a process is killed?",
      .arms = {{.name = "sleepy", .run = sleepy_arm}, {.name = "hang", .run = hang_arm}},
      .grid = {{.name = "setup_ms", .quick = {"300"}}},
      .timing = Timing::kWallClock,
      .metric = {.name = "ns_per_op", .unit = "ns", .better = Better::kLower},
  };
}

}  // namespace pairbench::bench
