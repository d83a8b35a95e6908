// Usable CPUs from the affinity mask (Linux); see cpus.h.
#include "kernels/common/cpus.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <thread>

namespace pairbench::kernels {

std::vector<int> usable_cpu_list() {
  std::vector<int> out;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) out.push_back(cpu);
  }
  return out;
}

int usable_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

bool pin_to_cpu(int nth_usable_cpu) {
  const std::vector<int> cpus = usable_cpu_list();
  if (nth_usable_cpu < 0 || nth_usable_cpu >= static_cast<int>(cpus.size())) return false;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpus[static_cast<std::size_t>(nth_usable_cpu)], &one);
  return pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
}

}  // namespace pairbench::kernels
