// Thread all-reduce: both algorithms leave the exact sum in every participant's buffer for
// P = 1..4 and lengths that do not divide by P (N < P, 0, 1 included), run after run; the chunking
// covers every element once; the inputs and the reference are what the bench relies on.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/collective/thread_allreduce.h"

namespace pairbench::kernels::collective {
namespace {

constexpr std::size_t kLengths[] = {0, 1, 2, 3, 5, 17, 63, 1000, 4099, 100003};

TEST(AllreduceTest, EveryBufferHoldsTheExactSum) {
  for (Algorithm algorithm : {Algorithm::kGatherBroadcast, Algorithm::kRing}) {
    for (int p = 1; p <= 4; ++p) {
      for (std::size_t n : kLengths) {
        SCOPED_TRACE(::testing::Message() << algorithm_name(algorithm) << " P=" << p << " N=" << n);
        ThreadAllReduce team(p, n);
        const std::uint64_t seed = fresh_seed();
        for (int q = 0; q < p; ++q) fill_gradients(team.buffer(q), seed, q);
        std::vector<float> want(n);
        reference_sum(want, seed, p);
        team.run(algorithm);
        for (int q = 0; q < p; ++q) ASSERT_EQ(first_difference(team.buffer(q), want), n) << "participant " << q;
        // A second run sums P equal buffers: P times the sum, exactly (|values| stay << 2^24).
        team.run(algorithm);
        for (std::size_t i = 0; i < n; ++i) want[i] *= static_cast<float>(p);
        for (int q = 0; q < p; ++q)
          ASSERT_EQ(first_difference(team.buffer(q), want), n) << "second run, participant " << q;
      }
    }
  }
}

// Past malloc's mapping threshold the buffers may be page buffers, reused by the next team in a
// shared process (kernels/common/pages.h): a reused buffer holds the last team's sums, so the sum
// is exact only if every element is written again. Two teams, one after the other, with reuse on.
TEST(AllreduceTest, LargeBuffersReusedByTheNextTeamHoldTheExactSum) {
  reuse_page_buffers();
  const std::size_t n = (kMallocAlwaysMapsBytes / sizeof(float)) + 1001;
  for (Algorithm algorithm : {Algorithm::kRing, Algorithm::kGatherBroadcast}) {
    SCOPED_TRACE(algorithm_name(algorithm));
    ThreadAllReduce team(2, n);
    const std::uint64_t seed = fresh_seed();
    for (int q = 0; q < 2; ++q) fill_gradients(team.buffer(q), seed, q);
    std::vector<float> want(n);
    reference_sum(want, seed, 2);
    team.run(algorithm);
    for (int q = 0; q < 2; ++q) ASSERT_EQ(first_difference(team.buffer(q), want), n) << "participant " << q;
  }
}

TEST(AllreduceTest, AlgorithmsAlternateOnOneTeam) {
  ThreadAllReduce team(3, 12345);
  const std::uint64_t seed = fresh_seed();
  for (int q = 0; q < 3; ++q) fill_gradients(team.buffer(q), seed, q);
  std::vector<float> want(12345);
  reference_sum(want, seed, 3);
  team.run(Algorithm::kRing);
  team.run(Algorithm::kGatherBroadcast);
  for (float& w : want) w *= 3;
  for (int q = 0; q < 3; ++q) EXPECT_EQ(first_difference(team.buffer(q), want), want.size()) << q;
}

TEST(AllreduceTest, ChunksCoverEveryElementOnce) {
  for (int chunks = 1; chunks <= 5; ++chunks) {
    for (std::size_t n : kLengths) {
      std::vector<int> seen(n, 0);
      std::size_t previous_end = 0;
      for (int c = 0; c < chunks; ++c) {
        const auto [lo, hi] = chunk_range(n, c, chunks);
        ASSERT_LE(lo, hi);
        ASSERT_EQ(lo, previous_end) << "chunks must be contiguous, n=" << n << " c=" << c;
        previous_end = hi;
        for (std::size_t i = lo; i < hi; ++i) ++seen[i];
      }
      EXPECT_EQ(previous_end, n);
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(seen[i], 1) << "n=" << n << " chunks=" << chunks;
    }
  }
  // Large buffers split on 64-byte lines, nearly evenly.
  const auto [lo, hi] = chunk_range(100003, 1, 4);
  EXPECT_EQ(lo % 16, 0u);
  EXPECT_EQ(hi % 16, 0u);
  EXPECT_NEAR(static_cast<double>(hi - lo), 100003 / 4.0, 16);
}

TEST(AllreduceTest, InputsAreSmallIntegersAndSeeded) {
  std::vector<float> a(5000), b(5000), c(5000), d(5000);
  fill_gradients(a, 7, 0);
  fill_gradients(b, 7, 0);
  fill_gradients(c, 7, 1);
  fill_gradients(d, 8, 0);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c) << "participants must get different gradients";
  EXPECT_NE(a, d);
  for (float v : a) {
    ASSERT_EQ(v, std::trunc(v));
    ASSERT_LE(std::fabs(v), 1000.0f);
  }
  std::vector<float> sum(5000);
  reference_sum(sum, 7, 2);
  for (std::size_t i = 0; i < sum.size(); ++i) ASSERT_EQ(sum[i], a[i] + c[i]);
}

TEST(AllreduceTest, FirstDifferenceFindsTheElement) {
  std::vector<float> a(100, 1.0f), b(100, 1.0f);
  EXPECT_EQ(first_difference(a, b), 100u);
  b[37] = 2.0f;
  EXPECT_EQ(first_difference(a, b), 37u);
  b[37] = -0.0f;
  a[37] = 0.0f;
  EXPECT_EQ(first_difference(a, b), 37u) << "bitwise: -0 and +0 differ";
  std::vector<float> c(99);
  EXPECT_THROW(first_difference(a, c), std::invalid_argument);
}

TEST(AllreduceTest, BadInput) {
  EXPECT_THROW(ThreadAllReduce(0, 10), std::invalid_argument);
  ThreadAllReduce team(2, 10);
  EXPECT_THROW(team.buffer(2), std::out_of_range);
  EXPECT_THROW(team.buffer(-1), std::out_of_range);
  EXPECT_THROW(algorithm_from_name("tree"), std::invalid_argument);
  EXPECT_EQ(algorithm_from_name("ring"), Algorithm::kRing);
  EXPECT_EQ(algorithm_from_name("gather_broadcast"), Algorithm::kGatherBroadcast);
}

}  // namespace
}  // namespace pairbench::kernels::collective
