// CPU GEMM arms (naive, blocked, OpenBLAS sgemm, 16-bit storage) against the fp64 reference on fresh
// random non-square inputs with poisoned outputs; the sampled verification and shape parsing.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/elementwise/float16.h"
#include "kernels/gemm/cpu_gemm.h"
#include "kernels/gemm/gemm_reference.h"
#include "kernels/gemm/openblas.h"

namespace eg = pairbench::kernels::gemm;
namespace ew = pairbench::kernels::elementwise;
using eg::GemmShape;

namespace {

using GemmFn = void (*)(const float*, const float*, float*, std::int64_t, std::int64_t, std::int64_t);

// Odd, non-square shapes: single elements, edge tiles in every direction, more than one KC (256)
// and MC (120) block, and an n past one NC (4096) panel.
const GemmShape kShapes[] = {{1, 1, 1},      {1, 17, 5},   {17, 5, 129}, {129, 17, 33}, {33, 129, 257},
                             {130, 65, 513}, {9, 4099, 3}, {64, 64, 64}, {3, 1, 300}};

struct Inputs {
  std::vector<float> a, b;
};
Inputs inputs(const GemmShape& s) {
  Inputs in{std::vector<float>(static_cast<std::size_t>(s.m * s.k)),
            std::vector<float>(static_cast<std::size_t>(s.k * s.n))};
  const std::uint64_t seed = eg::fresh_seed();
  eg::fill_random(in.a, seed);
  eg::fill_random(in.b, seed + 1);
  return in;
}

double error_of(GemmFn fn, const GemmShape& s, const Inputs& in) {
  std::vector<float> c(static_cast<std::size_t>(s.m * s.n), std::numeric_limits<float>::quiet_NaN());
  fn(in.a.data(), in.b.data(), c.data(), s.m, s.n, s.k);
  std::vector<double> ref(c.size());
  eg::gemm_reference(in.a, in.b, s, ref);
  return ew::rel_error(ref, c);
}

void expect_fp32_accurate(GemmFn fn, const char* name) {
  for (const GemmShape& s : kShapes) {
    const Inputs in = inputs(s);
    EXPECT_LE(error_of(fn, s, in), ew::gemm_error_bound(ew::Precision::kFp32, s.k)) << name << " " << s.text();
  }
}

}  // namespace

TEST(gemm_cpu, NaiveMatchesTheFp64Reference) { expect_fp32_accurate(eg::gemm_naive, "naive"); }
TEST(gemm_cpu, BlockedMatchesTheFp64Reference) {
  expect_fp32_accurate(static_cast<GemmFn>(eg::gemm_blocked), eg::gemm_blocked_kernel());
}

TEST(gemm_cpu, EveryBlockedMicroKernelThisCpuRunsMatchesTheFp64Reference) {
  for (eg::BlockedKernel kernel :
       {eg::BlockedKernel::kAvx512, eg::BlockedKernel::kAvx2, eg::BlockedKernel::kPortable}) {
    if (!eg::blocked_kernel_supported(kernel)) continue;
    for (const GemmShape& s : kShapes) {
      const Inputs in = inputs(s);
      std::vector<float> c(static_cast<std::size_t>(s.m * s.n), std::numeric_limits<float>::quiet_NaN());
      eg::gemm_blocked(in.a.data(), in.b.data(), c.data(), s.m, s.n, s.k, kernel);
      std::vector<double> ref(c.size());
      eg::gemm_reference(in.a, in.b, s, ref);
      EXPECT_LE(ew::rel_error(ref, c), ew::gemm_error_bound(ew::Precision::kFp32, s.k))
          << static_cast<int>(kernel) << " " << s.text();
    }
  }
  EXPECT_TRUE(eg::blocked_kernel_supported(eg::BlockedKernel::kPortable));
}
TEST(gemm_cpu, OpenblasSgemmMatchesTheFp64Reference) { expect_fp32_accurate(eg::openblas_sgemm, "openblas"); }

