// limits.core_pingpong: this machine's cross-core round-trip latency, the physical floor under
// any synchronous hand-off between a frontend and a backend thread (C3's sync arm, C18).
#include <atomic>
#include <string>
#include <thread>

#include "bench/common/exec.h"
#include "bench/common/experiment.h"
#include "kernels/common/cpus.h"

namespace pairbench::bench {
namespace {

enum class Handoff { kSpin, kFutex };

// One round trip: main writes 2k+1, the partner answers 2k+2. Spin: both busy-poll the cache line.
// Futex: both park in std::atomic::wait, so every hand-off is a kernel wake-up.
void run(benchmark::State& state, const Point& p, Handoff handoff) {
  constexpr std::int64_t kRoundTrips = 1000;  // per iteration
  // The flag is all the threads share while they run, alone on its cache line: the partner keeps
  // its count of answers in a register and learns to stop from the flag. (A count on main's stack
  // beside main's lambda captures, or a stop flag read on every spin, moved a line once more per
  // round trip: ~170 or ~80 ns instead of ~65 ns on a 2-vCPU EPYC, by the stack layout.)
  constexpr std::int64_t kStop = -1;
  struct alignas(64) Line {
    std::atomic<std::int64_t> flag{0};
  } line;
  std::atomic<std::int64_t>& flag = line.flag;
  auto wait_until = [&](std::int64_t value) {
    if (handoff == Handoff::kSpin) {
      while (flag.load(std::memory_order_acquire) != value) {
      }
    } else {
      for (std::int64_t seen = flag.load(std::memory_order_acquire); seen != value;
           seen = flag.load(std::memory_order_acquire)) {
        flag.wait(seen, std::memory_order_acquire);
      }
    }
  };
  auto post = [&](std::int64_t value) {
    flag.store(value, std::memory_order_release);
    if (handoff == Handoff::kFutex) flag.notify_one();
  };
  std::int64_t answered = 0;  // written by the partner when it stops
  std::thread partner([&, handoff] {
    const kernels::ScopedCpuPin pin(1);  // the second usable CPU (the arm needs two)
    std::int64_t count = 0;
    for (std::int64_t k = 0;; ++k) {
      // The partner spins or parks waiting for 2k+1, or for kStop.
      std::int64_t seen = flag.load(std::memory_order_acquire);
      for (; seen != 2 * k + 1 && seen != kStop; seen = flag.load(std::memory_order_acquire)) {
        if (handoff == Handoff::kFutex) flag.wait(seen, std::memory_order_acquire);
      }
      if (seen == kStop) {
        answered = count;
        return;
      }
      ++count;
      post(2 * k + 2);
    }
  });
  // Main pins itself only after starting the partner, and only until this call returns: a thread
  // left pinned would hand its one-CPU mask to the next call's partner.
  const kernels::ScopedCpuPin pin(0);
  std::int64_t k = 0;
  exec(state, Work{.ops = static_cast<double>(kRoundTrips)}, [&] {
    for (std::int64_t i = 0; i < kRoundTrips; ++i, ++k) {
      post(2 * k + 1);
      wait_until(2 * k + 2);
    }
  });
  post(kStop);  // main's last 2k+1 was answered, so the partner is waiting for 2k+1 or kStop
  partner.join();
  // Every round trip must have been answered exactly once.
  if (answered != k) return fail_verification(state, "round trips answered != round trips sent");
  mark_verified(state);
}

// A round trip between two cores needs two CPUs. On one, every spinning hand-off waits for the
// scheduler's time slice (milliseconds instead of ~200 ns), and a parked one measures a context
// switch on one core, not the cross-core limit this experiment stands for.
std::string needs_two_cpus(const Point&) { return kernels::cpus_unavailable_reason(2); }

}  // namespace

// Expect: a spinning round trip costs ~100-300 ns between two cores of a VM; a futex round trip
// costs tens of microseconds (two wake-ups through the hypervisor). A sync dispatch arm cannot
// beat the first; an engine that parks on every wait pays the second.
PAIRBENCH_EXPERIMENT(core_pingpong) {
  return Experiment{
      .name = "limits.core_pingpong",
      .question = "How long does a round trip between two cores take, spinning and parked?",
      .arms = {{.name = "spin",
                .run = [](benchmark::State& s, const Point& p) { run(s, p, Handoff::kSpin); },
                .unavailable = needs_two_cpus},
               {.name = "futex",
                .run = [](benchmark::State& s, const Point& p) { run(s, p, Handoff::kFutex); },
                .unavailable = needs_two_cpus}},
      .timing = Timing::kWallClock,
      .metric = {.name = "ns_per_op", .unit = "ns", .better = Better::kLower},
      .is_limit = true,
      .threads = [](const Arm&, const Point&) { return 2; },  // main and its partner, a core each
  };
}

}  // namespace pairbench::bench
