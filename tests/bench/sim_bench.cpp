// A simulated bench binary for the harness's decision tests (issue 37): the interface of every
// bench_<area> binary (the shared bench main: listing, calibration ramp, fixed iterations,
// in-process batches, the timed-region record, the duet start gate), but the time of each
// iteration comes from a seeded generator that the test declares, so a verdict, a number of
// rounds or a stopping point depends on the declared noise and change, never on how fast or
// loaded the machine is. The instructions of each region are real: `work` dependent steps (a
// planted instruction change is `work_change`).
//
// The declaration is a JSON file beside the executable, <executable>.sim (absent: the defaults
// below), so a test copies the binary into its own directory (two directories for ab's two sides)
// and writes what each side's processes draw:
//   {"seed": 1,
//    "cases": {"a": {"ns": 1000,            time per iteration
//                    "process_sd": 0.01,    per-process noise (SD of the log)
//                    "inprocess_sd": 0.002, per-iteration noise inside a process (SD of the log)
//                    "outlier_p": 0, "outlier_x": 3,    a process this much slower, with this probability
//                    "bimodal_p": 0, "bimodal_x": 1.5,  a process in the slow mode, with this probability
//                    "drift": 0,            per process index, relative (0.01: each process 1 % slower);
//                                            both sides of an ab of one copy share its counter,
//                                            so this is a drift over the run's order
//                    "mode_every": 0, "mode_length": 0, "mode_x": 1,  processes i with i % every < length
//                                            run mode_x slower (a speed mode the machine passes through)
//                    "core_x": {"0": 1.2},  a process that starts on CPU 0 runs 1.2x slower (a core's mode)
//                    "layout_x": {"0": 1.1}, a process running layout variant 0 (the plain binary;
//                                            k: its copy bench_sim.layout<k>) runs 1.1x slower: a
//                                            placement that favours or hurts one relinked variant
//                    "launched_first_x": 1, a duet process launched first of its pair runs this much of
//                                            its time (0.85: 15 % faster), by what the runner says it
//                                            launched (PAIRBENCH_DUET_LAUNCHED=first|second), not
//                                            by the plan: a side effect of the launch order
//                    "change": 0,           planted time change, relative (0.1: 10 % slower)
//                    "work": 100, "work_change": 0,   dependent steps per iteration, planted change
//                    "crash": false,        the process aborts when it reaches this case (SIGABRT)
//                    "threads": 1,          the threads it declares (Experiment::threads): a duet runs a
//                                            case that does not fit twice on the CPUs one side at a time
//                    "setup_bytes": 0}},    bytes its set-up allocates and writes before timing (kept
//                                            until the arm ends): pages made resident in set-up
//    "start_s": 0}                          a process's start-up cost, slept once before its first
//                                            case (a CUDA context, a dataset), outside timing
// A copy named <executable>.layout<k> (sim_build's `layouts`) reads <executable>'s declaration and
// counter: it is the same build relinked, as the harness's layout variants are.
// The process index counts this executable's processes (<executable>.count, under a lock), one
// per process however many cases it runs (a shared process runs several, bench --pairbench_plan);
// each case draws its own process noise from the seed, its name and the index.
#include <fcntl.h>
#include <sched.h>
#include <sys/file.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench/common/experiment.h"
#include "bench/common/timed_region.h"
#include "bench/common/work.h"