TEST(gemm_cpu, BlockedOverwritesCAndHandlesEmptyDepth) {
  const GemmShape s{5, 7, 0};
  std::vector<float> c(35, std::numeric_limits<float>::quiet_NaN());
  eg::gemm_blocked(nullptr, nullptr, c.data(), s.m, s.n, s.k);  // k = 0: C = 0, A and B unread
  for (float v : c) EXPECT_EQ(v, 0.0f);
}

TEST(gemm_cpu, SixteenBitStorageStaysWithinItsBoundAndIsVisiblyLessExact) {
  for (const GemmShape& s : {GemmShape{17, 129, 65}, GemmShape{129, 33, 257}}) {
    const Inputs in = inputs(s);
    std::vector<double> ref(static_cast<std::size_t>(s.m * s.n));
    eg::gemm_reference(in.a, in.b, s, ref);
    // bf16: round A and B to bf16, widen, sgemm, as the bf16_storage arm does.
    std::vector<ew::Bf16> a16(in.a.size()), b16(in.b.size());
    ew::convert(std::span<const float>(in.a), std::span<ew::Bf16>(a16));
    ew::convert(std::span<const float>(in.b), std::span<ew::Bf16>(b16));
    std::vector<float> aw(in.a.size()), bw(in.b.size()), c(ref.size(), std::numeric_limits<float>::quiet_NaN());
    ew::convert(std::span<const ew::Bf16>(a16), std::span<float>(aw));
    ew::convert(std::span<const ew::Bf16>(b16), std::span<float>(bw));
    eg::openblas_sgemm(aw.data(), bw.data(), c.data(), s.m, s.n, s.k);
    const double bf16_err = ew::rel_error(ref, c);
    EXPECT_LE(bf16_err, ew::gemm_error_bound(ew::Precision::kBf16, s.k)) << s.text();
    EXPECT_GT(bf16_err, ew::gemm_error_bound(ew::Precision::kFp32, s.k)) << s.text();
    if (eg::openblas_has_sbgemm()) {
      std::vector<float> c2(ref.size(), std::numeric_limits<float>::quiet_NaN());
      eg::openblas_sbgemm(a16.data(), b16.data(), c2.data(), s.m, s.n, s.k);
      EXPECT_LE(ew::rel_error(ref, c2), ew::gemm_error_bound(ew::Precision::kBf16, s.k)) << s.text();
    }
    // fp16.
    std::vector<ew::Fp16> ah(in.a.size()), bh(in.b.size());
    ew::convert(std::span<const float>(in.a), std::span<ew::Fp16>(ah));
    ew::convert(std::span<const float>(in.b), std::span<ew::Fp16>(bh));
    ew::convert(std::span<const ew::Fp16>(ah), std::span<float>(aw));
    ew::convert(std::span<const ew::Fp16>(bh), std::span<float>(bw));
    std::fill(c.begin(), c.end(), std::numeric_limits<float>::quiet_NaN());
    eg::openblas_sgemm(aw.data(), bw.data(), c.data(), s.m, s.n, s.k);
    const double fp16_err = ew::rel_error(ref, c);
    EXPECT_LE(fp16_err, ew::gemm_error_bound(ew::Precision::kFp16, s.k)) << s.text();
    EXPECT_LT(fp16_err, bf16_err) << s.text();
  }
}

TEST(gemm_cpu, SbgemmIsReportedAbsentRatherThanCalled) {
  if (eg::openblas_has_sbgemm()) GTEST_SKIP() << "skipped: this OpenBLAS has cblas_sbgemm";
  ew::Bf16 a{0x3F80}, b{0x3F80};
  float c = 0;
  EXPECT_THROW(eg::openblas_sbgemm(&a, &b, &c, 1, 1, 1), std::runtime_error);
}

