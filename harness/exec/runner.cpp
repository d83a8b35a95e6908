// Scheduling and running bench processes: calibration, fixed-iteration time processes (alone or
// in duet pairs), instruction-counting processes; collecting their Google Benchmark JSON and
// timed-region records. SIGINT/SIGTERM stop it between processes (harness/exec/interrupt.h).
// The steps live in their own files (harness/exec/jobs.h); this is their order.
#include "harness/exec/runner.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <random>

#include "harness/exec/jobs.h"
#include "harness/exec/say.h"
#include "harness/exec/scratch.h"
#include "kernels/common/cpus.h"
#include "kernels/common/scratch.h"

namespace pairbench::harness {

using namespace detail;

RunOutcome run_experiments(const std::vector<ExperimentEntry>& experiments, const RunOptions& options) {
  return run_sides({Side{"", experiments, {}, {}, {}}}, options);
}

RunOutcome run_sides(const std::vector<Side>& sides, const RunOptions& options) {
  RunOutcome outcome;
  outcome.seed =
      options.seed ? options.seed : static_cast<std::uint64_t>(Clock::now().time_since_epoch().count()) ^ getpid();
  std::mt19937_64 rng(outcome.seed);
  const std::vector<Job> runnable = runnable_jobs(sides, outcome);

  // Under $TMPDIR (or /tmp); removed with everything in it on every way out of this function.
  remove_stale_run_scratch();  // left by a run that was killed or interrupted twice
  const kernels::TempDir run_tmp(run_scratch_prefix());
  Context ctx{sides, options, run_tmp.path().string(), {}};
  const bool any_instructions =
      options.instruction_processes > 0 &&
      std::any_of(runnable.begin(), runnable.end(), [](const Job& j) { return j.benchmark->instructions; });
  if (any_instructions) {
    ctx.counter = choose_instruction_counter(options.instruction_counter);
  } else {
    ctx.counter.reason = options.instruction_processes > 0
                             ? "no selected experiment declares instruction counts meaningful"
                             : "not requested (--instruction-processes 0)";
  }
  outcome.instruction_counter = ctx.counter;

  const auto start = Clock::now();
  CalibrationCache cache(options.calibration_path);
  if (!cache.load_problem().empty()) say(Verbosity::quiet) << "pairbench: warning: " << cache.load_problem() << "\n";
  const Calibrated cal = calibrate(ctx, runnable, cache);
  // One side: its calibration processes checked its arms (a run with two sides checks both in
  // their first pair alike).
  if (sides.size() == 1) {
    for (const std::string& name : cal.checked) outcome.checked.insert(check_key(0, name));
  }
  outcome.calibrated = cal.calibrated;
  outcome.calibration_wall_s = cal.wall_s;
  if (options.calibrate_only) {
    if (const std::string problem = cache.save(); !problem.empty()) {
      say(Verbosity::quiet) << "pairbench: warning: calibration cache not saved: " << problem << "\n";
    }
    outcome.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
    return outcome;
  }
  outcome.iterations = cal.time_iterations;
  outcome.plan = plan_processes(runnable, options, cache, cal.time_iterations, ctx.counter.name);

  // Duet pairs: the same benchmark on both sides, started together, each side on its own cores.
  const std::vector<int> cpus = options.duet_cpu_pool.empty() ? kernels::usable_cpu_list() : options.duet_cpu_pool;
  outcome.pairing = options.pairing == "duet" && sides.size() == 2 && cpus.size() >= 2 ? "duet" : "sequential";
  if (options.pairing == "duet" && sides.size() == 2 && outcome.pairing != "duet") {
    say(Verbosity::quiet)
        << "pairbench: warning: duet pairing needs two sides and two usable CPUs; running sequentially\n";
  }
  if (outcome.pairing == "duet") outcome.duet_cpus = {cpus[0], cpus[1]};

  std::vector<std::vector<Job>> units = timed_units(runnable, sides, options, cal, cpus, outcome, rng);
  add_instruction_units(units, runnable, ctx, options, cal, cache, outcome);
  launch_units(ctx, units, outcome);
  name_throttled(outcome.samples);
  name_where_wall_went(outcome.samples);
  // Its count was calibrated for another iteration: named with the drifted ones.
  for (const std::string& name : forget_changed_work(cache, outcome.samples)) outcome.drifted.push_back(name);
  learn_walls(cache, outcome.samples, sides, ctx.counter.name);
  note_drift(cache, outcome);
  outcome.calibration_ratios = calibration_ratios(cache, outcome.samples);
  if (const std::string problem = cache.save(); !problem.empty()) {
    say(Verbosity::quiet) << "pairbench: warning: calibration cache not saved: " << problem << "\n";
  }
  outcome.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return outcome;
}

}  // namespace pairbench::harness
