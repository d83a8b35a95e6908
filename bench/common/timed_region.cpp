// Timed regions: manual time to Google Benchmark, in-process batches, instruction counts and the
// self-test's injected work (see timed_region.h). One benchmark runs at a time in a process (one
// per process, or a --pairbench_plan's one after another), so the record is process-global and
// begins again with each benchmark's invocation (reset_timed_regions).
#include "bench/common/timed_region.h"

#include "kernels/common/gpu_clocks.h"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <fcntl.h>
#include <unistd.h>
#include <valgrind/callgrind.h>

#include <cerrno>
#include <cstdio>
#include <mutex>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

namespace pairbench::bench {
namespace {

using Clock = std::chrono::steady_clock;

// What the self-test asked for: PAIRBENCH_INJECT_SLOWDOWN_PCT=X adds work worth X % of each
// region's own time (time instrument); PAIRBENCH_INJECT_LOOPS=K adds exactly K work loops per
// region (K may be fractional: the remainder carries over), which plants an exact instruction
// count (instruction instrument).
struct Injection {
  double fraction = 0;  // of the region's time
  double loops_per_region = 0;
  double loops_per_ns = 0;  // calibrated on first use (proportional mode)
  double carry = 0;         // fractional loops owed
  std::uint64_t loops_done = 0;
  bool active() const { return fraction > 0 || loops_per_region > 0; }
};

Injection read_injection() {
  Injection in;
  if (const char* v = std::getenv("PAIRBENCH_INJECT_SLOWDOWN_PCT"); v && *v)
    in.fraction = std::max(0.0, std::atof(v) / 100);
  if (const char* v = std::getenv("PAIRBENCH_INJECT_LOOPS"); v && *v) in.loops_per_region = std::max(0.0, std::atof(v));
  return in;
}

struct Record {
  InstructionCounter counter = InstructionCounter::kNone;
  int batches_wanted = 1;
  std::int64_t max_iterations = 0;
  std::vector<double> batch_seconds;
  std::vector<std::int64_t> batch_iterations;
  std::int64_t recorded = 0;
  double measured_s = 0;
  bool started = false;
  // The benchmark's own span, part by part (the record's setup_s and after_s): from its start
  // (reset_timed_regions) to its first timed region, and from its last timed iteration to the
  // record's writing (verification after timing, clean-up, the reporter).
  Clock::time_point benchmark_begin = Clock::now(), first_begin{}, last_record{};
  std::optional<Clock::time_point> verified_at;  // note_verified, before the first region
  // The process's minor page faults at the benchmark's start and at its first region: set-up's
  // difference is the pages it made resident (fresh buffers, populated or first touched), the
  // set-up cost that grows with the memory a benchmark needs rather than with its work.
  long begin_faults = 0, first_begin_faults = 0;
  // The loop's first iterations (at most kEarlyIterations): their wall from the first region's start
  // to the last one's record, and this thread's CPU time over the same span. A thread taken off its
  // CPU (a preemption, a stolen vCPU, a sleep) shows as CPU time short of the wall: what a
  // calibration of a few iterations cannot otherwise tell from its work (harness calibration.h).
  double first_begin_cpu_s = 0;
  std::map<std::string, double> work;  // note_iteration_work
  std::int64_t early_iterations = 0;
  double early_wall_s = 0, early_cpu_s = 0;
  // Instruction counting.
  bool instrumenting = false;  // callgrind instrumentation switched on
  bool collecting = false;     // inside a counted region
  // Instruction counting leaves the first region out: its first calls run the dynamic linker's
  // lazy binding and other one-time paths, so a count over N regions would depend on N.
  std::int64_t regions_begun = 0, regions_counted = 0;
  int perf_fd = -1;
  std::string counter_error;
  Injection injection = read_injection();
};

Record& record() {
  static Record r;
  return r;
}

constexpr std::int64_t kEarlyIterations = 64;

long process_minor_faults() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_minflt;
}

double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

int open_instruction_counter(std::string* error) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_HARDWARE;
  attr.config = PERF_COUNT_HW_INSTRUCTIONS;
  attr.disabled = 1;
  attr.exclude_kernel = 1;  // user-space instructions only: the kernel's share is not the code under test
  attr.exclude_hv = 1;
  const long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
  if (fd < 0) *error = std::string("perf_event_open(instructions): ") + std::strerror(errno);
  return static_cast<int>(fd);
}

void calibrate_injection(Injection& in) {
  // Best of a few timed chains: the rate the work runs at when nothing interferes.
  double best = 0;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = Clock::now();
    benchmark::DoNotOptimize(injected_work_loop(1 << 16));
    const double ns = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
    if (ns > 0) best = std::max(best, (1 << 16) / ns);
  }
  in.loops_per_ns = best > 0 ? best : 1.0;
}

