// The one place an experiment is declared: question, claim, arms (baseline first), one shared
// grid, timing mode, deciding metric and direction. The shared bench main (bench_main.cpp)
// turns declarations into Google Benchmark registrations and a machine-readable catalogue.
#pragma once

#include <benchmark/benchmark.h>

#include <cstdint>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/common/not_supported.h"

namespace pairbench::bench {

enum class Timing {
  kWallClock,   // host clock around a synchronised region (dispatch: host overhead is the point)
  kCudaEvents,  // CUDA events around device work (UseManualTime + SetIterationTime)
  kByDevice,    // a `device` axis decides: wall clock at device:cpu, CUDA events at device:cuda
};
enum class Better { kLower, kHigher };

// How a metric follows the measured time of an iteration. It lets the harness turn batches of
// consecutive iterations into in-process samples of the metric: kProportional (ns per op: a batch
// twice as slow has twice the value), kInverse (bytes/s), kNone (peak RSS, a best-of ceiling:
// one sample per process). kAuto reads it off the unit: "ns" or "s" proportional, "<x>/s"
// inverse, anything else none.
enum class TimeRelation { kAuto, kProportional, kInverse, kNone };

// The counter every arm of an experiment reports and the experiment is decided on.
struct Metric {
  std::string name;  // counter name, e.g. "ns_per_op", "bytes_per_second"
  std::string unit;  // "ns", "B/s", ...
  Better better = Better::kLower;
  TimeRelation time_relation = TimeRelation::kAuto;
};
// kAuto resolved from the unit.
TimeRelation resolved_time_relation(const Metric& m);

// One point of the grid: axis name -> value, in axis order. Values are strings in names and
// JSON alike ("cpu", "10000"); numeric ones are read with get_int.
class Point {
 public:
  void set(const std::string& axis, const std::string& value);
  const std::string& get(const std::string& axis) const;  // throws std::out_of_range
  std::int64_t get_int(const std::string& axis) const;    // throws std::invalid_argument
  const std::vector<std::pair<std::string, std::string>>& items() const { return items_; }

