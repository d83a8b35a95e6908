// ops.fusion host passes: both forms against the fp64 reference within the documented bound, the
// two forms bit-identical, edge lengths, bad input, and the checker itself catching poison and
// wrong values.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels/fusion/sin_cos.h"

namespace pairbench::kernels::fusion {
namespace {

struct Arrays {
  std::vector<float> x, y, a, b, unfused, fused;
  explicit Arrays(std::size_t n) : x(n), y(n), a(n), b(n), unfused(n), fused(n) {
    const std::uint64_t seed = fresh_seed();
    fill_inputs(x, seed);
    fill_inputs(y, seed + 1);
    poison(a);
    poison(b);
    poison(unfused);
    poison(fused);
  }
};

TEST(FusionTest, BothFormsMatchTheReferenceAndEachOtherBitForBit) {
  for (Op op : {Op::kSinCos, Op::kAddMul}) {
    for (std::size_t n :
         {std::size_t{0}, std::size_t{1}, std::size_t{3}, std::size_t{17}, std::size_t{4099}, std::size_t{100003}}) {
      SCOPED_TRACE(::testing::Message() << "op=" << op_name(op) << " n=" << n);
      Arrays t(n);
      run_unfused(op, t.x, t.y, t.a, t.b, t.unfused);
      run_fused(op, t.x, t.y, t.fused);
      const ErrorCheck cu = check_against_reference(op, t.x, t.y, t.unfused);
      const ErrorCheck cf = check_against_reference(op, t.x, t.y, t.fused);
      EXPECT_TRUE(cu.ok) << cu.text();
      EXPECT_TRUE(cf.ok) << cf.text();
      EXPECT_EQ(cf.checked, n);
      if (n > 0) {
        EXPECT_EQ(std::memcmp(t.unfused.data(), t.fused.data(), n * sizeof(float)), 0);
      }
      for (std::size_t i = 0; i < n; ++i) {  // the temporaries hold f(x) and g(y)
        const float want_a = op == Op::kSinCos ? std::sin(t.x[i]) : t.x[i] * 2.0f;
        ASSERT_EQ(t.a[i], want_a) << "i=" << i;
      }
    }
  }
}

TEST(FusionTest, ErrorStaysWellInsideTheBound) {
  // The bound is loose on purpose (it covers CUDA's 2-ulp sinf); glibc should sit near 1 ulp.
  Arrays t(std::size_t{1} << 16);
  run_fused(Op::kSinCos, t.x, t.y, t.fused);
  const ErrorCheck c = check_against_reference(Op::kSinCos, t.x, t.y, t.fused);
  EXPECT_GT(c.max_abs_error, 0.0) << "fp32 results cannot match fp64 exactly everywhere";
  EXPECT_LE(c.max_abs_error, std::ldexp(3.0, -23)) << c.text();
}

TEST(FusionTest, InputsAreInRangeAndSeeded) {
  std::vector<float> u(10000), v(10000), w(10000);
  fill_inputs(u, 42);
  fill_inputs(v, 42);
  fill_inputs(w, 43);
  EXPECT_EQ(u, v);
  EXPECT_NE(u, w);
  float lo = kInputRange, hi = -kInputRange;
  for (float e : u) {
    ASSERT_GE(e, -kInputRange);
    ASSERT_LT(e, kInputRange);
    lo = std::min(lo, e);
    hi = std::max(hi, e);
  }
  EXPECT_LT(lo, -7.9f);
  EXPECT_GT(hi, 7.9f);
}

TEST(FusionTest, CheckerCatchesPoisonAndWrongValues) {
  for (Op op : {Op::kSinCos, Op::kAddMul}) {
    Arrays t(5000);
    run_fused(op, t.x, t.y, t.fused);
    ASSERT_TRUE(check_against_reference(op, t.x, t.y, t.fused).ok);
    std::vector<float> bad = t.fused;
    bad[4321] = std::numeric_limits<float>::quiet_NaN();  // an element never written
    ErrorCheck c = check_against_reference(op, t.x, t.y, bad, /*max_checked=*/16);
    EXPECT_FALSE(c.ok);
    EXPECT_EQ(c.worst, 4321u);
    bad = t.fused;
    bad[7] += 1e-3f;  // a wrong value, far below any real bug's size
    c = check_against_reference(op, t.x, t.y, bad);
    EXPECT_FALSE(c.ok) << c.text();
    EXPECT_EQ(c.worst, 7u);
    // A pass that computed sin(x) + cos(x) instead of sin(x) + cos(y) fails.
    std::vector<float> swapped(t.x.size());
    run_fused(op, t.x, t.x, swapped);
    EXPECT_FALSE(check_against_reference(op, t.x, t.y, swapped).ok);
  }
}

TEST(FusionTest, SampledCheckCoversTheEdgesAndAStride) {
  Arrays t(100000);
  run_fused(Op::kAddMul, t.x, t.y, t.fused);
  const ErrorCheck c = check_against_reference(Op::kAddMul, t.x, t.y, t.fused, /*max_checked=*/1000, 3);
  EXPECT_TRUE(c.ok) << c.text();
  EXPECT_GT(c.checked, 2 * 4096u);
  EXPECT_LT(c.checked, 2 * 4096u + 1100);
  std::vector<float> bad = t.fused;
  bad.back() = 1e6f;  // the last 4096 are always compared
  EXPECT_FALSE(check_against_reference(Op::kAddMul, t.x, t.y, bad, 1000, 3).ok);
}

TEST(FusionTest, BadInput) {
  std::vector<float> x(8), y(8), a(8), b(8), out(7);
  EXPECT_THROW(run_fused(Op::kSinCos, x, y, out), std::invalid_argument);
  EXPECT_THROW(run_unfused(Op::kSinCos, x, y, a, b, out), std::invalid_argument);
  EXPECT_THROW(op_from_name("tan"), std::invalid_argument);
  EXPECT_EQ(op_from_name("sin_cos"), Op::kSinCos);
  EXPECT_EQ(op_from_name("add_mul"), Op::kAddMul);
}

TEST(FusionTest, BytesMovedCounting) {
  EXPECT_EQ(bytes_moved_per_element(Form::kUnfused), 28.0);
  EXPECT_EQ(bytes_moved_per_element(Form::kFused), 12.0);
}

}  // namespace
}  // namespace pairbench::kernels::fusion