// `ab`'s duet start gate (PAIRBENCH_START_GATE="READY_FD,GO_FD", harness/exec/start_gate.h): the
// process says it is ready (one byte on READY_FD) and blocks until the harness closes GO's write
// end, which wakes both sides of the pair at once. Their timed regions then start together, after
// both set-ups, whichever was launched first: launched one after the other, the first side's timed
// loop could run beside the other's set-up and the second's beside the first's timed loop
// (docs/gate.md, "Duet pairing"). Once per process, before the first region's clock; any error lets it go on.
std::pair<int, int> start_gate_fds() {
  const char* v = std::getenv("PAIRBENCH_START_GATE");
  int ready = -1, go = -1;
  if (!v || std::sscanf(v, "%d,%d", &ready, &go) != 2 || ready < 0 || go < 0) return {-1, -1};
  return {ready, go};
}

void pass_start_gate() {
  static std::once_flag once;
  std::call_once(once, [] {
    const auto [ready, go] = start_gate_fds();
    if (ready < 0) return;
    const char byte = 'r';
    while (write(ready, &byte, 1) < 0 && errno == EINTR) {
    }
    char c;
    while (read(go, &c, 1) < 0 && errno == EINTR) {
    }
    close(ready);
    close(go);
  });
}

}  // namespace

