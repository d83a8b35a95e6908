// Host bandwidth-bound ops (axpb, layer-norm) in fp32 / bf16 / fp16 storage against their fp64
// references at odd sizes, with poisoned outputs; the accuracy measure and the documented bounds.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "kernels/elementwise/accuracy.h"
#include "kernels/elementwise/bandwidth_ops.h"

namespace ew = pairbench::kernels::elementwise;
using ew::Precision;
using ew::Storage;

namespace {

std::vector<float> random_floats(std::size_t n, unsigned seed, float offset = 0) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng) + offset;
  return v;
}

constexpr Storage kStorages[] = {Storage::kFp32, Storage::kBf16, Storage::kFp16};

}  // namespace

TEST(elementwise_ops, AxpbIsExactlyFp32MathOnTheStoredValues) {
  // Every element: widen the stored x, a*x + b in fp32, round to the storage: bit for bit, at sizes
  // that leave every tail behind the 1024-element chunks and the vector conversion loops.
  for (Storage s : kStorages) {
    for (std::size_t n : {1, 17, 1023, 1024, 1025, 5000}) {
      SCOPED_TRACE(std::string(ew::storage_name(s)) + " n=" + std::to_string(n));
      const std::vector<float> x = random_floats(n, static_cast<unsigned>(n));
      ew::HostArray hx(s, n), hy(s, n), want(s, n);
      hx.store(x);
      hy.poison();
      ew::axpb(1.5f, 0.25f, hx, hy);
      std::vector<float> xs(n), y(n), expect(n);
      hx.load(xs);
      for (std::size_t i = 0; i < n; ++i) expect[i] = 1.5f * xs[i] + 0.25f;
      want.store(expect);  // the same rounding to storage
      want.load(expect);
      hy.load(y);
      for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(y[i], expect[i]) << i;
    }
  }
}

TEST(elementwise_ops, AxpbErrorAgainstFp64IsWithinEachStoragesBound) {
  // The bound is on the relative Frobenius error over many elements; a handful of elements near
  // y = 0 could exceed it on their own (cancellation), so this uses realistic lengths.
  for (Storage s : kStorages) {
    const std::size_t n = 100000;
    const std::vector<float> x = random_floats(n, 11);
    ew::HostArray hx(s, n), hy(s, n);
    hx.store(x);
    hy.poison();
    ew::axpb(1.5f, 0.25f, hx, hy);
    std::vector<float> y(n);
    hy.load(y);
    std::vector<double> ref(n);
    ew::axpb_reference(1.5, 0.25, x, ref);
    const double err = ew::rel_error(ref, y);
    EXPECT_LE(err, ew::elementwise_error_bound(ew::precision_of(s))) << ew::storage_name(s);
    if (s != Storage::kFp32) {
      EXPECT_GT(err, 1e-5) << ew::storage_name(s);  // the storage really is 16-bit
    }
  }
}

TEST(elementwise_ops, LayerNormMatchesTheFp64ReferenceWithinEachStoragesBound) {
  for (Storage s : kStorages) {
    for (std::size_t cols : {1, 17, 1024, 1029}) {
      const std::size_t rows = 7;
      SCOPED_TRACE(std::string(ew::storage_name(s)) + " cols=" + std::to_string(cols));
      const std::vector<float> x = random_floats(rows * cols, static_cast<unsigned>(cols));
      ew::HostArray hx(s, x.size()), hy(s, x.size());
      hx.store(x);
      hy.poison();
      ew::layer_norm_rows(hx, hy, cols, 1e-5f);
      std::vector<float> y(x.size());
      hy.load(y);
      std::vector<double> ref(x.size());
      ew::layer_norm_reference(x, cols, 1e-5, ref);
      if (cols == 1) {
        // One element per row: x - mean = 0 exactly, so y = 0 everywhere (and not NaN).
        for (float v : y) EXPECT_EQ(v, 0.0f);
        continue;
      }
      EXPECT_LE(ew::rel_error(ref, y), ew::elementwise_error_bound(ew::precision_of(s)));
    }
  }
}

