// The CPUs this process may run on, the one place every kernel family, bench and the harness ask,
// and the one way to pin a thread to one of them. No cgroup CPU quota is read: a quota limits
// time, not which CPUs a thread may be on, and the pinning below needs CPUs.
//
// "This process's CPUs" is the affinity mask the process started with (taskset, the harness's
// duet placement), read once before main. Not the calling thread's mask: pinning narrows that to
// one CPU, and a thread started by a pinned thread inherits the narrowed mask, so a benchmark
// function called a second time from a thread an earlier call left pinned saw one CPU and put
// both threads of a spin hand-off on it (limits.core_pingpong hung in Google Benchmark's ramp).
#pragma once

#include <sched.h>

#include <string>
#include <vector>

namespace pairbench::kernels {

// This process's CPUs, ascending; empty where the mask cannot be read. The same answer in every
// thread, pinned or not.
std::vector<int> usable_cpu_list();
// How many CPUs this process may run on, at least 1: usable_cpu_list()'s size, or
// std::thread::hardware_concurrency() where the mask cannot be read.
int usable_cpus();
// "" when this process may run on `count` CPUs, else "needs <count> usable CPUs, has <n>": for
// arms whose threads must each have a CPU (spin hand-offs), as their not_supported reason.
std::string cpus_unavailable_reason(int count);

// The calling thread's own affinity mask, ascending: what pinning narrowed it to. For checks;
// choose CPUs from usable_cpu_list().
std::vector<int> thread_cpu_list();
// Gives the calling thread every CPU of usable_cpu_list() again. For threads that place
// themselves (the async engine's workers): they inherit their creator's mask, which may be one
// CPU if the creator was pinned. Returns false where the kernel refuses.
bool allow_all_usable_cpus();

// Pins the calling thread to the `nth_usable_cpu`-th (0-based) of usable_cpu_list() for the
// object's lifetime, and gives it back the mask it had before on destruction, so no thread stays
// pinned after the code that pinned it. pinned() is false, and the mask untouched, when there is
// no such CPU or the kernel refuses. Make and destroy it on the same thread; nested pins restore
// in reverse order. Threads started while it lives inherit the one CPU.
class ScopedCpuPin {
 public:
  explicit ScopedCpuPin(int nth_usable_cpu);
  ~ScopedCpuPin();
  ScopedCpuPin(const ScopedCpuPin&) = delete;
  ScopedCpuPin& operator=(const ScopedCpuPin&) = delete;

  bool pinned() const { return pinned_; }

 private:
  cpu_set_t previous_{};
  bool pinned_ = false;
};

}  // namespace pairbench::kernels
