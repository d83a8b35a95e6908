// The CPUs this process may run on: its affinity mask (sched_getaffinity), the one place every
// kernel family, bench and the harness ask. No cgroup CPU quota is read: a quota limits time,
// not which CPUs a thread may be on, and the pinning below needs CPUs.
#pragma once

#include <vector>

namespace pairbench::kernels {

// The calling thread's allowed CPUs, ascending; empty where the mask cannot be read.
std::vector<int> usable_cpu_list();
// How many CPUs this process may run on, at least 1: the mask's size, or
// std::thread::hardware_concurrency() where the mask cannot be read.
int usable_cpus();
// Pins the calling thread to the `nth_usable_cpu`-th (0-based) of usable_cpu_list(). Returns false
// when there is no such CPU or the kernel refuses.
bool pin_to_cpu(int nth_usable_cpu);

}  // namespace pairbench::kernels
