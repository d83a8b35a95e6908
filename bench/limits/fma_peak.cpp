// limits.fma_peak: this machine's FP32 FMA throughput, measured with a register-resident FMA loop
// pinned to one core and to every usable core, beside the paper figure cores x lanes x FMA units x
// 2 FLOP x clock (label and counters say how each factor was found). The yardstick for GEMM arms.
#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bench/common/experiment.h"
#include "bench/common/wall_timer.h"
#include "kernels/common/cpus.h"
#include "kernels/gemm/fma_loop.h"

namespace pairbench::bench {
namespace {

namespace eg = kernels::gemm;
constexpr std::int64_t kIterations = std::int64_t{1} << 22;  // per thread per round; <= 2^24 keeps the check exact
constexpr std::int64_t kCheckIterations = std::int64_t{1} << 16;

// One FMA block of `iterations` on each of `threads` pinned threads, released together by a
// barrier. Each worker stamps its own start and end: the round lasts from the first start to the
// last end. (Timing from the main thread instead overstated the rate: with every core busy, the
// unpinned main thread was often descheduled between the barrier and its clock read.)
struct Round {
  double flop = 0, seconds = 0;
  std::string error;  // a thread not pinned, an accumulator off its exact count
};
Round run_round(int threads, std::int64_t iterations) {
  using Clock = std::chrono::steady_clock;
  std::vector<double> done(static_cast<std::size_t>(threads), 0);
  std::vector<std::string> why(static_cast<std::size_t>(threads));
  std::vector<Clock::time_point> begin(static_cast<std::size_t>(threads)), end(static_cast<std::size_t>(threads));
  std::barrier start(threads);
  std::vector<std::thread> team;
  for (int t = 0; t < threads; ++t) {
    team.emplace_back([&, t] {
      const auto i = static_cast<std::size_t>(t);
      const kernels::ScopedCpuPin pin(t);
      if (!pin.pinned()) why[i] = "could not pin thread " + std::to_string(t);
      start.arrive_and_wait();
      begin[i] = Clock::now();
      float check[16];
      done[i] = eg::fma_block(iterations, check);
      end[i] = Clock::now();
      for (float v : check) {
        if (v != static_cast<float>(iterations)) why[i] = "an accumulator of thread " + std::to_string(t) + " is off";
      }
    });
  }
  for (std::thread& th : team) th.join();
  Round r;
  r.seconds = std::chrono::duration<double>(*std::max_element(end.begin(), end.end()) -
                                            *std::min_element(begin.begin(), begin.end()))
                  .count();
  for (int t = 0; t < threads; ++t) {
    r.flop += done[static_cast<std::size_t>(t)];
    if (r.error.empty()) r.error = why[static_cast<std::size_t>(t)];
  }
  return r;
}

void run(benchmark::State& state, const Point& p) {
  const int cpus = kernels::usable_cpus();
  const int threads = p.get("threads") == "all" ? cpus : static_cast<int>(p.get_int("threads"));
  if (threads > cpus) {
    state.SkipWithError(
        ("not_supported: " + std::to_string(threads) + " threads, " + std::to_string(cpus) + " usable CPUs").c_str());
    return;
  }
  // The check round is also the warm-up: the first wide FMAs can run at a lower clock for a while.
  if (const Round check = run_round(threads, kCheckIterations); !check.error.empty()) {
    return fail_verification(state, check.error);
  }
  mark_verified(state);

  // A ceiling: each process reports its fastest round (STREAM's convention for a machine limit;
  // on a shared VM a round only ever loses time to other tenants), and the mean beside it.
  // The round times itself (its threads start together), so this loop is its own, not exec's;
  // the gate self-test's injected work (timed_region.h) runs after it, inside the region, and its
  // time is added to the round's. The mean rate comes from set_rate_counters like every other.
  if (!timing_matches_declaration(state, Timing::kWallClock)) return;
  double flop = 0, seconds = 0, best = 0;
  for (auto _ : state) {
    region_begin();
    const Round r = run_round(threads, kIterations);
    double round_s = r.seconds;
    if (work_injection_active()) {
      const auto t0 = std::chrono::steady_clock::now();
      inject_work(r.seconds * 1e9);
      round_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    region_end();
    if (!r.error.empty()) return fail_verification(state, r.error);
    record_iteration(state, round_s);
    flop += r.flop;
    seconds += round_s;
    best = std::max(best, r.flop / round_s);
  }
  state.counters["flop_per_second"] = best;
  const double iterations = static_cast<double>(state.iterations());
  set_rate_counters(state, Work{.per_second = {{"mean_flop", iterations > 0 ? flop / iterations : 0}}}, seconds);

  // The paper figure. Clock: measured right after the loop with a dependent-add chain (what the
  // cores actually ran at); /proc/cpuinfo's "cpu MHz" is shown beside it, as on a VM it is the
  // nominal TSC rate, not the running clock. FMA units: a table by vendor and family (cpuid).
  const eg::FmaIsa isa = eg::fma_isa();
  const eg::FmaUnits units = eg::fma_units_per_core();
  const double clock_hz = eg::measure_clock_hz(/*seconds=*/0.02, /*tries=*/3);
  const double cpuinfo_hz = eg::cpuinfo_mhz() * 1e6;
  const double per_cycle = static_cast<double>(threads) * isa.lanes * units.units * 2.0;
  const double derived = per_cycle * clock_hz;
  const double measured = state.counters["flop_per_second"].value;
  state.counters["threads"] = threads;
  state.counters["fma_lanes"] = isa.lanes;
  state.counters["fma_units"] = units.units;
  state.counters["clock_hz"] = clock_hz;
  state.counters["cpuinfo_clock_hz"] = cpuinfo_hz;
  state.counters["derived_peak_flop_per_second"] = derived;
  state.counters["cpuinfo_peak_flop_per_second"] = per_cycle * cpuinfo_hz;
  char label[1024];
  std::snprintf(label, sizeof label,
                "derived peak %d cores x %d fp32 lanes (%s) x %d FMA units x 2 FLOP x %.2f GHz = %.1f GFLOP/s; "
                "measured %.1f GFLOP/s = %.0f %% of it. Clock measured by a dependent-add chain; /proc/cpuinfo "
                "'cpu MHz' says %.0f MHz (%.1f GFLOP/s by it), unreliable on a VM (nominal TSC rate). FMA units: %s",
                threads, isa.lanes, isa.name, units.units, clock_hz * 1e-9, derived * 1e-9, measured * 1e-9,
                derived > 0 ? 100.0 * measured / derived : 0.0, cpuinfo_hz * 1e-6, per_cycle * cpuinfo_hz * 1e-9,
                units.why.c_str());
  state.SetLabel(label);
}

}  // namespace

// Expect: one core reaches 90-100 % of lanes x units x 2 x clock (16 independent accumulators
// hide the FMA latency; nothing touches memory); all cores about cores x that on dedicated
// cores, less on a shared VM (steal time). On this EPYC (Zen 5, two 512-bit FMA pipes, ~3.5 GHz)
// that is ~225 GFLOP/s per core. OpenBLAS sgemm's % of this limit is the 80 % target.
PAIRBENCH_EXPERIMENT(fma_peak) {
  return Experiment{
      .name = "limits.fma_peak",
      .question = "How many FP32 FLOP per second can this machine's cores do with FMAs from registers?",
      .arms = {{.name = "fma_loop", .run = run}},
      .grid = {{.name = "threads", .quick = {"1", "all"}}},
      .timing = Timing::kWallClock,
      .metric = {.name = "flop_per_second",
                 .unit = "FLOP/s",
                 .better = Better::kHigher,
                 // the fastest round, not the mean: one sample per process
                 .time_relation = TimeRelation::kNone},
      .is_limit = true,
      // A team of `threads` FMA threads, each pinned to its own CPU; main waits for them.
      .threads = [](const Arm&, const Point& p) { return threads_from_axis(p, "threads"); },
  };
}

}  // namespace pairbench::bench
