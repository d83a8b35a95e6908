// Iteration counts, calibrated once per machine and reused. A bench process then runs a fixed
// number of iterations instead of Google Benchmark's min-time ramp (which re-runs the arm's
// set-up and verification at every step), so a process measures instead of ramping, and every
// run on this machine measures the same work per benchmark, night after night. Beside the counts,
// the cache learns what each benchmark's processes take in wall time, for a profile's time budget.
#pragma once

#include <cstdint>
#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace pairbench::harness {

struct Calibration {
  double measured_s_per_iteration = 0;  // inside the timed region
  double wall_s_per_iteration = 0;      // the timed loop's wall time per iteration, untimed parts included
  std::string calibrated_at;            // UTC
  // The declared work of one iteration when it was calibrated (Sample::work_per_iteration; "" not
  // known): a benchmark whose iteration now declares other work is calibrated again.
  std::string work;
};

// How a profile samples one benchmark process.
struct SamplingPlan {
  int batches = 5;               // in-process samples: consecutive batches of iterations
  double sample_time_s = 0.004;  // measured time wanted per batch
  double max_loop_wall_s = 0.5;  // the timed loop's wall time may not exceed this (slow untimed parts)
};

// Iterations for one process: enough for `batches` batches of `sample_time_s` each of measured
// time, as far as the wall cap allows, at least 1.
std::int64_t planned_iterations(const Calibration& c, const SamplingPlan& plan);

// Iterations for one instruction-counting process: about 2 ms of native measured time (a
// simulator runs ~50x slower; the count is per iteration and does not need more), at most the
// timed processes' count, plus the uncounted warm-up iteration.
std::int64_t instruction_iterations(const Calibration& c, std::int64_t time_iterations);

// Native measured time per iteration above which instructions are not counted: the simulator
// would take ~50x as long for even one iteration (a 16 M-element sin/cos pass: 0.36 s native, 30 s).
inline constexpr double kMaxSimulatedIterationS = 0.05;

// Whether a benchmark drifted so far from its calibration (3x either way) that the run names it;
// its count is kept (only --recalibrate renews it). `observed`: this run's median seconds per iteration.
bool calibration_drifted(const Calibration& c, double observed_s_per_iteration);

// Whether a calibration ramp that recorded too few iterations for the plan's batches to show a
// stall (one preemption read as seconds per iteration) may still hide one, from its first
// iterations' wall and its timing thread's CPU time over the same span (the bench's record:
// early_wall_s, early_cpu_s). A thread that stayed on its CPU for at least kOnCpuShare of the wall
// was not stalled off it, and its time is its work: its ramp is kept. Either unknown (0, an older
// bench): it may.
inline constexpr double kOnCpuShare = 0.9;
bool ramp_may_hide_stall(double early_wall_s, double early_cpu_s);

// Orders of magnitude apart (100x either way): a calibration that far from the benchmark's own
// later iterations, or whose own batches disagree that much, measured something else (a hang, a
// one-off stall) and is refused rather than cached.
inline constexpr double kWildlyOffRatio = 100;
bool wildly_off(double a_s_per_iteration, double b_s_per_iteration);

// What a benchmark's processes cost in wall time on this machine, learnt from the processes of
// every run, so that a run can plan within a profile's time budget. A time process's wall splits
// into the part outside its timed loop (exec, set-up, verification, teardown: the same in every
// profile) and the loop (its iterations, which the profile sets); an instruction-counting
// process's wall is kept whole, per counter. Each list holds one value per run (the median over
// that run's processes), newest last, at most kWallRuns; a projection takes their median.
struct ProcessWalls {
  std::vector<double> overhead_s;                                    // process wall minus its timed loop's wall
  std::vector<double> loop_s_per_iteration;                          // the timed loop's wall per iteration
  std::map<std::string, std::vector<double>> instruction_process_s;  // counter (perf|callgrind) -> process wall
  // The timed region per iteration (measured_s / iterations) of `pairbench run`'s own processes,
  // one side, nothing planted: "its time in run", what `ab` checks its regime against. A
  // process of a few calibrated iterations can differ from the calibration's Google Benchmark
  // ramp for reasons of its own (a 64 MiB allocation's first touch, thread start-up), which are
  // the same in `run` and `ab`, so the ramp is the fallback only.
  std::vector<double> run_s_per_iteration;
  // What `ab`'s duet regime probe found here: whether a side ran above the regime limit beside the
  // other (then its two sides run one at a time), why, and when (UTC). A later `ab` on this machine
  // takes it instead of probing again while it is younger than kDuetProbeDays; it goes with the
  // walls when the iteration's declared work changes.
  struct DuetProbe {
    bool apart = false;
    std::string why, at;
  };
  std::optional<DuetProbe> duet_probe;
};
inline constexpr std::size_t kWallRuns = 5;
inline constexpr double kDuetProbeDays = 7;