void keep_start_gate_from_children() {
  const auto [ready, go] = start_gate_fds();
  for (const int fd : {ready, go}) {
    if (fd >= 0) fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
}

// Never inlined: planted work then has a function of its own, which the gate's per-function diff
// of instructions names (tests/harness/function_diff_test.cpp); inlined, callgrind would count it
// in inject_work.
[[gnu::noinline]] std::uint64_t injected_work_loop(std::uint64_t loops) {
  std::uint64_t x = 0x9E3779B97F4A7C15ull;
  for (std::uint64_t i = 0; i < loops; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;  // dependent: cannot be vectorised away
    asm volatile("" : "+r"(x));
  }
  return x;
}

void configure_timed_regions(InstructionCounter counter, int batches) {
  Record& r = record();
  r.counter = counter;
  r.batches_wanted = std::max(1, batches);
  if (counter == InstructionCounter::kPerf) r.perf_fd = open_instruction_counter(&r.counter_error);
}

void reset_timed_regions(std::int64_t max_iterations) {
  Record& r = record();
  r.max_iterations = std::max<std::int64_t>(1, max_iterations);
  const auto batches = static_cast<std::size_t>(std::min<std::int64_t>(r.batches_wanted, r.max_iterations));
  r.batch_seconds.assign(batches, 0.0);
  r.batch_iterations.assign(batches, 0);
  r.recorded = 0;
  r.measured_s = 0;
  r.started = false;
  r.early_iterations = 0;
  r.work.clear();
  r.early_wall_s = r.early_cpu_s = 0;
  r.benchmark_begin = Clock::now();
  r.begin_faults = process_minor_faults();
  r.verified_at.reset();
  r.regions_begun = 0;
  r.regions_counted = 0;
  if (r.perf_fd >= 0) ioctl(r.perf_fd, PERF_EVENT_IOC_RESET, 0);
  if (r.counter == InstructionCounter::kCallgrind) CALLGRIND_ZERO_STATS;
}

bool work_injection_active() { return record().injection.active(); }

namespace {
bool g_uses_gpu = false;  // the benchmark now running (declare_gpu_use)
}  // namespace

void declare_gpu_use(bool uses_gpu) { g_uses_gpu = uses_gpu; }

void note_verified() {
  Record& r = record();
  if (!r.started && !r.verified_at) r.verified_at = Clock::now();
}

void region_begin() {
  Record& r = record();
  if (r.injection.fraction > 0 && r.injection.loops_per_ns == 0) calibrate_injection(r.injection);
  pass_start_gate();  // after every set-up of this process, before its first clock
  if (!r.started) {
    r.started = true;
    r.first_begin_faults = process_minor_faults();
    r.first_begin_cpu_s = thread_cpu_s();
    r.first_begin = Clock::now();
  }
  if (r.collecting) return;  // nested or unbalanced: count the outer region only
  if (r.counter != InstructionCounter::kNone && r.regions_begun++ == 0) return;  // the warm-up region
  if (r.counter == InstructionCounter::kCallgrind) {
    if (!r.instrumenting) {
      CALLGRIND_START_INSTRUMENTATION;
      r.instrumenting = true;
    }
    CALLGRIND_TOGGLE_COLLECT;
  } else if (r.perf_fd >= 0) {
    ioctl(r.perf_fd, PERF_EVENT_IOC_ENABLE, 0);
  }
  r.collecting = true;
  ++r.regions_counted;
}

void inject_work(double region_ns) {
  Injection& in = record().injection;
  if (!in.active()) return;
  double loops = in.carry + in.loops_per_region + in.fraction * std::max(0.0, region_ns) * in.loops_per_ns;
  const double whole = std::floor(loops);
  in.carry = loops - whole;
  if (whole >= 1) {
    benchmark::DoNotOptimize(injected_work_loop(static_cast<std::uint64_t>(whole)));
    in.loops_done += static_cast<std::uint64_t>(whole);
  }
}

void region_end() {
  Record& r = record();
  if (!r.collecting) return;
  if (r.counter == InstructionCounter::kCallgrind) {
    CALLGRIND_TOGGLE_COLLECT;
  } else if (r.perf_fd >= 0) {
    ioctl(r.perf_fd, PERF_EVENT_IOC_DISABLE, 0);
  }
  r.collecting = false;
}

void note_iteration_work(const std::map<std::string, double>& work) { record().work = work; }

void record_iteration(benchmark::State& state, double seconds) {
  state.SetIterationTime(seconds);
  Record& r = record();
  if (r.batch_seconds.empty()) reset_timed_regions(state.max_iterations);
  const auto batches = static_cast<std::int64_t>(r.batch_seconds.size());
  const auto b = static_cast<std::size_t>(std::min(batches - 1, r.recorded * batches / r.max_iterations));
  r.batch_seconds[b] += seconds;
  r.batch_iterations[b] += 1;
  r.measured_s += seconds;
  ++r.recorded;
  r.last_record = Clock::now();
  if (r.recorded <= kEarlyIterations) {
    r.early_iterations = r.recorded;
    r.early_wall_s = std::chrono::duration<double>(r.last_record - r.first_begin).count();
    r.early_cpu_s = thread_cpu_s() - r.first_begin_cpu_s;
  }
  // Verification after the loop need not crawl through callgrind's instrumentation.
  if (r.instrumenting && r.recorded >= r.max_iterations && !r.collecting) {
    CALLGRIND_STOP_INSTRUMENTATION;
    r.instrumenting = false;
  }
}

bool write_timed_region_record(const std::string& path, double finished_s) {
  const Record& r = record();
  const Clock::time_point now = Clock::now();
  nlohmann::json out = {
      {"max_iterations", r.max_iterations},
      {"iterations_recorded", r.recorded},
      {"measured_s", r.measured_s},
      {"loop_wall_s", r.started ? std::chrono::duration<double>(r.last_record - r.first_begin).count() : 0.0},
      {"setup_s", std::chrono::duration<double>((r.started ? r.first_begin : now) - r.benchmark_begin).count()},
      {"after_s", r.started ? std::chrono::duration<double>(now - r.last_record).count() : 0.0},
      {"verify_s", r.verified_at ? std::chrono::duration<double>(*r.verified_at - r.benchmark_begin).count() : 0.0},
      {"setup_faults", (r.started ? r.first_begin_faults : process_minor_faults()) - r.begin_faults},
      {"early_iterations", r.early_iterations},
      {"early_wall_s", r.early_wall_s},
      {"early_cpu_s", r.early_cpu_s},
      {"batch_iterations", r.batch_iterations},
      {"batch_seconds", r.batch_seconds}};
  if (!r.work.empty()) out["work_per_iteration"] = r.work;
  if (r.counter != InstructionCounter::kNone) out["counted_regions"] = r.regions_counted;
  switch (r.counter) {
    case InstructionCounter::kNone:
      break;
    case InstructionCounter::kCallgrind:
      // The count itself is in callgrind's output file; the harness reads it there.
      out["instruction_counter"] = "callgrind";
      out["under_valgrind"] = RUNNING_ON_VALGRIND > 0;
      break;
    case InstructionCounter::kPerf: {
      out["instruction_counter"] = "perf";
      std::uint64_t count = 0;
      if (r.perf_fd >= 0 && read(r.perf_fd, &count, sizeof count) == static_cast<ssize_t>(sizeof count)) {
        out["instructions"] = count;
      } else {
        out["instruction_error"] = r.counter_error.empty() ? "reading the counter failed" : r.counter_error;
      }
      break;
    }
  }
  if (r.injection.active()) {
    out["injection"] = {{"slowdown_fraction", r.injection.fraction},
                        {"loops_per_region", r.injection.loops_per_region},
                        {"loops_done", r.injection.loops_done}};
  }
  if (finished_s >= 0) out["finished_s"] = finished_s;
  if (g_uses_gpu) {
    const kernels::cuda::GpuClocks c = kernels::cuda::read_gpu_clocks();
    if (c.available) {
      out["gpu_clock"] = {{"sm_mhz", c.sm_mhz},
                          {"sm_max_mhz", c.sm_max_mhz},
                          {"throttling", kernels::cuda::throttling(c.slowdown_reasons)}};
    }
  }
  if (!write_file_atomically(path, out.dump() + "\n")) {
    std::cerr << "cannot write " << path << "\n";
    return false;
  }
  return true;
}

bool write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".partial";
  {
    std::ofstream out(tmp);
    out << text;
    out.close();
    if (!out) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

}  // namespace pairbench::bench
