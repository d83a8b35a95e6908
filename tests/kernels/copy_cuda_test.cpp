// The CUDA copy workloads against host references: every direction and host memory kind, the
// H2D + D2H pair in both modes, the overlap pipeline (serial and pipelined) against the closed-form
// transform, cuRAND creation on the device against cuRAND's host generator. Always compiled;
// skipped with the reason where there is no CUDA device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/common/device.h"
#include "kernels/copy/cuda_copy.h"
#include "kernels/copy/verify.h"

namespace pairbench::kernels::copy::cuda {
namespace {

class CudaCopyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = kernels::cuda::device_unavailable_reason(); !why.empty())
      GTEST_SKIP() << "skipped: " << why;
  }
};

// A fresh seed whose first `bytes` (at most 8) of stream `seed` differ from the poison and from
// stream `seed + 1`: a one-byte stream equals the poison byte, or its neighbour, once in 256 draws,
// and then the checks below that a wrong destination is caught would fail on a right copy (seen
// once on an H100: "the poisoned destination passed the check", bytes=1). Longer transfers
// cannot collide in practice and take the first draw.
std::uint64_t seed_telling_poison_and_neighbour_apart(std::size_t bytes) {
  const std::size_t n = std::min<std::size_t>(bytes, 8);
  for (;;) {
    const std::uint64_t seed = fresh_seed();
    std::vector<std::byte> head(n), next(n), poisoned(n, kPoison);
    fill_random(head, seed);
    fill_random(next, seed + 1);
    if (head != poisoned && head != next) return seed;
  }
}

TEST_F(CudaCopyTest, TransfersCopyEveryByteInEveryDirectionAndKind) {
  for (Direction dir : {Direction::kHostToDevice, Direction::kDeviceToHost, Direction::kDeviceToDevice}) {
    for (HostKind kind : {HostKind::kPageable, HostKind::kPinned, HostKind::kRegistered}) {
      for (std::size_t bytes : {std::size_t{1}, std::size_t{4095}, (std::size_t{1} << 20) + 3}) {
        SCOPED_TRACE(::testing::Message()
                     << "dir=" << static_cast<int>(dir) << " kind=" << static_cast<int>(kind) << " bytes=" << bytes);
        Transfer t(bytes, dir, kind);
        const std::uint64_t seed = seed_telling_poison_and_neighbour_apart(bytes);
        t.fill_source(seed);
        t.poison_destination();
        EXPECT_NE(t.first_mismatch(seed), bytes) << "the poisoned destination passed the check";
        t.enqueue(2);
        t.synchronize();
        EXPECT_EQ(t.first_mismatch(seed), bytes);
        EXPECT_TRUE(t.spot_check(seed, fresh_seed()));
        EXPECT_NE(t.first_mismatch(seed + 1), bytes) << "a different stream passed the check";
      }
    }
  }
}

TEST_F(CudaCopyTest, DuplexBothModes) {
  for (bool concurrent : {false, true}) {
    Duplex d((std::size_t{4} << 20) + 5);
    const std::uint64_t seed = fresh_seed();
    d.fill_sources(seed);
    d.poison_destinations();
    EXPECT_NE(d.first_mismatch(seed), "");
    concurrent ? d.enqueue_concurrent() : d.enqueue_sequential();
    d.synchronize();
    EXPECT_EQ(d.first_mismatch(seed), "") << "concurrent=" << concurrent;
    EXPECT_TRUE(d.spot_check(seed, fresh_seed()));
  }
}

TEST_F(CudaCopyTest, PipelineMatchesHostReference) {
  for (HostKind kind : {HostKind::kPageable, HostKind::kPinned}) {
    for (int chunks : {1, 3, 8}) {
      for (int rounds : {0, 5, 300}) {
        const std::size_t bytes = (std::size_t{1} << 20) + 12;  // chunks of uneven length
        OverlapPipeline pipe(bytes, chunks, /*streams=*/3, rounds, kind);
        const Affine32 f = lcg_power(rounds);
        for (bool pipelined : {false, true}) {
          if (pipelined && kind == HostKind::kPageable) continue;
          fill_random(std::as_writable_bytes(pipe.input()), fresh_seed());
          poison(std::as_writable_bytes(pipe.output()));
          if (pipelined) {
            pipe.enqueue_pipelined();
            pipe.synchronize();
          } else {
            pipe.run_serial();
          }
          const auto in = pipe.input();
          const auto out = pipe.output();
          for (std::size_t i = 0; i < in.size(); ++i) {
            ASSERT_EQ(out[i], f(in[i])) << "i=" << i << " chunks=" << chunks << " rounds=" << rounds
                                        << " pipelined=" << pipelined;
          }
        }
      }
    }
  }
}

TEST_F(CudaCopyTest, RandomTensorDeviceEqualsHostGenerator) {
  RandomTensor t(std::size_t{1} << 20);
  const std::uint64_t seed = fresh_seed();
  std::vector<float> got(t.count());
  t.reseed(seed);
  t.poison_device();
  t.make_on_host_and_copy();
  t.download(got);
  const std::vector<float> host(t.host_values().begin(), t.host_values().end());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], host[i]) << "copy of host values, i=" << i;
  t.reseed(seed);
  t.poison_device();
  t.make_on_device();
  t.download(got);
  double sum = 0, sum_sq = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], host[i], 1e-4 * (1 + std::fabs(host[i]))) << "device vs host generator, i=" << i;
    sum += got[i];
    sum_sq += static_cast<double>(got[i]) * got[i];
  }
  const double n = static_cast<double>(got.size());
  EXPECT_NEAR(sum / n, 0.0, 6 / std::sqrt(n));
  EXPECT_NEAR(sum_sq / n, 1.0, 0.02);
}

TEST_F(CudaCopyTest, TooBigForTheDeviceIsNotSupported) {
  EXPECT_THROW(Transfer(std::size_t{1} << 50, Direction::kDeviceToDevice, HostKind::kPinned), NotSupported);
}

}  // namespace
}  // namespace pairbench::kernels::copy::cuda
