// AsyncEngine's waiting primitives, shared by the frontend (queue, futures) and the workers:
// pause-spin with a deadline, a test-and-test-and-set lock, the CPU a thread is on, and the
// membarrier set-up behind the asymmetric push / park fence pair (AsyncEngine::Impl).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#if defined(__linux__)
#include <linux/membarrier.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace pairbench::kernels::engine {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

inline int current_cpu() {
#if defined(__linux__)
  return sched_getcpu();
#else
  return -1;
#endif
}

// Lost wake-ups are Dekker races: one side publishes (work, progress), then reads the other
// side's "parked" count; the other increments that count, then re-checks for the publication
// before sleeping. Both sides need a full fence in between. The frontend's push is the hot side
// that matters: a fence there drains the store buffer, i.e. waits for the cross-core misses on
// the ring line and tail (measured ~0.1 us per push on the 2-core VM, more than the whole push).
// So, when membarrier(PRIVATE_EXPEDITED) is available and workers spin before parking, the push
// uses only a compiler barrier and a parking worker runs membarrier instead, which makes every
// running thread of the process execute the full barrier the push skipped. membarrier costs
// ~1 us, or ~50 us with another thread running (IPIs to a busy vCPU), so it stays off with
// spin_ns below kAsymmetricMinSpinNs, where workers park after every op.
constexpr std::int64_t kAsymmetricMinSpinNs = 10'000;

// True if this process may use membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) (now registered).
inline bool register_membarrier() {
#if defined(__linux__) && defined(SYS_membarrier)
  const long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0);
  if (cmds < 0 || (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
  return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0) == 0;
#else
  return false;
#endif
}

inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Spins until pred() holds or spin_ns elapse; returns pred()'s last value. Never parks. Mostly
// pause (~20 ns here); every kCheckRounds rounds it reads the clock and yields, so a descheduled
// peer can run when threads outnumber cores (a yield costs ~1.2 us on the 2-core VM, hence not
// every round).
constexpr std::uint32_t kCheckRounds = 64;
template <class Pred>
bool spin_until(Pred&& pred, std::int64_t spin_ns) {
  if (pred()) return true;
  if (spin_ns <= 0) return false;
  const std::int64_t deadline = now_ns() + spin_ns;
  for (std::uint32_t round = 1;; ++round) {
    if (pred()) return true;
    if (round % kCheckRounds == 0) {
      if (now_ns() >= deadline) return pred();
      std::this_thread::yield();
    } else {
      cpu_relax();
    }
  }
}

// Test-and-test-and-set lock; held for a bounded scheduler pass, so spinning (with yields for
// the oversubscribed case) beats a futex mutex.
class SpinLock {
 public:
  void lock() {
    for (std::uint32_t round = 1;; ++round) {
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      while (locked_.load(std::memory_order_relaxed)) {
        if (++round % kCheckRounds == 0) {
          std::this_thread::yield();
        } else {
          cpu_relax();
        }
      }
    }
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace pairbench::kernels::engine
