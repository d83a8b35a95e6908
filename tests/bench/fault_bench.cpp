// A bench binary that misbehaves on purpose, so tests can check that the harness survives a
// crashing, hanging or wrong arm and still writes every other arm's results.
#include <chrono>
#include <cstdlib>
#include <thread>

#include "bench/common/exec.h"
#include "bench/common/experiment.h"

namespace pairbench::bench {
namespace {

void ok_arm(benchmark::State& state, const Point&) {
  mark_verified(state);
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
                .run = [](benchmark::State&, const Point&) {
                  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
                }},
               {.name = "wrong",
                .run = [](benchmark::State& s, const Point&) { fail_verification(s, "2 + 2 != 5"); }},
               {.name = "absent", .run = ok_arm, .unavailable = [](const Point&) { return std::string("needs a unicorn"); }},
               {.name = "env_echo",
                .run = [](benchmark::State& s, const Point& p) {
                  // Environment arm: only verified when the harness set the variable it declares.
                  const char* v = std::getenv("PAIRBENCH_TEST_ENV");
                  if (!v || std::string(v) != "on") return fail_verification(s, "PAIRBENCH_TEST_ENV not set");
                  ok_arm(s, p);
                },
                .env = {{"PAIRBENCH_TEST_ENV", "on"}}}},
      .grid = {{.name = "size", .quick = {"1", "2"}}},
      .timing = Timing::kWallClock,
      .metric = {.name = "ns_per_op", .unit = "ns", .better = Better::kLower},
  };
}

}  // namespace pairbench::bench