TEST(elementwise_ops, Fp32LayerNormStaysAccurateUnderALargeMean) {
  // Two passes over the row: a one-pass E[x^2] - E[x]^2 would lose every digit at mean 1000.
  const std::size_t cols = 1024;
  const std::vector<float> x = random_floats(4 * cols, 3, /*offset=*/1000.0f);
  ew::HostArray hx(Storage::kFp32, x.size()), hy(Storage::kFp32, x.size());
  hx.store(x);
  ew::layer_norm_rows(hx, hy, cols, 1e-5f);
  std::vector<float> y(x.size());
  hy.load(y);
  std::vector<double> ref(x.size());
  ew::layer_norm_reference(x, cols, 1e-5, ref);
  EXPECT_LE(ew::rel_error(ref, y), 1e-3);
}

TEST(elementwise_ops, RejectsMismatchedArrays) {
  ew::HostArray a(Storage::kFp32, 10), b(Storage::kBf16, 10), c(Storage::kFp32, 11);
  EXPECT_THROW(ew::axpb(1, 0, a, b), std::invalid_argument);
  EXPECT_THROW(ew::axpb(1, 0, a, c), std::invalid_argument);
  ew::HostArray d(Storage::kFp32, 10);
  EXPECT_THROW(ew::layer_norm_rows(a, d, 3, 1e-5f), std::invalid_argument);
  std::vector<float> wrong(9);
  EXPECT_THROW(a.store(wrong), std::invalid_argument);
}

TEST(elementwise_ops, PoisonIsNaNInEveryStorage) {
  for (Storage s : kStorages) {
    ew::HostArray h(s, 5);
    h.poison();
    std::vector<float> v(5);
    h.load(v);
    for (float x : v) EXPECT_TRUE(std::isnan(x)) << ew::storage_name(s);
  }
}

TEST(elementwise_ops, RelErrorIsTheRelativeFrobeniusNorm) {
  const std::vector<double> ref = {3, 4};
  EXPECT_DOUBLE_EQ(ew::rel_error(ref, std::vector<float>{3, 4}), 0.0);
  EXPECT_DOUBLE_EQ(ew::rel_error(ref, std::vector<float>{3, 4.5f}), 0.1);  // ||(0, .5)|| / ||(3, 4)||
  EXPECT_EQ(ew::rel_error(ref, std::vector<float>{3, std::numeric_limits<float>::quiet_NaN()}),
            std::numeric_limits<double>::infinity());  // a poisoned, unwritten output
  EXPECT_EQ(ew::rel_error(std::vector<double>{0, 0}, std::vector<float>{0, 0}), 0.0);
  EXPECT_EQ(ew::rel_error(std::vector<double>{0, 0}, std::vector<float>{0, 1}),
            std::numeric_limits<double>::infinity());
  EXPECT_THROW(ew::rel_error(ref, std::vector<float>{1}), std::invalid_argument);
}

TEST(elementwise_ops, ErrorBoundsAreOrderedAndFlagWhatExceedsThem) {
  // fp32 grows with sqrt(k) and stays far below tf32 for realistic depths; 16-bit bounds are fixed.
  EXPECT_DOUBLE_EQ(ew::gemm_error_bound(Precision::kFp32, 10000), 1e-4);
  EXPECT_LT(ew::gemm_error_bound(Precision::kFp32, 65536), ew::gemm_error_bound(Precision::kTf32, 65536));
  EXPECT_LT(ew::gemm_error_bound(Precision::kTf32, 1), ew::gemm_error_bound(Precision::kFp16, 1));
  EXPECT_LT(ew::gemm_error_bound(Precision::kFp16, 1), ew::gemm_error_bound(Precision::kBf16, 1));
  EXPECT_LT(ew::elementwise_error_bound(Precision::kFp32), ew::elementwise_error_bound(Precision::kFp16));
  EXPECT_TRUE(ew::check_error(1e-3, 1e-2).ok);
  EXPECT_TRUE(ew::check_error(1e-2, 1e-2).ok);
  EXPECT_FALSE(ew::check_error(2e-2, 1e-2).ok);
  EXPECT_FALSE(ew::check_error(std::nan(""), 1e-2).ok);
  EXPECT_FALSE(ew::check_error(std::numeric_limits<double>::infinity(), 1e-2).ok);
  EXPECT_EQ(ew::check_error(2e-2, 1e-2).text(), "rel_error 2.00e-02 > bound 1.0e-02");
}
