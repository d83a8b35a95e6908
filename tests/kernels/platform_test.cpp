// kernels/common, the platform layer: splitmix64 against its published reference values, the fill
// helpers' ranges and exactness, usable CPUs against the affinity mask, scoped pinning,
// NotSupported's contract, the one device query's reasons, and the CUDA seam's entry points in
// the build without CUDA.
#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "kernels/collective/gpu_allreduce.h"
#include "kernels/common/cpus.h"
#include "kernels/common/cuda_seam.h"
#include "kernels/common/device.h"
#include "kernels/common/gpu_clocks.h"
#include "kernels/common/not_supported.h"
#include "kernels/common/rng.h"
#include "kernels/dispatch/async_engine.h"
#include "kernels/dispatch/cuda_stream_ops.h"
#include "kernels/gemm/cublas_gemm.h"
#include "kernels/loader/cuda_consumer.h"

namespace pk = pairbench::kernels;

namespace {

// The first outputs of splitmix64 seeded with 0 (Vigna's reference splitmix64.c).
constexpr std::uint64_t kReferenceFromZero[] = {0xE220A8397B1DCDAFull, 0x6E789E6AA1B965F4ull, 0x06C45D188009454Full,
                                                0xF88BB8A8724C81ECull};

TEST(Rng, SequentialStreamMatchesTheReference) {
  std::uint64_t state = 0;
  for (std::uint64_t expected : kReferenceFromZero) EXPECT_EQ(pk::splitmix64_next(state), expected);
  EXPECT_EQ(state, 4 * pk::kSplitMix64Gamma);
}

TEST(Rng, CounterBasedFormIsTheSequentialStreamAtThatState) {
  static_assert(pk::splitmix64(0) == kReferenceFromZero[0], "usable in constant expressions");
  for (std::uint64_t x : {std::uint64_t{0}, std::uint64_t{1}, pk::fresh_seed(), ~std::uint64_t{0}}) {
    std::uint64_t state = x;
    EXPECT_EQ(pk::splitmix64(x), pk::splitmix64_next(state)) << x;
    EXPECT_EQ(state, x + pk::kSplitMix64Gamma);
  }
  EXPECT_EQ(pk::splitmix64(pk::kSplitMix64Gamma), kReferenceFromZero[1]);
}

TEST(Rng, UnitDoubleCoversZeroToJustBelowOne) {
  EXPECT_EQ(pk::unit_double(0), 0.0);
  EXPECT_EQ(pk::unit_double(~std::uint64_t{0}), 1.0 - 0x1.0p-53);
  EXPECT_EQ(pk::unit_double(std::uint64_t{1} << 63), 0.5);
}

TEST(Rng, Float24IsExactAndHalfOpen) {
  EXPECT_EQ(pk::float24(0, -1.0f, 2.0f), -1.0f);
  EXPECT_EQ(pk::float24(~std::uint64_t{0}, -1.0f, 2.0f), 1.0f - 0x1p-23f);
  EXPECT_EQ(pk::float24(std::uint64_t{1} << 63, -8.0f, 16.0f), 0.0f);
  // Every value is a multiple of width / 2^24 from lo: no rounding anywhere in the range.
  std::uint64_t state = pk::fresh_seed();
  for (int i = 0; i < 1000; ++i) {
    const std::uint64_t bits = pk::splitmix64_next(state);
    EXPECT_EQ(static_cast<double>(pk::float24(bits, -8.0f, 16.0f)), static_cast<double>(bits >> 40) * 0x1.0p-20 - 8.0);
  }
}

TEST(Rng, FillUniformIsTheSeededStreamInRange) {
  const std::uint64_t seed = pk::fresh_seed();
  std::vector<float> a(4096), b(4096), c(4096);
  pk::fill_uniform(a, seed, -1.0f, 2.0f);
  pk::fill_uniform(b, seed, -1.0f, 2.0f);
  pk::fill_uniform(c, seed + 1, -1.0f, 2.0f);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  std::uint64_t state = seed;
  EXPECT_EQ(a[0], pk::float24(pk::splitmix64_next(state), -1.0f, 2.0f));
  EXPECT_EQ(a[1], pk::float24(pk::splitmix64_next(state), -1.0f, 2.0f));
  for (float v : a) {
    EXPECT_GE(v, -1.0f);
    EXPECT_LT(v, 1.0f);
  }
  // Uniform enough to fill both halves (a broken shift would pin everything to one end).
  EXPECT_TRUE(std::any_of(a.begin(), a.end(), [](float v) { return v < -0.5f; }));
  EXPECT_TRUE(std::any_of(a.begin(), a.end(), [](float v) { return v > 0.5f; }));
}

TEST(Rng, FreshSeedsDiffer) { EXPECT_NE(pk::fresh_seed(), pk::fresh_seed()); }

TEST(Cpus, ListIsTheAffinityMaskAscending) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  ASSERT_EQ(sched_getaffinity(0, sizeof mask, &mask), 0);
  const std::vector<int> cpus = pk::usable_cpu_list();
  ASSERT_EQ(static_cast<int>(cpus.size()), CPU_COUNT(&mask));
  EXPECT_TRUE(std::is_sorted(cpus.begin(), cpus.end()));
  EXPECT_EQ(std::adjacent_find(cpus.begin(), cpus.end()), cpus.end());
  for (int cpu : cpus) EXPECT_TRUE(CPU_ISSET(cpu, &mask)) << cpu;
  EXPECT_EQ(pk::usable_cpus(), static_cast<int>(cpus.size()));
}

