// ops.fusion CUDA kernels: three kernels and the fused kernel against the fp64 host reference and
// against each other (bit for bit: the same device functions, no contraction). Always compiled;
// skipped with the reason where there is no CUDA device.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "kernels/common/device.h"
#include "kernels/fusion/cuda_sin_cos.h"

namespace pairbench::kernels::fusion::cuda {
namespace {

class FusionCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = kernels::cuda::device_unavailable_reason(); !why.empty())
      GTEST_SKIP() << "skipped: " << why;
  }
};

TEST_F(FusionCudaTest, BothFormsMatchTheReferenceAndEachOther) {
  for (Op op : {Op::kSinCos, Op::kAddMul}) {
    for (std::size_t n : {std::size_t{1}, std::size_t{3}, std::size_t{4099}, (std::size_t{1} << 20) + 5}) {
      SCOPED_TRACE(::testing::Message() << "op=" << op_name(op) << " n=" << n);
      std::vector<float> x(n), y(n), unfused(n), fused(n);
      const std::uint64_t seed = fresh_seed();
      fill_inputs(x, seed);
      fill_inputs(y, seed + 1);
      DeviceSinCos dev(static_cast<std::int64_t>(n));
      dev.upload(x, y);
      for (auto [form, out] : {std::pair{Form::kUnfused, &unfused}, std::pair{Form::kFused, &fused}}) {
        dev.poison();
        dev.enqueue(op, form);
        dev.enqueue(op, form);  // twice, as a timed loop runs it: the same output
        dev.download(*out);
        const ErrorCheck c = check_against_reference(op, x, y, *out, /*max_checked=*/n);
        EXPECT_TRUE(c.ok) << (form == Form::kFused ? "fused: " : "unfused: ") << c.text();
      }
      EXPECT_EQ(std::memcmp(unfused.data(), fused.data(), n * sizeof(float)), 0);
    }
  }
}

TEST_F(FusionCudaTest, PoisonIsCaught) {
  std::vector<float> x(1000), y(1000), out(1000);
  fill_inputs(x, 1);
  fill_inputs(y, 2);
  DeviceSinCos dev(1000);
  dev.upload(x, y);
  dev.poison();
  dev.download(out);
  EXPECT_FALSE(check_against_reference(Op::kSinCos, x, y, out).ok);
}

TEST_F(FusionCudaTest, BadInput) {
  EXPECT_THROW(DeviceSinCos(0), std::invalid_argument);
  DeviceSinCos dev(8);
  std::vector<float> seven(7), eight(8);
  EXPECT_THROW(dev.upload(seven, eight), std::invalid_argument);
  EXPECT_THROW(dev.download(seven), std::invalid_argument);
}

}  // namespace
}  // namespace pairbench::kernels::fusion::cuda
