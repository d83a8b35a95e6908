// limits.memory_bandwidth: this machine's host memory bandwidth with glibc memcpy and STREAM's
// copy and triad loops, on one thread and on every usable core, in bytes read + written per
// second (STREAM's counting: copy 2 x array bytes, triad 3 x). The yardstick for copy.* CPU arms.
#include <algorithm>
#include <cstring>
#include <string>

#include "bench/common/exec.h"
#include "bench/common/experiment.h"
#include "kernels/common/cpus.h"
#include "kernels/common/pages.h"
#include "kernels/common/rng.h"
#include "kernels/copy/host_buffer.h"
#include "kernels/copy/host_copy.h"
#include "kernels/copy/thread_team.h"
#include "kernels/copy/verify.h"

namespace pairbench::bench {
namespace {

namespace kc = kernels::copy;
enum class Kernel { kMemcpy, kCopy, kTriad };
constexpr double kScalar = 3.0;
constexpr std::size_t kGranule = 4096 / sizeof(double);  // each thread's share starts on a page

void run(benchmark::State& state, const Point& p, Kernel kernel) {
  const int threads = p.get("threads") == "all" ? kernels::usable_cpus() : static_cast<int>(p.get_int("threads"));
  const auto bytes = static_cast<std::size_t>(p.get_int("array_bytes"));
  const std::size_t n = bytes / sizeof(double);
  const int arrays = kernel == Kernel::kTriad ? 3 : 2;
  kc::require_host_memory(static_cast<std::size_t>(arrays) * bytes, "the STREAM arrays");
  // On one NUMA node where a page sits does not depend on who touched it first: the arrays come
  // pre-faulted (reused from the benchmark before in a shared process); on several, untouched.
  const kc::PageState pages = kernels::single_numa_node() ? kc::PageState::kPrefaulted : kc::PageState::kUntouched;
  kc::HostBuffer abuf(bytes, pages), bbuf(bytes, pages), cbuf(kernel == Kernel::kTriad ? bytes : 0, pages);
  auto* a = reinterpret_cast<double*>(abuf.data());
  auto* b = reinterpret_cast<double*>(bbuf.data());
  auto* c = reinterpret_cast<double*>(cbuf.data());
  kc::ThreadTeam team(threads);
  // Each thread first-touches its own share, so on a NUMA host its pages sit on its own node.
  // Inputs are small random integers: triad's result is then exact and compared with ==.
  const std::uint64_t seed = kc::fresh_seed();
  team.run([&](int m, int members) {
    const auto [lo, hi] = kc::share(n, m, members, kGranule);
    for (double* x : {a, b, c}) {
      if (x) kernels::populate_pages(x + lo, (hi - lo) * sizeof(double));  // this thread's share, in one call
    }
    std::uint64_t rng = kernels::splitmix64(seed ^ static_cast<std::uint64_t>(m));  // a stream per thread
    for (std::size_t i = lo; i < hi; ++i) {
      a[i] = -1;  // poison
      b[i] = static_cast<double>(kernels::splitmix64_next(rng) & 0xFFFF);
      if (c) c[i] = static_cast<double>(kernels::splitmix64_next(rng) & 0xFFFF);
    }
  });
  auto pass = [&](int m, int members) {
    const auto [lo, hi] = kc::share(n, m, members, kGranule);
    switch (kernel) {
      case Kernel::kMemcpy:
        std::memcpy(a + lo, b + lo, (hi - lo) * sizeof(double));
        break;
      case Kernel::kCopy:
        kc::stream_copy(a + lo, b + lo, hi - lo);
        break;
      case Kernel::kTriad:
        kc::stream_triad(a + lo, b + lo, c + lo, kScalar, hi - lo);
        break;
    }
  };
  auto wrong_at = [&](std::size_t i) {
    const double want = kernel == Kernel::kTriad ? b[i] + kScalar * c[i] : b[i];
    return a[i] != want;
  };
  team.run(pass);
  for (std::size_t i = 0; i < n; ++i) {
    if (wrong_at(i)) return fail_verification(state, "a[" + std::to_string(i) + "] is wrong");
  }
  mark_verified(state);
  std::fill(a, a + n, -1.0);

  // Bytes read + written per pass, as STREAM counts them (no write-allocate traffic).
  const double moved = static_cast<double>(arrays) * static_cast<double>(n * sizeof(double));
  exec(state, Work{.bytes = moved}, [&] { team.run(pass); });
  for (std::size_t i = 0; i < n; i += 4099) {  // a spot check: every 4099th element
    if (wrong_at(i)) return fail_verification(state, "a[" + std::to_string(i) + "] is wrong after timing");
  }
  state.counters["worker_threads"] = threads;  // "threads" is Google Benchmark's own field
}

ArmFn arm(Kernel kernel) {
  return [kernel](benchmark::State& s, const Point& p) { run(s, p, kernel); };
}

}  // namespace

// Expect: one thread reaches 10-25 GB/s (a single core's outstanding misses, not the DRAM, are
// the bound), all cores 1.5-4x that on a small VM and up to ~80 % of the DRAM channels on a big
// host. memcpy ~ copy at 64 MiB, where glibc still uses ordinary stores (it streams only above
// x86_non_temporal_threshold, 127 MiB on the development VM); memcpy > copy at 256 MiB, where its
// streaming stores skip the read-for-ownership that STREAM's counting does not credit. Arrays
// are 64 MiB (quick) and 256 MiB (nightly), past the 32 MiB of L3 one core of this VM's CPU sees.
PAIRBENCH_EXPERIMENT(memory_bandwidth) {
  return Experiment{
      .name = "limits.memory_bandwidth",
      .question = "How many bytes per second can this machine read and write in host memory, on one core and on all?",
      .arms = {{.name = "memcpy", .run = arm(Kernel::kMemcpy)},
               {.name = "copy", .run = arm(Kernel::kCopy)},
               {.name = "triad", .run = arm(Kernel::kTriad)}},
      .grid = {{.name = "threads", .quick = {"1", "all"}},
               {.name = "array_bytes", .quick = {"67108864"}, .nightly = {"268435456"}}},
      .timing = Timing::kWallClock,
      .metric = {.name = "bytes_per_second", .unit = "B/s", .better = Better::kHigher},
      .is_limit = true,
      .threads = [](const Arm&, const Point& p) { return threads_from_axis(p, "threads"); },
  };
}

}  // namespace pairbench::bench