// limits.core_pingpong's hang: the benchmark function pinned the main thread and never undid
// it, so the next call's partner thread inherited one CPU. A scoped pin gives the mask back.
TEST(Cpus, ScopedPinNarrowsTheThreadAndRestoresItsMask) {
  const std::vector<int> cpus = pk::usable_cpu_list();
  ASSERT_FALSE(cpus.empty());
  const std::vector<int> before = pk::thread_cpu_list();  // the test's main thread, as a bench's
  {
    const pk::ScopedCpuPin pin(static_cast<int>(cpus.size()) - 1);
    EXPECT_TRUE(pin.pinned());
    EXPECT_EQ(pk::thread_cpu_list(), std::vector<int>{cpus.back()});
    EXPECT_EQ(pk::usable_cpu_list(), cpus);  // the process's CPUs, whatever this thread's mask
    EXPECT_EQ(pk::usable_cpus(), static_cast<int>(cpus.size()));
  }
  EXPECT_EQ(pk::thread_cpu_list(), before);
  for (const int nth : {static_cast<int>(cpus.size()), -1}) {
    const pk::ScopedCpuPin pin(nth);
    EXPECT_FALSE(pin.pinned()) << nth;
    EXPECT_EQ(pk::thread_cpu_list(), before) << nth;
  }
  EXPECT_EQ(pk::thread_cpu_list(), before);
}

// Pinning picks the n-th of the process's CPUs, not of the calling thread's mask: a thread
// already pinned, or started by a pinned thread, can still pin to any of them.
TEST(Cpus, PinningPicksFromTheProcessCpusWhenTheThreadIsNarrowed) {
  const std::vector<int> cpus = pk::usable_cpu_list();
  if (cpus.size() < 2) GTEST_SKIP() << "needs 2 usable CPUs, has " << cpus.size();
  std::vector<int> outer, inner, restored, child_inherited, child_pinned;
  bool inner_pinned = false, child_did_pin = false;
  std::thread([&] {
    const pk::ScopedCpuPin pin(0);
    outer = pk::thread_cpu_list();
    {
      const pk::ScopedCpuPin nested(1);
      inner_pinned = nested.pinned();
      inner = pk::thread_cpu_list();
    }
    restored = pk::thread_cpu_list();
    std::thread([&] {
      child_inherited = pk::thread_cpu_list();
      const pk::ScopedCpuPin child_pin(1);
      child_did_pin = child_pin.pinned();
      child_pinned = pk::thread_cpu_list();
    }).join();
  }).join();
  EXPECT_EQ(outer, std::vector<int>{cpus[0]});
  EXPECT_TRUE(inner_pinned);
  EXPECT_EQ(inner, std::vector<int>{cpus[1]});
  EXPECT_EQ(restored, std::vector<int>{cpus[0]});  // nested pins restore in reverse order
  EXPECT_EQ(child_inherited, std::vector<int>{cpus[0]});
  EXPECT_TRUE(child_did_pin);
  EXPECT_EQ(child_pinned, std::vector<int>{cpus[1]});
}

TEST(Cpus, AllowAllUsableCpusUndoesAnInheritedPin) {
  const std::vector<int> cpus = pk::usable_cpu_list();
  ASSERT_FALSE(cpus.empty());
  bool allowed = false;
  std::vector<int> inherited, after;
  std::thread([&] {
    const pk::ScopedCpuPin pin(0);
    std::thread([&] {
      inherited = pk::thread_cpu_list();
      allowed = pk::allow_all_usable_cpus();
      after = pk::thread_cpu_list();
    }).join();
  }).join();
  EXPECT_EQ(inherited, std::vector<int>{cpus[0]});
  EXPECT_TRUE(allowed);
  EXPECT_EQ(after, cpus);
}

TEST(Cpus, UnavailableReasonNamesNeededAndUsable) {
  const int have = pk::usable_cpus();
  EXPECT_EQ(pk::cpus_unavailable_reason(1), "");
  EXPECT_EQ(pk::cpus_unavailable_reason(have), "");
  EXPECT_EQ(pk::cpus_unavailable_reason(have + 1),
            "needs " + std::to_string(have + 1) + " usable CPUs, has " + std::to_string(have));
}