namespace pairbench::bench {
namespace {

std::string self_path() {
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  return n > 0 ? std::string(self, static_cast<std::size_t>(n)) : std::string();
}

// The build this executable is a layout variant of (its path less ".layout<k>") and k (0: the
// plain binary).
std::pair<std::string, int> build_and_variant(const std::string& self) {
  const std::size_t dot = self.rfind(".layout");
  if (dot == std::string::npos || dot + 7 == self.size() ||
      self.find_first_not_of("0123456789", dot + 7) != std::string::npos) {
    return {self, 0};
  }
  return {self.substr(0, dot), std::stoi(self.substr(dot + 7))};
}

// This executable's next process index, from the counter file beside it (0 for the first).
std::uint64_t next_process_index(const std::string& self) {
  const int fd = open((self + ".count").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return 0;
  flock(fd, LOCK_EX);
  char buf[32] = {};
  const ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  const std::uint64_t index = n > 0 ? std::strtoull(buf, nullptr, 10) : 0;
  const std::string next = std::to_string(index + 1);
  (void)!ftruncate(fd, 0);
  (void)!pwrite(fd, next.data(), next.size(), 0);
  flock(fd, LOCK_UN);
  close(fd);
  return index;
}

struct Case {
  double ns = 1000, process_sd = 0.01, inprocess_sd = 0.002;
  double outlier_p = 0, outlier_x = 3, bimodal_p = 0, bimodal_x = 1.5, drift = 0;
  std::uint64_t mode_every = 0, mode_length = 0;
  double mode_x = 1, change = 0;
  nlohmann::json core_x = nlohmann::json::object(), layout_x = nlohmann::json::object();
  double launched_first_x = 1;
  std::int64_t work = 100;
  double work_change = 0;
  bool crash = false;
  int threads = 1;
  std::int64_t setup_bytes = 0;
  std::uint64_t seed = 1;
};

// The declared case (throws on a file that is not the declaration's shape: the arm then fails
// with why, as a real arm that cannot run).
Case declared(const std::string& self, const std::string& name) {
  Case c;
  std::ifstream in(self + ".sim");
  if (!in) return c;
  const nlohmann::json spec = nlohmann::json::parse(in);
  c.seed = spec.value("seed", std::uint64_t{1});
  const nlohmann::json k = spec.value("cases", nlohmann::json::object()).value(name, nlohmann::json::object());
  c.ns = k.value("ns", c.ns);
  c.process_sd = k.value("process_sd", c.process_sd);
  c.inprocess_sd = k.value("inprocess_sd", c.inprocess_sd);
  c.outlier_p = k.value("outlier_p", c.outlier_p);
  c.outlier_x = k.value("outlier_x", c.outlier_x);
  c.bimodal_p = k.value("bimodal_p", c.bimodal_p);
  c.bimodal_x = k.value("bimodal_x", c.bimodal_x);
  c.drift = k.value("drift", c.drift);
  c.mode_every = k.value("mode_every", c.mode_every);
  c.mode_length = k.value("mode_length", c.mode_length);
  c.mode_x = k.value("mode_x", c.mode_x);
  c.core_x = k.value("core_x", c.core_x);
  c.layout_x = k.value("layout_x", c.layout_x);
  c.launched_first_x = k.value("launched_first_x", c.launched_first_x);
  c.change = k.value("change", c.change);
  c.work = k.value("work", c.work);
  c.work_change = k.value("work_change", c.work_change);
  c.crash = k.value("crash", c.crash);
  c.threads = k.value("threads", c.threads);
  c.setup_bytes = k.value("setup_bytes", c.setup_bytes);
  if (!(c.ns > 0) || !(c.launched_first_x > 0) || c.process_sd < 0 || c.inprocess_sd < 0 || c.work < 0 ||
      c.setup_bytes < 0) {
    throw std::runtime_error(self + ".sim: cases." + name +
                             ": ns > 0, launched_first_x > 0, SDs >= 0, work >= 0, setup_bytes >= 0");
  }
  return c;
}

// Not inlined: the function diff names it where an instruction change was planted.
[[gnu::noinline]] std::uint64_t sim_steps(std::uint64_t x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  return x;
}

void sim_arm(benchmark::State& state, const Point& p) {
  const std::pair<std::string, int> build = build_and_variant(self_path());
  const std::string& self = build.first;
  const int variant = build.second;
  const std::string name = p.get("case");
  const Case c = declared(self, name);
  // Verified: the chain of a known seed after 3 steps, worked out by hand (as bench_timing's).
  std::uint64_t x = 1;
  for (int i = 0; i < 3; ++i) x ^= x << 13, x ^= x >> 7, x ^= x << 17;
  if (sim_steps(1, 3) != x) return fail_verification(state, "sim_steps: the xorshift chain differs");
  mark_verified(state);
  if (c.crash) std::abort();
  std::vector<unsigned char> setup(static_cast<std::size_t>(c.setup_bytes));
  std::memset(setup.data(), 0x5A, setup.size());
  benchmark::DoNotOptimize(setup.data());
  static const std::uint64_t index = [&] {
    std::ifstream in(self + ".sim");
    const double start_s = in ? nlohmann::json::parse(in).value("start_s", 0.0) : 0.0;
    if (start_s > 0) usleep(static_cast<useconds_t>(start_s * 1e6));
    return next_process_index(self);
  }();
  std::mt19937_64 rng(c.seed * 0x9E3779B97F4A7C15ull ^ std::hash<std::string>{}(name) ^
                      (index + 1) * 0xBF58476D1CE4E5B9ull);
  std::normal_distribution<double> z(0, 1);
  std::uniform_real_distribution<double> u(0, 1);
  double factor = std::exp(c.process_sd * z(rng));
  if (u(rng) < c.bimodal_p) factor *= c.bimodal_x;
  if (u(rng) < c.outlier_p) factor *= c.outlier_x;
  factor *= 1 + c.drift * static_cast<double>(index);
  if (c.mode_every > 0 && index % c.mode_every < c.mode_length) factor *= c.mode_x;
  const std::string cpu = std::to_string(sched_getcpu());
  if (c.core_x.contains(cpu)) factor *= c.core_x[cpu].get<double>();
  if (const std::string v = std::to_string(variant); c.layout_x.contains(v)) factor *= c.layout_x[v].get<double>();
  const char* launched = std::getenv("PAIRBENCH_DUET_LAUNCHED");
  const bool launched_first = launched && std::string(launched) == "first";
  if (launched_first) factor *= c.launched_first_x;
  factor *= 1 + c.change;
  const auto steps = static_cast<std::int64_t>(std::llround(static_cast<double>(c.work) * (1 + c.work_change)));
  std::uint64_t sink = 1;
  double declared_s = 0;
  for (auto _ : state) {
    region_begin();
    sink = sim_steps(sink | 1, steps);
    region_end();
    benchmark::DoNotOptimize(sink);
    const double seconds = c.ns * factor * std::exp(c.inprocess_sd * z(rng)) * 1e-9;
    record_iteration(state, seconds);
    declared_s += seconds;
  }
  set_rate_counters(state, Work{.ops = 1}, declared_s);  // ns_per_op from the declared times
  state.counters["process_index"] = static_cast<double>(index);
  state.counters["layout_variant"] = variant;
  if (launched) state.counters["launched_first"] = launched_first ? 1 : 0;
}

}  // namespace

// Declared, not measured: see the file's head. Select it with --experiments sim.declared (the
// file declares sim.machine too).
PAIRBENCH_EXPERIMENT(sim_declared) {
  return Experiment{
      .name = "sim.declared",
      .claim = "",
      .question = "Does the harness decide what the declared noise and change allow?",
      .arms = {{.name = "sim", .run = sim_arm}},
      .grid = {{.name = "case", .quick = {"a", "b", "c", "d"}, .nightly = {"a", "b", "c", "d"}}},
      .timing = Timing::kWallClock,
      .metric = {.name = "ns_per_op", .unit = "ns", .better = Better::kLower},
      .instructions = [](const Arm&, const Point&) { return true; },
      .threads = [](const Arm&,
                    const Point& p) { return declared(build_and_variant(self_path()).first, p.get("case")).threads; },
  };
}

// The machine's limits, declared as the cases above: a limits experiment (kind `limit`, like
// limits.memory_bandwidth), so that a gate can tell a whole run that moved with them from code
// that got slower (harness/gate/gate.cpp, detect_run_shift).
PAIRBENCH_EXPERIMENT(sim_machine) {
  return Experiment{
      .name = "sim.machine",
      .claim = "",
      .question = "What can the simulated machine do?",
      .arms = {{.name = "sim", .run = sim_arm}},
      .grid = {{.name = "case", .quick = {"m1", "m2", "m3", "m4"}, .nightly = {"m1", "m2", "m3", "m4"}}},
      .timing = Timing::kWallClock,
      .metric = {.name = "ns_per_op", .unit = "ns", .better = Better::kLower},
      .is_limit = true,
  };
}

}  // namespace pairbench::bench