 private:
  std::vector<std::pair<std::string, std::string>> items_;
};

// A named axis with its values per profile. `full` falls back to `nightly`, `nightly` to `quick`.
struct Axis {
  std::string name;
  std::vector<std::string> quick;
  std::vector<std::string> nightly;
  std::vector<std::string> full;
};

using ArmFn = std::function<void(benchmark::State&, const Point&)>;

struct Arm {
  std::string name;  // says what differs: "sync", "async", "pinned", "jemalloc"
  ArmFn run;
  // Whether the arm exists at this point at all (e.g. CUDA graphs only where device:cuda).
  std::function<bool(const Point&)> applies;
  // Why it cannot run on this machine ("no CUDA device"); empty when it can.
  std::function<std::string(const Point&)> unavailable;
  // Environment arm: variables the harness sets when it launches this arm's process.
  std::map<std::string, std::string> env;
  // Runs on the CUDA device at every point, where neither its timing (cuda_events) nor a
  // device:cuda point says so (uses_cuda): `ab`'s duet does not run two such processes at once on
  // one GPU.
  bool cuda = false;
};

// A target the run reports as met or missed (never asserted in a test).
struct Target {
  std::string arm;
  std::map<std::string, std::string> where;  // axis values the target applies to
  double bound = 0;                          // in the metric's unit
  std::string text;                          // e.g. "async <= 100 ns per tiny op"
};

// A benchmark, or a family of them, that may be this machine's limit for some quantity.
struct LimitSource {
  std::string experiment;                    // e.g. "limits.memory_bandwidth"
  std::string arm;                           // its arm; empty = every arm
  std::map<std::string, std::string> where;  // its grid points; empty = every point
};

// Places an arm's results against a machine limit measured in the same run: the summary shows
// the arm's median as a percentage of the limit's median (same metric and unit). The limit is the
// best median among every candidate the run measured: the first one (experiment, arm, where), the
// sources in `also`, and with `own_arms` our own arms at the same grid point. A limit must be the
// best this machine can do: one core's memcpy is not, where streaming stores or more threads beat it.
struct LimitRef {
  std::string experiment;                    // a limit experiment, e.g. "limits.memory_bandwidth"
  std::string arm;                           // its arm, e.g. "copy"; empty = every arm
  std::map<std::string, std::string> where;  // the limit's grid point, e.g. {{"threads", "1"}}; empty = all
  std::vector<std::string> arms;             // our arms it applies to; empty = every arm
  std::map<std::string, std::string> when;   // our grid points it applies to; empty = all
  // Our counter set against the limit; empty = the deciding metric. Name a `secondary` counter
  // in the limit's unit when the deciding metric is in another (fusion decides on elements/s
  // and places its bytes_per_second against the memory bandwidth limit).
  std::string counter;
  std::vector<LimitSource> also;  // more candidates, e.g. every thread count of the same limit
  // Every arm of ours at the same grid point is a candidate too: only where they measure the
  // same quantity as the limit (copy.stores' ordinary and streaming stores move bytes as memcpy does).
  bool own_arms = false;
};

// How an experiment's ratios decide its claim: one check over some of its grid points and
// treatments (docs/claims.md). claims.json says which experiments test a claim and how the
// checks combine; the harness (harness/analysis/claims.cpp) applies them and writes the verdict.
struct VerdictCheck {
  enum class Test {
    kBetter,   // held if ci_low > threshold; did not hold if ci_high < threshold or the interval
               // lies inside [1/equivalence, equivalence] (no meaningful difference)
    kSame,     // held if the interval lies inside [1/tolerance, tolerance]; did not hold if outside
    kPlateau,  // `treatments` in order: the last stopped beating an earlier one by `equivalence`
  };
  Test test = Test::kBetter;
  std::vector<std::string> treatments;                      // empty = every treatment (plateau: >= 2, in order)
  std::map<std::string, std::vector<std::string>> where;    // grid points judged (axis -> values); empty = all
  std::map<std::string, std::vector<std::string>> exclude;  // grid points not judged
  double threshold = 1.0;                                   // kBetter: the ratio the interval must clear
  double equivalence = 0;                                   // kBetter: 1.02, kPlateau: 1.05 when 0
  double tolerance = 1.1;                                   // kSame
  std::string why;                                          // the reason for this rule, shown in docs/claims.md
  // Set when a CPU experiment stands in for a GPU claim: the argument why it tests the claim.
  // Its rows and a verdict decided by them alone are labelled as a CPU analogue.
  std::string analogue;
};

// How the report draws an experiment: plots/ draws what the run file says and guesses nothing
// from names. Every experiment gets its deciding metric per arm across the grid, with this
// machine's limit where one applies; a comparison also gets each treatment's ratio to the
// baseline. The defaults suit most experiments: declare a Figure only to add a kind below, or
// to pin an axis or a scale.
enum class FigureKind {
  kMetric,    // the deciding metric per arm across the grid, nothing more
  kAccuracy,  // the metric with `counter` (an error, e.g. "rel_error") per arm in a panel under it
  kScaling,   // also the metric against each arm's number (`arm_values`: worker count) with the
              // knee marked (the smallest number within 95 % of the best median), and `counter`
              // (e.g. the consumer's idle fraction) beside it
  kMemory,    // also the metric against `counter` (peak RSS), one point per arm and grid point
};
enum class Scale {
  kAuto,  // x: log where the grid's values span 8x or more; y: log where medians span more than 8x
  kLinear,
  kLog,
};
struct Figure {
  FigureKind kind = FigureKind::kMetric;
  // The grid axis along x (numeric values). Empty: the one numeric axis that varies, if exactly
  // one does; else the grid points are categories. The other varying axes become panels or lines.
  std::string x_axis;
  Scale x_scale = Scale::kAuto;
  Scale y_scale = Scale::kAuto;              // the deciding metric's axis (ratios are always on a log axis)
  std::string counter;                       // the counter kAccuracy, kScaling and kMemory draw (see above)
  std::string arm_axis;                      // kScaling: what an arm's number counts, e.g. "worker threads"
  std::map<std::string, double> arm_values;  // kScaling: arm name -> its number, e.g. {"workers_2", 2}
};

struct Experiment {
  std::string name;        // "<area>.<experiment>", e.g. "dispatch.sync_vs_async"
  std::string claim;       // id in claims.json, e.g. "C3"; empty for a machine limit
  std::string question;    // the question the experiment answers
  std::vector<Arm> arms;   // baseline first
  std::vector<Axis> grid;  // shared by every arm, so arms cannot drift apart
  Timing timing = Timing::kWallClock;
  Metric metric;
  std::vector<Target> targets;
  std::vector<LimitRef> limits;
  double gate_threshold = 0;  // relative slowdown the regression gate acts on; 0 = the gate's default
  // Counters reported beside the deciding metric in the summary (peak RSS, page faults, error):
  // each arm's median and its ratio to the baseline, oriented by the counter's own direction.
  std::vector<Metric> secondary;
  bool is_limit = false;  // measures this machine's physical limit; one arm, no ratios
  // Whether each of its benchmarks needs a process of its own: what it measures is the process's
  // own history (its heap, its peak RSS, whether its pages were touched before), which another
  // benchmark run earlier in the same process would change. The rest may share a process with
  // their experiment's other benchmarks of the same arm environment, one sample each in random
  // order, so that a sample costs its work and not a process start (--pairbench_plan).
  bool own_process = false;
  // Whether retired user-space instructions per iteration are a meaningful, low-noise gate
  // metric for an arm at a point: deterministic CPU work on the thread that times the region.
  // Not for GPU work, sleeping or waking threads, threads racing, or memory returned to the OS,
  // whose counts vary run to run. Empty: never.
  std::function<bool(const Arm&, const Point&)> instructions;
  double instructions_gate_threshold = 0;  // relative increase the gate acts on; 0 = its default (1 %)
  // How many threads an arm keeps busy at a point, the thread that times the region included:
  // worker threads, an async engine's backend, OpenBLAS's threads, participants as threads, a
  // ping-pong partner; spinning counts as busy, a thread parked for the whole region does not. It
  // drives scheduling: `ab`'s duet gives each side that many cores, or runs the two sides one at a
  // time where both would not fit, so that a benchmark runs in `ab` the way it runs alone. Where
  // the count follows an axis, compute it from the point ("all": threads_from_axis). Empty: 1.
  std::function<int(const Arm&, const Point&)> threads;
  // How this experiment decides its claim; empty = every treatment at every point must be better
  // than the baseline (kBetter, threshold 1). Only read where claims.json lists the experiment.
  std::vector<VerdictCheck> verdict;
  Figure figure;  // how the report draws it; the default suits most experiments
};

// The timing mode at one grid point (kByDevice resolved by the point's `device` axis).
Timing timing_at(const Experiment& e, const Point& p);
// The catalogue's and run files' name of a timing mode: "wall_clock", "cuda_events", "by_device".
const char* timing_name(Timing t);

// For Experiment::instructions: every arm at every CPU point (no `device` axis, or device:cpu).
bool cpu_point(const Arm& arm, const Point& p);

// For Experiment::threads: the count an axis names at the point, "all" = this process's usable
// CPUs (kernels/common/cpus.h, what an arm's "all" resolves to when it runs).
int threads_from_axis(const Point& p, const std::string& axis);
// For Experiment::threads: `n` at CPU points (cpu_point), 1 at device points (the host thread
// enqueues and waits; the device does the work).
std::function<int(const Arm&, const Point&)> threads_at_cpu_points(int n);
// The declared threads of an arm at a point, at least 1.
int threads_at(const Experiment& e, const Arm& arm, const Point& p);
// Whether the arm's process uses the CUDA device at the point: cuda_events timing, a device:cuda
// point, or an arm marked `cuda`. The listing carries it so that `ab`'s duet never puts both
// sides' processes on one GPU at once (they would time the GPU's time-slicing between two
// contexts: 9-29x their calibrated time per iteration on an H200).
bool uses_cuda(const Experiment& e, const Arm& arm, const Point& p);

using ExperimentFactory = Experiment (*)();
bool register_experiment(ExperimentFactory factory);
const std::vector<ExperimentFactory>& registered_experiments();

// `<experiment>/<arm>/<axis>:<value>/...`: the join key of every result.
std::string benchmark_name(const Experiment& e, const Arm& arm, const Point& point);
// Every point of the grid for a profile ("quick", "nightly", "full"), in declaration order.
std::vector<Point> grid_points(const Experiment& e, const std::string& profile);

// An arm that cannot run here (memory, mlock limit, device) throws pairbench::NotSupported
// (kernels/common/not_supported.h): reported "not_supported" with the message, which names the
// limit involved; not counted as a failure.
using ::pairbench::NotSupported;

// Marks the arm as checked against its reference before timing (CUTLASS's "passed"); the
// benchmark's span up to here is its record's verify_s (timed_region.h, note_verified).
void mark_verified(benchmark::State& state);
// The verification failed: the arm is reported "incorrect" and never timed.
void fail_verification(benchmark::State& state, const std::string& what);

// Whether this process is to check the arm against its reference before timing. True unless the
// harness says otherwise (--pairbench_check=0, or "check": false in a --pairbench_plan entry): it
// asks for the check in each benchmark's first process of a run on each build and in a drawn
// quarter of the later ones, and relies on those for the rest. An arm found wrong is checked (and
// refused) again in every later process, so it is never timed; the spot checks after timing run
// in every process. An arm whose check is costly (a reference over large inputs, a whole epoch)
// asks this and, when it is not due, calls mark_checked_elsewhere instead of checking; its timed
// loop must still start from the state the check would have left (pages touched, caches warm).
bool check_due();
// Marks the arm as checked in other processes of its run (check_due() was false here).
void mark_checked_elsewhere(benchmark::State& state);
// Called by the bench main before each benchmark: whether the harness asked for its check.
void set_check_due(bool due);

}  // namespace pairbench::bench

#define PAIRBENCH_CONCAT_INNER(a, b) a##b
#define PAIRBENCH_CONCAT(a, b) PAIRBENCH_CONCAT_INNER(a, b)
// PAIRBENCH_EXPERIMENT(id) { return Experiment{...}; } declares and registers one experiment.
#define PAIRBENCH_EXPERIMENT(id)                                                          \
  static ::pairbench::bench::Experiment PAIRBENCH_CONCAT(pairbench_declare_, id)();       \
  [[maybe_unused]] static const bool PAIRBENCH_CONCAT(pairbench_registered_, id) =        \
      ::pairbench::bench::register_experiment(&PAIRBENCH_CONCAT(pairbench_declare_, id)); \
  static ::pairbench::bench::Experiment PAIRBENCH_CONCAT(pairbench_declare_, id)()
