// The CUDA dispatch workload against host references: every wait mode, read-back, accumulation,
// graph replay. Always compiled; skipped with the reason where there is no CUDA device.
#include "kernels/common/device.h"
#include "kernels/dispatch/cuda_stream_ops.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace pairbench::kernels::cuda {
namespace {

class CudaStreamOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const DeviceInfo info = query_device();
    if (!info.available) GTEST_SKIP() << "skipped: " << info.reason;
  }
  // A fresh random starting value: never zeros, so an unwritten output cannot pass.
  static float random_start() {
    static std::mt19937 rng(std::random_device{}());
    return static_cast<float>(std::uniform_int_distribution<int>(1, 1000)(rng));
  }
  static void expect_all(StreamOps& s, float expected) {
    std::vector<float> host(s.elements(), -12345.0f);  // poisoned
    s.read_all(host);
    for (std::size_t i = 0; i < host.size(); ++i) ASSERT_EQ(host[i], expected) << "element " << i;
  }
};

TEST_F(CudaStreamOpsTest, EveryWaitModeSeesEveryOp) {
  for (std::size_t elements : {1u, 255u, 1024u, 1u << 20}) {
    StreamOps s(elements);
    const float start = random_start();
    s.fill(start);
    for (int i = 0; i < 10; ++i) s.add_one();
    s.sync_stream();
    expect_all(s, start + 10);
    for (int i = 0; i < 10; ++i) s.add_one();
    s.sync_event();
    expect_all(s, start + 20);
    for (int i = 0; i < 10; ++i) s.add_one();
    s.sync_device();
    expect_all(s, start + 30);
    s.add_one_busy(/*busy_ns=*/10'000);
    EXPECT_EQ(s.read_scalar(), start + 31);
  }
}

TEST_F(CudaStreamOpsTest, GraphReplayEqualsLaunches) {
  StreamOps s(1024);
  const float start = random_start();
  s.fill(start);
  s.capture_graph(/*ops=*/100);
  expect_all(s, start);  // capturing runs nothing
  s.replay_graph();
  s.replay_graph();
  s.sync_stream();
  expect_all(s, start + 200);
}

TEST_F(CudaStreamOpsTest, AccumulateMatchesHostSum) {
  StreamOps s(64);
  s.fill(0);
  s.reset_accumulator();
  double expected = 0;
  for (int i = 1; i <= 500; ++i) {
    s.add_one();
    s.accumulate();
    expected += i;
  }
  EXPECT_EQ(s.read_accumulator(), expected);
}

TEST_F(CudaStreamOpsTest, UnrelatedWorkDoesNotBlockTheOpStream) {
  StreamOps s(16);
  s.fill(1);
  s.enqueue_unrelated(/*kernels=*/4, /*busy_ns=*/1'000'000);
  s.add_one();
  s.sync_event();
  EXPECT_EQ(s.read_scalar(), 2.0f);
  s.sync_unrelated();
}

TEST(CudaQuery, NeverThrowsAndExplainsAbsence) {
  const DeviceInfo info = query_device();
  if (info.available) {
    EXPECT_FALSE(info.name.empty());
  } else {
    EXPECT_FALSE(info.reason.empty());
  }
}

}  // namespace
}  // namespace pairbench::kernels::cuda