// The engine's workers may run on every CPU of the process even when the frontend that started
// them is pinned (they would otherwise inherit its one CPU and spin beside it).
TEST(Cpus, AsyncEngineWorkersOfAPinnedFrontendGetTheProcessCpus) {
  const std::vector<int> cpus = pk::usable_cpu_list();
  ASSERT_FALSE(cpus.empty());
  std::vector<int> frontend, worker;
  std::thread([&] {
    const pk::ScopedCpuPin pin(0);
    frontend = pk::thread_cpu_list();
    pk::AsyncEngine engine(pk::AsyncEngineOptions{.workers = 1});
    const pk::BufferId out = engine.new_buffer();
    engine.push([](void* ctx) { *static_cast<std::vector<int>*>(ctx) = pk::thread_cpu_list(); }, &worker, {}, {out});
    engine.wait_all();
  }).join();
  EXPECT_EQ(frontend, std::vector<int>{cpus[0]});
  EXPECT_EQ(worker, cpus);
}

TEST(NotSupported, IsARuntimeErrorCarryingItsReason) {
  static_assert(std::is_base_of_v<std::runtime_error, pairbench::NotSupported>);
  try {
    throw pairbench::NotSupported("needs 2 GiB of host memory; MemAvailable is 1.1 GiB");
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "needs 2 GiB of host memory; MemAvailable is 1.1 GiB");
    EXPECT_NE(dynamic_cast<const pairbench::NotSupported*>(&e), nullptr);
  }
}

// ---- device.h and cuda_seam.h -------------------------------------------------------------------

namespace pc = pairbench::kernels::cuda;

TEST(Device, QueryGivesADeviceOrTheReasonReportsKeyOn) {
  const pc::DeviceInfo info = pc::query_device();
  if (info.available) {
    EXPECT_TRUE(info.reason.empty());
    EXPECT_GE(info.device_count, 1);
    EXPECT_FALSE(info.name.empty());
    EXPECT_GE(info.compute_capability_major, 1);
    EXPECT_EQ(pc::device_unavailable_reason(), "");
    EXPECT_EQ(pc::devices_unavailable_reason(info.device_count), "");
    return;
  }
#if PAIRBENCH_HAVE_CUDA
  EXPECT_TRUE(info.reason.rfind("no CUDA device", 0) == 0 || info.reason == "cudaGetDeviceProperties failed")
      << info.reason;
  EXPECT_GT(info.runtime_version, 0);
#else
  EXPECT_EQ(info.reason, "not compiled with CUDA (nvcc not found at configure time)");
  EXPECT_EQ(info.runtime_version, 0);
#endif
  EXPECT_EQ(info.device_count, 0);
  EXPECT_EQ(pc::device_unavailable_reason(), info.reason);
  EXPECT_EQ(pc::devices_unavailable_reason(1), info.reason);
}

TEST(Device, TooFewDevicesNamesBothCounts) {
  const pc::DeviceInfo info = pc::query_device();
  if (!info.available) GTEST_SKIP() << "skipped: " << info.reason;
  const int wanted = info.device_count + 1;
  EXPECT_EQ(pc::devices_unavailable_reason(wanted),
            "needs >= " + std::to_string(wanted) + " CUDA devices, found " + std::to_string(info.device_count));
}

// A family's entry points in the build without CUDA: the seam's marks are their definitions.
TEST(CudaSeam, WithoutCudaEntryPointsThrowNotSupportedAndQueriesAnswer) {
#if PAIRBENCH_HAVE_CUDA
  GTEST_SKIP() << "built with CUDA: each family's .cu defines its entry points";
#else
  try {
    pc::StreamOps ops(16);
    ADD_FAILURE() << "StreamOps was constructed without CUDA";
  } catch (const pairbench::NotSupported& e) {
    EXPECT_STREQ(e.what(), "not compiled with CUDA");
  }
  EXPECT_THROW(pairbench::kernels::loader::cuda::pinned_allocate(64), pairbench::NotSupported);
  EXPECT_NO_THROW(pairbench::kernels::loader::cuda::pinned_free(nullptr));
  EXPECT_EQ(pairbench::kernels::collective::gpu::nccl_unavailable_reason(), pc::kNotCompiledWithCudaReason);
  EXPECT_EQ(pc::gemm_unsupported_reason(pairbench::kernels::elementwise::Precision::kFp32),
            pc::kNotCompiledWithCudaReason);
#endif
}

}  // namespace

// kernels/common/gpu_clocks.h: which NVML clock reasons count as throttling, and no driver here.
namespace pairbench::kernels::cuda {
namespace {

TEST(GpuClocks, ThrottlingNamesTheSlowingReasonsOnly) {
  EXPECT_EQ(throttling(0), "");
  EXPECT_EQ(throttling(0x1 | 0x2 | 0x10 | 0x100), "");  // idle, application clocks, sync boost, display
  EXPECT_EQ(throttling(0x40), "thermal (hardware)");
  EXPECT_EQ(throttling(0x4 | 0x8), "hardware slowdown, power cap");
  EXPECT_EQ(throttling(0x20 | 0x80), "thermal (software), power brake");
}

TEST(GpuClocks, WithoutADriverSaysWhy) {
  const GpuClocks c = read_gpu_clocks();
  if (c.available) GTEST_SKIP() << "an NVIDIA driver is here: SM " << c.sm_mhz << " MHz";
  EXPECT_FALSE(c.reason.empty());
  EXPECT_EQ(c.sm_mhz, 0u);
}

}  // namespace
}  // namespace pairbench::kernels::cuda
