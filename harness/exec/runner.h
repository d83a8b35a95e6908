// `pairbench run`: every arm of every grid point, in randomised interleaved order, each
// repetition in its own bench process running a calibrated, fixed number of iterations split into
// in-process samples; a time limit per process; progress on stderr. Where an experiment declares
// instruction counts meaningful, a few more processes count them (perf or callgrind).
// Temporaries: one run directory under $TMPDIR (or /tmp), removed on every way out of the run;
// each bench process gets its own TMPDIR inside it, removed with whatever the process left there
// (a process killed at its time limit cannot clean up after itself).
// On SIGINT/SIGTERM (harness/exec/interrupt.h) nothing more is launched, the running processes are
// killed, and the samples finished so far come back with `interrupted_by` set.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "harness/exec/calibration.h"
#include "harness/exec/catalogue.h"
#include "harness/exec/instructions.h"
#include "harness/store/sample.h"

namespace pairbench::harness {

struct RunOptions {
  std::string profile = "quick";
  int repetitions = 5;              // processes per benchmark: the unit of independence
  SamplingPlan plan;                // in-process samples per process and their length
  int instruction_processes = 0;    // per benchmark whose experiment declares instruction counts meaningful
  std::string instruction_counter;  // perf | callgrind | none | "" = detect
  double timeout_s = 60;            // a process running longer is killed and reported failed
  std::uint64_t seed = 0;           // order shuffle; 0 = from the clock (recorded in the run file)
  bool progress_tty = false;        // one updating line instead of a line per process
  std::string calibration_path;     // the per-machine iteration cache; "" = calibrate for this run only
  bool recalibrate = false;         // ignore the cache's entries (and rewrite them)
  // Stop after the calibration: the cache filled, no timed or counting process (`ab --budget` and
  // `run --baseline --budget` calibrate what has never run here before the budget starts:
  // calibrate_first).
  bool calibrate_only = false;
  // With two sides (`ab`): sequential (one process at a time, sides interleaved) or duet (the
  // two sides' processes of a benchmark at the same time, each pinned to its own cores, as many
  // as the benchmark declares threads, cores swapped every round, so machine-wide noise hits both
  // alike). A benchmark whose two sides need more cores than there are runs its sides one at a
  // time, unpinned, in a duet run too (RunOutcome::sequential_in_duet).
  std::string pairing = "sequential";
  std::vector<int> duet_cpu_pool;  // the CPUs duet places sides on; empty = every usable CPU
  // Benchmarks a duet run runs one side at a time whatever they declare, with why (`ab`'s regime
  // probe: two processes at once ran one above its calibrated time per iteration, e.g. two
  // memory-bound ones sharing the memory bandwidth).
  std::map<std::string, std::string> one_side_at_a_time;
  // random: every time process draws its own placement from the seed and its index in the run (a
  // layout variant of its binary, environment padding, buffer offsets; harness/exec/layout.h),
  // recorded in its row; none: every process runs the plain binary as built. Calibration and
  // instruction-counting processes always run the plain binary unperturbed.
  std::string layout = "random";
  // Time processes that may share a process (BenchmarkEntry::shared_process, no planted work, not
  // a duet side) do: one process runs one sample of each of up to `max_shared` benchmarks of one
  // experiment and arm environment, in a random order drawn per process (bench --pairbench_plan),
  // so that a sample costs its work and not a process start (a CUDA context, a dataset). Each
  // benchmark still gets one sample per process, so processes stay its independent units; a
  // benchmark that crashes or hangs one is recorded failed and the ones after it run again in a
  // new process. false: one benchmark per process.
  bool share_processes = true;
  int max_shared = 16;
  // The profile's time budget (`run` only; 0 = none: `repetitions` and `instruction_processes` for
  // every benchmark). Seconds of time processes per benchmark: a benchmark whose processes are
  // known on this machine (the calibration cache's process walls) to take long gets
  // floor(budget / its process wall) of them, at least `min_repetitions`, at most `repetitions`;
  // the same for instruction-counting processes with their own budget and minimum.
  double process_budget_s = 0;
  int min_repetitions = 4;
  double instruction_budget_s = 0;
  int min_instruction_processes = 2;
};

// What a run planned for one benchmark, and why.
struct BenchmarkPlan {
  std::string benchmark;
  int processes = 0, profile_processes = 0;                          // time processes: planned, and the profile's count
  double process_wall_s = 0;                                         // projected per process; 0 = not known yet
  int instruction_processes = 0, profile_instruction_processes = 0;  // 0 of 0 where not counted
  double instruction_wall_s = 0;  // projected per counting process; 0 = not known yet
  std::string reason;             // "4 of 9: 3.5 s per process, budget 14 s"
  std::string counted_at;         // not counted: the cheaper grid point of its family that covers its code
  bool cut() const { return processes < profile_processes || instruction_processes < profile_instruction_processes; }
};

// The run's plan: every runnable benchmark's processes and what they are projected to take.
struct RunPlan {
  bool budgeted = false;  // a process or instruction budget applied
  double process_budget_s = 0, instruction_budget_s = 0;
  int min_repetitions = 0, min_instruction_processes = 0;
  std::vector<BenchmarkPlan> benchmarks;  // by name
  int cut = 0;                            // benchmarks planned fewer processes than the profile's
  int unknown = 0;                        // benchmarks some of whose planned processes have no known wall
  std::size_t processes = 0;              // planned, time and instruction, every side
  double projected_wall_s = 0;            // of the planned processes with a known wall; calibration excluded
  const BenchmarkPlan* find(const std::string& benchmark) const;
};

// A benchmark whose two sides ran one at a time in a duet run, and why.
struct SequentialInDuet {
  std::string benchmark;
  int threads = 1;     // per side, the larger of the two sides' declarations
  std::string reason;  // "2 threads per side need 4 cores for both sides at once; 2 usable"
};

// A benchmark's time per iteration in this run against its time in `run` (the cache's
// ProcessWalls::run_s_per_iteration, learnt from runs here), else against its calibration: one
// side's median over its processes of measured seconds / iterations.
struct CalibrationRatio {
  std::string benchmark;
  int side = 0;
  double observed_s_per_iteration = 0, calibrated_s_per_iteration = 0;
  bool against_run = false;  // the reference is its time in `run`, not the calibration's ramp
  // Against `run`: how far its own runs here spread above their median (the largest of the runs the
  // cache keeps over their median; 0 with fewer than 3). A ratio inside that is what `run` itself
  // does from run to run, not a different regime.
  double run_spread = 0;
  double ratio() const { return observed_s_per_iteration / calibrated_s_per_iteration; }
};

struct RunOutcome {
  std::vector<Sample> samples;  // time and instruction samples, calibration processes excluded
  int failed_processes = 0;     // crashed, hung, incorrect or failed samples
  std::uint64_t seed = 0;
  double wall_s = 0;
  int calibrated = 0;  // benchmarks calibrated in this run (cache misses)
  double calibration_wall_s = 0;
  InstructionCounterChoice instruction_counter;
  std::string pairing = "sequential";                // what ran: duet falls back to sequential on one CPU
  std::vector<int> duet_cpus;                        // the cores of one-thread duet pairs
  std::vector<SequentialInDuet> sequential_in_duet;  // duet only
  std::vector<CalibrationRatio> calibration_ratios;  // every benchmark and side with a calibration and time samples
  std::map<std::string, std::int64_t> iterations;    // per benchmark, the fixed count used
  std::vector<std::string> drifted;                  // benchmarks 3x off their calibration (their counts were kept)
  int interrupted_by = 0;                            // SIGINT / SIGTERM that stopped the run early; 0 = ran to the end
  std::size_t completed_processes = 0, planned_processes = 0;  // timed and instruction processes
  RunPlan plan;
  // "<side>|<benchmark>" whose arm passed a check in this run: a time process checks its arm
  // before timing until every side's has, then in a drawn quarter (bench experiment.h, check_due).
  // Per run: each of `ab`'s and `run --budget`'s rounds checks its own first processes again.
  std::set<std::string> checked;
};

RunOutcome run_experiments(const std::vector<ExperimentEntry>& experiments, const RunOptions& options);

// The plan `run` would make from the calibration cache alone, running nothing (`run --plan`): a
// benchmark not calibrated yet has no projection.
RunPlan plan_run(const std::vector<ExperimentEntry>& experiments, const RunOptions& options);

// Several builds (or environments) in one run: every benchmark of every side, interleaved process
// by process in one randomised order, so drift over the run cannot read as a difference between
// sides. Samples carry their side's index. `extra_env` is added to every process of that side;
// `benchmark_env` to that benchmark's processes only (the self-test's planted work).
struct Side {
  std::string name;
  std::vector<ExperimentEntry> experiments;
  std::map<std::string, std::string> extra_env;
  std::map<std::string, std::map<std::string, std::string>> benchmark_env;
  // Added to that benchmark's instruction-counting processes only (the self-test plants an exact
  // number of work loops there, where a share of the region's time would mean nothing).
  std::map<std::string, std::map<std::string, std::string>> instruction_env;
};
RunOutcome run_sides(const std::vector<Side>& sides, const RunOptions& options);

// The plan run_sides would make for `sides` from the calibration cache alone, running nothing. Its
// projected wall counts a benchmark's time processes on every side one after the other, except a
// duet pair's two sides, which run at once (counted once); `probed`: ab's regime probe first runs
// one uncounted pair of each of those it names.
RunPlan plan_run(const std::vector<Side>& sides, const RunOptions& options, const std::set<std::string>& probed = {});

// Turns one bench process's Google Benchmark JSON into a sample for `benchmark`.
Sample sample_from_gbench(const nlohmann::json& gbench_output, const ExperimentEntry& e, const BenchmarkEntry& b,
                          int repetition);

// Adds the in-process samples from the process's timed-region record (bench --pairbench_record):
// each batch's mean time per iteration, against the process's, scales its overall metric.
void add_batches(Sample& s, const nlohmann::json& record, const ExperimentEntry& e);

}  // namespace pairbench::harness