TEST(gemm_cpu, SampledReferenceEqualsTheFullOneAtTheSampledEntries) {
  const GemmShape s{300, 500, 700};  // past kFullCheckFlops: sampled
  const Inputs in = inputs(s);
  const eg::GemmSample sample = eg::choose_sample(s, 42);
  ASSERT_FALSE(sample.all);
  ASSERT_EQ(sample.rows.size(), 64u);
  ASSERT_EQ(sample.cols.size(), 64u);
  EXPECT_TRUE(std::is_sorted(sample.rows.begin(), sample.rows.end()));
  EXPECT_EQ(std::adjacent_find(sample.cols.begin(), sample.cols.end()), sample.cols.end());
  std::vector<double> full(static_cast<std::size_t>(s.m * s.n));
  eg::gemm_reference(in.a, in.b, s, full);
  const std::vector<double> at = eg::reference_at(sample, in.a, in.b, s);
  for (std::size_t r = 0; r < sample.rows.size(); ++r) {
    for (std::size_t c = 0; c < sample.cols.size(); ++c) {
      ASSERT_EQ(at[r * 64 + c], full[static_cast<std::size_t>(sample.rows[r] * s.n + sample.cols[c])]);
    }
  }
  EXPECT_EQ(sample.describe(), "64x64 sampled entries (fp64)");
  const eg::GemmSample small = eg::choose_sample({17, 5, 3}, 1);
  EXPECT_TRUE(small.all);
  EXPECT_EQ(small.describe(), "all 85 entries");
}

TEST(gemm_cpu, VerificationFlagsAWrongOrUnwrittenResult) {
  for (const GemmShape& s : {GemmShape{17, 29, 33}, GemmShape{300, 500, 700}}) {
    const Inputs in = inputs(s);
    std::vector<float> c(static_cast<std::size_t>(s.m * s.n));
    eg::openblas_sgemm(in.a.data(), in.b.data(), c.data(), s.m, s.n, s.k);
    EXPECT_TRUE(eg::verify_gemm(in.a, in.b, c, s, ew::Precision::kFp32, 9).check.ok) << s.text();
    // Corrupt one entry that the verification looks at: the first sampled one.
    const eg::GemmSample sample = eg::choose_sample(s, 9);
    float& victim = c[static_cast<std::size_t>(sample.rows[0] * s.n + sample.cols[0])];
    const float saved = victim;
    victim += 1.0f;
    EXPECT_FALSE(eg::verify_gemm(in.a, in.b, c, s, ew::Precision::kFp32, 9).check.ok) << s.text();
    victim = std::numeric_limits<float>::quiet_NaN();  // never written
    const eg::GemmVerification v = eg::verify_gemm(in.a, in.b, c, s, ew::Precision::kBf16, 9);
    EXPECT_FALSE(v.check.ok);
    EXPECT_NE(v.text().find(" > bound "), std::string::npos) << v.text();
    victim = saved;
  }
}

TEST(gemm_cpu, ShapesParseAndFlopsCount) {
  const GemmShape t = eg::parse_shape("8192x1024x4096");
  EXPECT_EQ(t.m, 8192);
  EXPECT_EQ(t.n, 1024);
  EXPECT_EQ(t.k, 4096);
  EXPECT_EQ(t.text(), "8192x1024x4096");
  EXPECT_DOUBLE_EQ(t.flops(), 2.0 * 8192 * 1024 * 4096);
  const GemmShape sq = eg::parse_shape("1000");
  EXPECT_EQ(sq.m, 1000);
  EXPECT_EQ(sq.k, 1000);
  for (const char* bad : {"", "x", "10x10", "10x10x", "10x0x10", "-5", "4096x4096x1024 ", "1e3"}) {
    EXPECT_THROW(eg::parse_shape(bad), std::invalid_argument) << bad;
  }
}

TEST(gemm_cpu, RandomInputsAreFreshSignedAndReproducible) {
  std::vector<float> a(1000), b(1000), c(1000);
  eg::fill_random(a, 1);
  eg::fill_random(b, 1);
  eg::fill_random(c, 2);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_GE(*std::min_element(a.begin(), a.end()), -1.0f);
  EXPECT_LT(*std::max_element(a.begin(), a.end()), 1.0f);
  EXPECT_LT(*std::min_element(a.begin(), a.end()), -0.5f);
  EXPECT_GT(*std::max_element(a.begin(), a.end()), 0.5f);
  EXPECT_NE(eg::fresh_seed(), eg::fresh_seed());
}
