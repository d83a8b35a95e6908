// Usable CPUs from the affinity mask (Linux), and scoped pinning; see cpus.h.
#include "kernels/common/cpus.h"

#include <pthread.h>

#include <algorithm>
#include <thread>

namespace pairbench::kernels {
namespace {

struct ProcessCpus {
  cpu_set_t set;
  bool known = false;  // false where sched_getaffinity failed
};

const ProcessCpus& process_cpus() {
  static const ProcessCpus cpus = [] {
    ProcessCpus c;
    CPU_ZERO(&c.set);
    c.known = sched_getaffinity(0, sizeof c.set, &c.set) == 0;
    return c;
  }();
  return cpus;
}

// Read during static initialisation, on the main thread before anything can have pinned it: the
// function-local static alone would be read at the first call, perhaps from a pinned thread.
[[maybe_unused]] const ProcessCpus& process_cpus_at_load = process_cpus();

std::vector<int> cpu_list(const cpu_set_t& set) {
  std::vector<int> out;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) out.push_back(cpu);
  }
  return out;
}

}  // namespace

std::vector<int> usable_cpu_list() {
  const ProcessCpus& cpus = process_cpus();
  return cpus.known ? cpu_list(cpus.set) : std::vector<int>{};
}

int usable_cpus() {
  const ProcessCpus& cpus = process_cpus();
  if (cpus.known) return std::max(1, CPU_COUNT(&cpus.set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

std::string cpus_unavailable_reason(int count) {
  const int have = usable_cpus();
  if (have >= count) return "";
  return "needs " + std::to_string(count) + " usable CPUs, has " + std::to_string(have);
}

std::vector<int> thread_cpu_list() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) != 0) return {};
  return cpu_list(set);
}

bool allow_all_usable_cpus() {
  const ProcessCpus& cpus = process_cpus();
  return cpus.known && pthread_setaffinity_np(pthread_self(), sizeof cpus.set, &cpus.set) == 0;
}

ScopedCpuPin::ScopedCpuPin(int nth_usable_cpu) {
  const std::vector<int> cpus = usable_cpu_list();
  if (nth_usable_cpu < 0 || nth_usable_cpu >= static_cast<int>(cpus.size())) return;
  CPU_ZERO(&previous_);
  if (pthread_getaffinity_np(pthread_self(), sizeof previous_, &previous_) != 0) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpus[static_cast<std::size_t>(nth_usable_cpu)], &one);
  pinned_ = pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0;
}

ScopedCpuPin::~ScopedCpuPin() {
  if (pinned_) pthread_setaffinity_np(pthread_self(), sizeof previous_, &previous_);
}

}  // namespace pairbench::kernels
