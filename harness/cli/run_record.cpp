// The profile's sampling, a run file from one side's samples, and claims for old run files.
#include "harness/cli/run_record.h"
#include "harness/exec/say.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>

#include "harness/analysis/claims.h"
#include "harness/analysis/summary.h"
#include "harness/exec/interrupt.h"
#include "harness/store/run_file.h"

namespace pairbench::harness {

RunOptions run_options(const RunArgs& args, const std::string& machine_key) {
  RunOptions options;
  options.profile = args.profile;
  // Processes are the unit of independence; in-process batches catch what varies inside one.
  // Measured time per process: quick 5 x 2 ms, nightly 10 x 5 ms, full 10 x 20 ms. Where the
  // process-to-process noise dwarfs the in-process noise (docs/gate.md), more processes buy more
  // than longer ones. Instruction counts: nightly and full (quick keeps the main job short;
  // ci/pr.sh asks for them).
  if (args.profile == "quick") {
    options.repetitions = 4, options.plan = {5, 0.002, 0.25}, options.instruction_processes = 0, options.timeout_s = 60;
  } else if (args.profile == "nightly") {
    options.repetitions = 9, options.plan = {10, 0.005, 1.0}, options.instruction_processes = 3,
    options.timeout_s = 300;
    // The time budget (docs/gate.md, "Time budget"): a benchmark whose processes take longer
    // than budget / 9 gets fewer of them (at least 4, the quick profile's count), and one whose
    // simulated counting processes take longer than budget / 3, 2 of them.
    options.process_budget_s = kNightlyProcessBudgetS, options.instruction_budget_s = kNightlyInstructionBudgetS;
  } else {
    options.repetitions = 15, options.plan = {10, 0.02, 3.0}, options.instruction_processes = 3,
    options.timeout_s = 600;
  }
  // A count on the command line is that count for every benchmark: no budget cuts it.
  if (args.repetitions > 0) options.repetitions = args.repetitions, options.process_budget_s = 0;
  if (args.process_budget_s >= 0) options.process_budget_s = args.process_budget_s;
  if (args.batches > 0) options.plan.batches = args.batches;
  if (args.min_time_s > 0) options.plan.sample_time_s = args.min_time_s / options.plan.batches;
  options.plan.max_loop_wall_s =
      std::max(options.plan.max_loop_wall_s, 4 * options.plan.batches * options.plan.sample_time_s);
  if (args.instruction_processes >= 0)
    options.instruction_processes = args.instruction_processes, options.instruction_budget_s = 0;
  if (args.instruction_budget_s >= 0) options.instruction_budget_s = args.instruction_budget_s;
  if (args.timeout_s > 0) options.timeout_s = args.timeout_s;
  options.instruction_counter = args.instruction_counter;
  if (args.instruction_counter == "none") options.instruction_processes = 0;
  options.seed = args.seed;
  options.progress_tty = isatty(STDERR_FILENO);
  if (args.calibration == "auto") {
    options.calibration_path = machine_key.empty() ? "" : "results/calibration/" + machine_key + ".json";
  } else if (args.calibration != "none") {
    options.calibration_path = args.calibration;
  }
  options.recalibrate = args.recalibrate;
  options.pairing = args.pairing;
  options.share_processes = args.process_sharing == "experiment";
  return options;
}

}  // namespace pairbench::harness
