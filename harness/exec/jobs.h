// The runner's inside (harness/exec/runner.h is its outside): what one bench process is asked to
// run (a Job), what the jobs of a run share (a Context), and the steps run_sides takes, each in its
// own file: jobs.cpp runs one process or one shared process and reads what it left; calibrate.cpp
// fixes each benchmark's iterations; plan.cpp plans the processes, their rounds, duet pairs and
// layouts; launch.cpp launches them in order; run_notes.cpp says what the run found (throttled
// GPU samples, where the wall went, drifted calibrations). Only harness/exec includes it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "harness/exec/calibration.h"
#include "harness/exec/instructions.h"
#include "harness/exec/runner.h"
#include "harness/store/sample.h"

namespace pairbench::harness {

class StartGate;

namespace detail {

using Clock = std::chrono::steady_clock;

enum class Kind { kCalibrate, kTime, kInstructions };

struct Job {
  const ExperimentEntry* experiment;
  const BenchmarkEntry* benchmark;
  int repetition = 0;
  int side = 0;
  Kind kind = Kind::kTime;
  std::int64_t iterations = 0;  // 0 = Google Benchmark's ramp (calibration)
  std::vector<int> cpus;        // pinned to these (duet); empty = not pinned
  int pair = -1;
  // Duet: launched first of its pair. Drawn per crossover block and exchanged with the cores
  // between the block's two pairs (timed_units), so that under identical builds a block's mean
  // cancels whatever launch order and placement do to a side.
  bool lead = false;
  ProcessLayout layout;  // drawn for time processes under RunOptions::layout "random"
  // Runs in a process shared with the other jobs of its unit (RunOptions::share_processes): the
  // key of its experiment, arm environment and chunk, the same on both sides; "" = alone or duet.
  std::string share;
  // Its arm's check before timing: drawn for a quarter of the time processes (the same draw for
  // both sides of a repetition); launch_units also asks it of every process of the benchmark, on
  // every side, until each side has passed the check in this run, and after one failed it.
  bool check_drawn = false;
  bool check = true;  // what the process is told (bench --pairbench_check)
};

// The key under which a benchmark's check is remembered within a run: its side and name.
inline std::string check_key(int side, const std::string& benchmark) { return std::to_string(side) + "|" + benchmark; }

// A unit of two jobs that are not a shared process: a duet pair.
inline bool is_pair(const std::vector<Job>& unit) { return unit.size() == 2 && unit.front().share.empty(); }

// The experiment's binary and its layout variants (the plain binary alone where the catalogue
// entry was not loaded from a build directory).
inline std::vector<std::string> binaries_of(const ExperimentEntry& e) {
  return e.layout_binaries.empty() ? std::vector<std::string>{e.binary} : e.layout_binaries;
}

// Everything the jobs share: options, sides, the run's temporary directory, the instruction counter.
struct Context {
  const std::vector<Side>& sides;
  const RunOptions& options;
  std::string tmp_dir;  // the run's; each process gets its own TMPDIR inside it
  InstructionCounterChoice counter;
  std::atomic<int> next_file{0};
};

// What an uncalibrated benchmark's processes are sized by.
inline const Calibration kUncalibrated{1e-3, 1e-3, ""};

// Whether a calibration process's ramp is to run again: it may have been fooled by a stall
// (calibrate.cpp, ramp_until_usable).
bool worth_another_ramp(const Sample& s, int batches);

struct Calibrated {
  std::map<std::string, std::int64_t> time_iterations, instruction_iterations;
  int calibrated = 0;
  double wall_s = 0;
  std::set<std::string> checked;           // benchmarks whose calibration passed its check, no ramp of it wrong
  std::set<std::string> ramp_found_wrong;  // benchmarks a retried ramp found wrong
};

// "1:05" for 65 seconds.
std::string format_duration(double s);
// "%g": Google Benchmark 1.7.1 takes "0.05", not "0.05s".
std::string fmt_g(double v);

// A sample that measured nothing, on its job's side (a side-1 failure must never be the baseline's).
Sample job_sample(const Job& job, Verification verification, const std::string& reason);
Sample failed_sample(const Job& job, const std::string& reason);

// One process for `job` and the sample it left (jobs.cpp); nothing when interrupted. `gate`,
// `gate_side`, `launched`: a duet pair's start gate and its place in the launch order.
std::optional<Sample> run_job(Context& ctx, const Job& job, const StartGate* gate = nullptr, int gate_side = -1,
                              int launched = -1);
// One shared process for a unit's jobs, in their order (jobs.cpp).
std::vector<std::optional<Sample>> run_shared(Context& ctx, const std::vector<Job>& jobs, int& next_shared_id);
// The jobs that would each run alone, as units: one process each, or shared processes (jobs.cpp).
std::vector<std::vector<Job>> single_units(std::vector<Job> singles, const std::vector<Side>& sides,
                                           const RunOptions& options);

// Fixed iteration counts for every runnable benchmark (calibrate.cpp).
Calibrated calibrate(Context& ctx, const std::vector<Job>& runnable, CalibrationCache& cache);

// plan.cpp: the runnable jobs (the rest recorded not_supported), each benchmark's processes under
// the budgets, the rounds of timed units and the instruction units after them; what a run's
// processes taught the cache.
std::vector<Job> runnable_jobs(const std::vector<Side>& sides, RunOutcome& outcome);
// `at_once`: benchmarks whose duet pairs run both sides at once (their wall counted once).
RunPlan plan_processes(const std::vector<Job>& runnable, const RunOptions& options, const CalibrationCache& cache,
                       const std::map<std::string, std::int64_t>& iterations, const std::string& counter,
                       const std::set<std::string>& at_once = {});
std::string sides_apart_reason(const Job& a, const Job& b, const RunOptions& options, std::size_t pool_cpus);
void learn_walls(CalibrationCache& cache, const std::vector<Sample>& samples, const std::vector<Side>& sides,
                 const std::string& counter);
std::vector<std::vector<Job>> timed_units(const std::vector<Job>& runnable, const std::vector<Side>& sides,
                                          const RunOptions& options, const Calibrated& cal,
                                          const std::vector<int>& pool, RunOutcome& outcome, std::mt19937_64& rng);
void add_instruction_units(std::vector<std::vector<Job>>& units, const std::vector<Job>& runnable, const Context& ctx,
                           const RunOptions& options, const Calibrated& cal, const CalibrationCache& cache,
                           RunOutcome& outcome);

// launch.cpp: the units in order (a duet pair's two processes at once), until done or interrupted.
void launch_units(Context& ctx, const std::vector<std::vector<Job>>& units, RunOutcome& outcome);

// run_notes.cpp: what the run says at its end, and the regime ratios its row records.
void name_throttled(const std::vector<Sample>& samples);
void name_where_wall_went(const std::vector<Sample>& samples);
void note_drift(CalibrationCache& cache, RunOutcome& outcome);
// A benchmark whose iteration now declares other work than when it was calibrated here (its
// definition changed: more replays per iteration, another size) has its calibration and learnt
// walls forgotten, and is named: the next run calibrates it again. A calibration from before
// work was recorded takes this run's. Side 0's processes only (ab's calibration is side 0's).
// Returns the benchmarks forgotten.
std::vector<std::string> forget_changed_work(CalibrationCache& cache, const std::vector<Sample>& samples);
std::vector<CalibrationRatio> calibration_ratios(const CalibrationCache& cache, const std::vector<Sample>& samples);

}  // namespace detail
}  // namespace pairbench::harness