// Days from a UTC stamp as the cache writes it ("2026-11-29T00:12:50Z") to `now`; +inf when the
// stamp does not parse (an unknown age counts as too old).
double age_days(const std::string& utc, std::time_t now);

// The median of a run-by-run list; 0 when empty.
double running_median(const std::vector<double>& per_run);
// How far a benchmark's kept runs spread above their running median: the largest over the median,
// 0 with fewer than 3 runs (too few to say what its run-to-run range is).
double run_spread(const std::vector<double>& per_run);

// Seconds one time process of `iterations` is expected to take: its overhead plus its loop (the
// observed wall per iteration, else the calibration's). 0 = not known (no process of it has run here).
double projected_process_wall_s(const ProcessWalls* walls, const Calibration* c, std::int64_t iterations);
// The same for an instruction-counting process under `counter`; 0 = not known.
double projected_instruction_wall_s(const ProcessWalls* walls, const std::string& counter);

// The budget rule: processes for a benchmark whose processes take `process_wall_s` each, when the
// profile allows `budget_s` of them: floor(budget / wall), at least `minimum` (fewer cannot
// estimate the noise between processes), at most `maximum` (the profile's count). No budget (0)
// or an unknown wall (0): `maximum`. A `minimum` above `maximum` is `maximum`.
int budgeted_processes(double budget_s, double process_wall_s, int minimum, int maximum);

// The per-machine cache: results/calibration/<machine_key>.json. A missing file is empty; an
// unreadable or malformed one is reported once and replaced on save (it only costs a calibration).
class CalibrationCache {
 public:
  explicit CalibrationCache(std::string path = "");  // "" = in memory only
  const Calibration* find(const std::string& benchmark) const;
  void put(const std::string& benchmark, const Calibration& c);
  void forget(const std::string& benchmark);
  // Its learnt process walls too: they were learnt from another iteration.
  void forget_walls(const std::string& benchmark);
  // Benchmarks that could not be calibrated, with why and when: remembered, so that a run names
  // them once and uses the fallback count instead of retrying (--recalibrate retries).
  struct Failure {
    std::string reason, at;
  };
  const Failure* failure(const std::string& benchmark) const;
  void put_failure(const std::string& benchmark, const std::string& reason);
  // The process walls learnt so far (nullptr: none). `record_*` add one run's median, dropping
  // the oldest past kWallRuns. Kept across recalibration: the model is per iteration.
  const ProcessWalls* walls(const std::string& benchmark) const;
  void record_time_walls(const std::string& benchmark, double overhead_s, double loop_s_per_iteration);
  void record_instruction_wall(const std::string& benchmark, const std::string& counter, double wall_s);
  void record_run_per_iteration(const std::string& benchmark, double s_per_iteration);
  void record_duet_probe(const std::string& benchmark, bool apart, const std::string& why);
  // Writes the cache atomically; returns "" or the reason it could not be written.
  std::string save() const;
  const std::string& path() const { return path_; }
  const std::string& load_problem() const { return load_problem_; }

 private:
  std::string path_, load_problem_;
  std::map<std::string, Calibration> entries_;
  std::map<std::string, Failure> failures_;
  std::map<std::string, ProcessWalls> walls_;
};

}  // namespace pairbench::harness
