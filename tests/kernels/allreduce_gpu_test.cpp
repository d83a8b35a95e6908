// GPU all-reduce: peer-copy gather_broadcast and NCCL's ring against the exact host sum on every
// device, for P = 1 (any GPU) and P = 2..device count. Always compiled; skipped with the reason
// where there is no CUDA device, fewer devices than a case needs, or no NCCL.
#include <gtest/gtest.h>

#include <vector>

#include "kernels/collective/gpu_allreduce.h"

namespace pairbench::kernels::collective::gpu {
namespace {

void check_all_reduce(int p, Algorithm algorithm) {
  for (std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{4099}, (std::size_t{1} << 20) + 5}) {
    SCOPED_TRACE(::testing::Message() << algorithm_name(algorithm) << " P=" << p << " N=" << n);
    GpuAllReduce gpus(p, n);
    const std::uint64_t seed = fresh_seed();
    std::vector<float> host(n), want(n);
    for (int q = 0; q < p; ++q) {
      fill_gradients(host, seed, q);
      gpus.upload(q, host);
    }
    reference_sum(want, seed, p);
    gpus.poison_staging();
    gpus.enqueue(algorithm);
    gpus.synchronize();
    for (int q = 0; q < p; ++q) {
      gpus.download(q, host);
      ASSERT_EQ(first_difference(host, want), n) << "participant " << q;
    }
    gpus.enqueue(algorithm);  // two more runs: p^2 times the sum, exactly
    gpus.enqueue(algorithm);
    gpus.synchronize();
    for (float& w : want) w *= static_cast<float>(p * p);
    for (int q = 0; q < p; ++q) {
      gpus.download(q, host);
      ASSERT_EQ(first_difference(host, want), n) << "after repeats, participant " << q;
    }
  }
}

int device_count() {
  int p = 0;
  while (p < 8 && kernels::cuda::devices_unavailable_reason(p + 1).empty()) ++p;
  return p;
}

TEST(AllreduceGpuTest, GatherBroadcastEqualsHostSum) {
  if (const std::string why = kernels::cuda::devices_unavailable_reason(1); !why.empty())
    GTEST_SKIP() << "skipped: " << why;
  for (int p = 1; p <= device_count(); ++p) check_all_reduce(p, Algorithm::kGatherBroadcast);
  if (const std::string why = kernels::cuda::devices_unavailable_reason(2); !why.empty()) {
    GTEST_SKIP() << "skipped (P = 1 passed): " << why;
  }
}

TEST(AllreduceGpuTest, NcclRingEqualsHostSum) {
  if (const std::string why = kernels::cuda::devices_unavailable_reason(1); !why.empty())
    GTEST_SKIP() << "skipped: " << why;
  if (const std::string why = nccl_unavailable_reason(); !why.empty()) GTEST_SKIP() << "skipped: " << why;
  for (int p = 1; p <= device_count(); ++p) check_all_reduce(p, Algorithm::kRing);
  if (const std::string why = kernels::cuda::devices_unavailable_reason(2); !why.empty()) {
    GTEST_SKIP() << "skipped (P = 1 passed): " << why;
  }
}

TEST(AllreduceGpuTest, BadInput) {
  if (const std::string why = kernels::cuda::devices_unavailable_reason(1); !why.empty())
    GTEST_SKIP() << "skipped: " << why;
  EXPECT_THROW(GpuAllReduce(0, 10), std::invalid_argument);
  EXPECT_THROW(GpuAllReduce(1, 0), std::invalid_argument);
  EXPECT_THROW(GpuAllReduce(device_count() + 1, 10), NotSupported);
  GpuAllReduce one(1, 10);
  std::vector<float> nine(9), ten(10);
  EXPECT_THROW(one.upload(0, nine), std::invalid_argument);
  EXPECT_THROW(one.upload(1, ten), std::out_of_range);
}

TEST(AllreduceGpuTest, ReasonsNameTheDeviceCount) {
  const std::string why = kernels::cuda::devices_unavailable_reason(1000);
  EXPECT_FALSE(why.empty());
  const bool known = why.rfind("no CUDA device", 0) == 0 || why.rfind("needs >= 1000 CUDA devices, found ", 0) == 0 ||
                     why.rfind("not compiled with CUDA", 0) == 0;
  EXPECT_TRUE(known) << why;
}

}  // namespace
}  // namespace pairbench::kernels::collective::gpu
