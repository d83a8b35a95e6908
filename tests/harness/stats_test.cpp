// Known-answer, property and simulated-coverage tests for pairbench::stats (harness/stats/stats.h).
// Reference values are hand-computed or tabulated; the derivations are in the comments.
#include "harness/stats/stats.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace pairbench::stats {
namespace {

using Samples = std::vector<double>;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Hollander & Wolfe's two-sample example, also the example of R's ?wilcox.test.
const Samples kTextbookX = {0.80, 0.83, 1.89, 1.04, 1.45, 1.38, 1.91, 1.64, 0.73, 1.46};
const Samples kTextbookY = {1.15, 0.88, 0.90, 0.74, 1.21};

// --- median / quantile / spread -------------------------------------------------------------

TEST(Median, OddEvenAndSingle) {
  EXPECT_DOUBLE_EQ(median(Samples{3, 1, 2}), 2.0);
  EXPECT_DOUBLE_EQ(median(Samples{4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(median(Samples{7}), 7.0);
  EXPECT_DOUBLE_EQ(median(Samples{5, 5, 1, 9, 5}), 5.0);
}

TEST(Quantile, Type7LinearInterpolation) {
  const Samples data = {10, 3, 7, 1, 9, 2, 8, 4, 6, 5};  // 1..10 shuffled
  // h = (n - 1) q; x_(floor h) + frac(h) * (next - it), with 0-based order statistics.
  EXPECT_DOUBLE_EQ(quantile(data, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(quantile(data, 1.0), 10.0);
  EXPECT_DOUBLE_EQ(quantile(data, 0.25), 3.25);                 // h = 2.25
  EXPECT_DOUBLE_EQ(quantile(data, 0.5), 5.5);                   // h = 4.5
  EXPECT_DOUBLE_EQ(quantile(data, 0.9), 9.1);                   // h = 8.1
  EXPECT_DOUBLE_EQ(quantile(Samples{10, 20, 40}, 0.75), 30.0);  // h = 1.5
  EXPECT_DOUBLE_EQ(quantile(Samples{42}, 0.3), 42.0);
}

TEST(Spread, MadAndRobustCv) {
  const Samples data = {1, 2, 3, 4, 100};
  // median 3; |x - 3| = {2, 1, 0, 1, 97} -> median 1, unaffected by the outlier.
  EXPECT_DOUBLE_EQ(mad(data), 1.0);
  EXPECT_DOUBLE_EQ(robust_cv(data), 1.4826 / 3.0);
  EXPECT_DOUBLE_EQ(mad(Samples{5, 5, 5}), 0.0);
  EXPECT_DOUBLE_EQ(robust_cv(Samples{5, 5, 5}), 0.0);
}

TEST(Spread, CoefficientOfVariation) {
  // mean 5, sum of squared deviations 32, s = sqrt(32 / 7).
  EXPECT_DOUBLE_EQ(cv(Samples{2, 4, 4, 4, 5, 5, 7, 9}), std::sqrt(32.0 / 7.0) / 5.0);
  // s = 1 on a huge offset: a one-pass variance would lose every digit here.
  EXPECT_NEAR(cv(Samples{1e9 + 1, 1e9 + 2, 1e9 + 3}), 1.0 / (1e9 + 2), 1e-15);
}

// --- exact Mann-Whitney U distribution ------------------------------------------------------

TEST(UDistribution, ThreeByThreeHandCounts) {
  // The 20 arrangements of xxx/yyy by U = #(x > y): U is the number of (x, y) inversions, i.e.
  // partitions of U into at most 3 parts each <= 3: 1,1,2,3,3,3,3,2,1,1.
  const std::vector<double> expected = {1, 1, 2, 3, 3, 3, 3, 2, 1, 1};
  EXPECT_EQ(mann_whitney_u_counts(3, 3), expected);
}

TEST(UDistribution, MatchesBruteForceEnumeration) {
  for (std::size_t m = 1; m <= 6; ++m) {
    for (std::size_t n = 1; n <= 6; ++n) {
      // Every bitmask of m ones over m + n positions is a pooled ordering (bit set = x).
      std::vector<double> expected(m * n + 1, 0.0);
      for (unsigned mask = 0; mask < (1u << (m + n)); ++mask) {
        if (static_cast<std::size_t>(std::popcount(mask)) != m) continue;
        std::size_t u = 0;
        std::size_t ys_below = 0;
        for (std::size_t position = 0; position < m + n; ++position) {
          if (mask >> position & 1u) {
            u += ys_below;
          } else {
            ++ys_below;
          }
        }
        expected[u] += 1.0;
      }
      EXPECT_EQ(mann_whitney_u_counts(m, n), expected) << "m=" << m << " n=" << n;
    }
  }
}

TEST(UDistribution, LargeSizesStayAccurate) {
  const std::vector<double> counts = mann_whitney_u_counts(50, 50);
  ASSERT_EQ(counts.size(), 2501u);
  const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
  EXPECT_NEAR(total / 1.00891344545564193334812497256e29, 1.0, 1e-12);  // C(100, 50)
  for (std::size_t u = 0; u < counts.size(); ++u) {
    EXPECT_NEAR(counts[u] / counts[counts.size() - 1 - u], 1.0, 1e-12) << "u=" << u;
  }
}

// --- confidence-interval rank ---------------------------------------------------------------

TEST(ShiftCiRank, FiveByFiveTextbook) {
  // Cumulative counts of U for m = n = 5 (C(10, 5) = 252): P(U <= 1) = 2/252 = 0.0079,
  // P(U <= 2) = 4/252 = 0.0159, P(U <= 3) = 7/252 = 0.0278. Coverage of [d_(k), d_(26-k)] is
  // 1 - 2 P(U <= k - 1), so 95% needs P(U <= k - 1) <= 0.025: k - 1 = 2, k = 3, giving
  // Hollander & Wolfe's d_(3)..d_(23) with exact coverage 1 - 8/252 = 0.9683.
  const std::vector<double> counts = mann_whitney_u_counts(5, 5);
  EXPECT_DOUBLE_EQ(counts[0] + counts[1], 2.0);
  EXPECT_DOUBLE_EQ(counts[0] + counts[1] + counts[2], 4.0);
  EXPECT_DOUBLE_EQ(counts[0] + counts[1] + counts[2] + counts[3], 7.0);
  const CiRank rank = shift_ci_rank(5, 5, 0.95);
  EXPECT_EQ(rank.k, 3u);
  EXPECT_DOUBLE_EQ(rank.confidence_achieved, 1.0 - 8.0 / 252.0);
  // 90% allows P(U <= k - 1) <= 0.05: P(U <= 4) = 12/252 = 0.0476, so k = 5.
  EXPECT_EQ(shift_ci_rank(5, 5, 0.90).k, 5u);
  // Asking for exactly an attainable level selects it.
  EXPECT_EQ(shift_ci_rank(5, 5, 1.0 - 8.0 / 252.0).k, 3u);
}

TEST(ShiftCiRank, SevenBySeven) {
  // C(14, 7) = 3432; P(U <= 8) = 65/3432 = 0.0189 <= 0.025 < P(U <= 9) = 91/3432: k = 9.
  const CiRank rank = shift_ci_rank(7, 7, 0.95);
  EXPECT_EQ(rank.k, 9u);
  EXPECT_DOUBLE_EQ(rank.confidence_achieved, 1.0 - 130.0 / 3432.0);
}

TEST(ShiftCiRank, UnreachableConfidenceGivesWidestInterval) {
  // m = n = 2: even [d_(1), d_(4)] misses with probability 2 / C(4, 2) = 1/3.
  const CiRank tiny = shift_ci_rank(2, 2, 0.95);
  EXPECT_EQ(tiny.k, 1u);
  EXPECT_DOUBLE_EQ(tiny.confidence_achieved, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(shift_ci_rank(3, 2, 0.95).confidence_achieved, 1.0 - 2.0 / 10.0);
  EXPECT_DOUBLE_EQ(shift_ci_rank(1, 1, 0.95).confidence_achieved, 0.0);
}

TEST(ShiftCiRank, NormalApproximationAgreesWithExactDistribution) {
  // 51 > kExactMaxSize, so k comes from the continuity-corrected normal approximation; judge it
  // by the exact distribution, which mann_whitney_u_counts still computes. At 95% the
  // approximation lands on the exact optimum (k = 1008); without the continuity correction it
  // would be one rank short.
  const std::vector<double> counts = mann_whitney_u_counts(51, 51);
  const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
  std::size_t exact_k = 1;
  double exact_lower = counts[0];
  while (exact_lower + counts[exact_k] <= 0.025 * total) exact_lower += counts[exact_k++];
  const CiRank rank = shift_ci_rank(51, 51, 0.95);
  EXPECT_EQ(rank.k, exact_k);
  EXPECT_EQ(rank.k, 1008u);
  EXPECT_NEAR(rank.confidence_achieved, 1.0 - 2.0 * exact_lower / total, 5e-4);
  // The exact side of the threshold lands on the same level.
  EXPECT_NEAR(shift_ci_rank(50, 50, 0.95).confidence_achieved, 0.95, 0.001);
}

// --- Hodges-Lehmann shift -------------------------------------------------------------------

TEST(HodgesLehmann, HandComputedEstimates) {
  // Differences {1, 2, 3}: median 2.
  EXPECT_DOUBLE_EQ(hodges_lehmann_shift(Samples{1, 2, 3}, Samples{0}).estimate, 2.0);
  // Differences 1-0, 1-2, 5-0, 5-2 = {1, -1, 5, 3}: sorted -1, 1, 3, 5, median 2.
  EXPECT_DOUBLE_EQ(hodges_lehmann_shift(Samples{1, 5}, Samples{0, 2}).estimate, 2.0);
  // Differences {2, 1, 0, 6, 5, 4}: sorted 0, 1, 2, 4, 5, 6, median 3.
  EXPECT_DOUBLE_EQ(hodges_lehmann_shift(Samples{3, 7}, Samples{1, 2, 3}).estimate, 3.0);
}

TEST(HodgesLehmann, FiveByFiveInterval) {
  // Differences 10a - b (a, b in 1..5) are all distinct: 5..9, 15..19, 25..29, 35..39, 45..49.
  // d_(13) = 27, d_(3) = 7, d_(23) = 47.
  const ShiftEstimate shift = hodges_lehmann_shift(Samples{50, 10, 40, 20, 30}, Samples{3, 1, 5, 2, 4});
  EXPECT_DOUBLE_EQ(shift.estimate, 27.0);
  EXPECT_DOUBLE_EQ(shift.ci_low, 7.0);
  EXPECT_DOUBLE_EQ(shift.ci_high, 47.0);
  EXPECT_DOUBLE_EQ(shift.confidence_achieved, 1.0 - 8.0 / 252.0);
}

TEST(HodgesLehmann, TextbookExample) {
  // 50 differences; the middle two are 1.45 - 1.15 = 0.30 and 1.46 - 1.15 = 0.31, so the
  // estimate is 0.305. m = 10, n = 5: P(U <= 8) = 60/3003 = 0.0200 <= 0.025 < P(U <= 9) =
  // 83/3003, so k = 9: d_(9) = 0.73 - 0.88 = -0.15 and d_(42) = 1.64 - 0.88 = 0.76, coverage
  // 1 - 120/3003 = 0.96004 (checked by enumerating all 3003 arrangements; R's
  // wilcox.test(x, y, conf.int = TRUE) picks the same order statistics via qwilcox).
  const ShiftEstimate shift = hodges_lehmann_shift(kTextbookX, kTextbookY);
  EXPECT_NEAR(shift.estimate, 0.305, 1e-12);
  EXPECT_NEAR(shift.ci_low, -0.15, 1e-12);
  EXPECT_NEAR(shift.ci_high, 0.76, 1e-12);
  EXPECT_NEAR(shift.confidence_achieved, 1.0 - 120.0 / 3003.0, 1e-12);
}

TEST(HodgesLehmann, UnreachableConfidenceReturnsFullRange) {
  // Differences {8, 9, 18, 19}; 95% is out of reach for m = n = 2, so [min, max] at 2/3.
  const ShiftEstimate shift = hodges_lehmann_shift(Samples{10, 20}, Samples{1, 2});
  EXPECT_DOUBLE_EQ(shift.estimate, 13.5);
  EXPECT_DOUBLE_EQ(shift.ci_low, 8.0);
  EXPECT_DOUBLE_EQ(shift.ci_high, 19.0);
  EXPECT_DOUBLE_EQ(shift.confidence_achieved, 2.0 / 3.0);
}

TEST(HodgesLehmann, AntisymmetricInArguments) {
  const ShiftEstimate forward = hodges_lehmann_shift(kTextbookX, kTextbookY);
  const ShiftEstimate backward = hodges_lehmann_shift(kTextbookY, kTextbookX);
  EXPECT_DOUBLE_EQ(backward.estimate, -forward.estimate);
  EXPECT_DOUBLE_EQ(backward.ci_low, -forward.ci_high);
  EXPECT_DOUBLE_EQ(backward.ci_high, -forward.ci_low);
  EXPECT_DOUBLE_EQ(backward.confidence_achieved, forward.confidence_achieved);
}

// --- ratio ----------------------------------------------------------------------------------

TEST(RatioOf, HandComputed) {
  // Pairwise ratios 2/1, 2/2, 4/1, 4/2, 8/1, 8/2 = sorted 1, 2, 2, 4, 4, 8; the median of the
  // logs averages log 2 and log 4, so the ratio is sqrt(8). m = 3, n = 2 cannot reach 95%
  // (2 / C(5, 2) = 0.2 miss), so the interval is the full range [1, 8] at 80%.
  const RatioEstimate ratio = ratio_of(Samples{2, 4, 8}, Samples{1, 2});
  EXPECT_NEAR(ratio.ratio, std::sqrt(8.0), 1e-12);
  EXPECT_NEAR(ratio.ci_low, 1.0, 1e-12);
  EXPECT_NEAR(ratio.ci_high, 8.0, 1e-12);
  EXPECT_DOUBLE_EQ(ratio.confidence_achieved, 0.8);
}

TEST(RatioOf, ScaledCopyGivesExactFactor) {
  // log differences of a sample with itself are symmetric about 0, so the shift is exactly log c.
  const Samples base = {1.3, 1.1, 1.7, 0.9, 1.2, 1.25, 1.05};
  Samples scaled = base;
  for (double& value : scaled) value *= 2.5;
  const RatioEstimate ratio = ratio_of(scaled, base);
  EXPECT_NEAR(ratio.ratio, 2.5, 1e-12);
  EXPECT_LT(ratio.ci_low, 2.5);
  EXPECT_GT(ratio.ci_high, 2.5);
}

struct CoverageResult {
  double coverage;
  double mean_log_error;
  double confidence_achieved;
};

// Log-normal samples, numerator = true_ratio * denominator in distribution.
CoverageResult simulate_ratio_coverage(std::size_t m, std::size_t n, double true_ratio, double log_sigma,
                                       double confidence, int trials, std::uint64_t seed) {
  std::mt19937_64 engine(seed);
  std::normal_distribution<double> noise(0.0, log_sigma);
  Samples numerator(m);
  Samples denominator(n);
  int covered = 0;
  double log_error_sum = 0.0;
  double achieved = 0.0;
  for (int trial = 0; trial < trials; ++trial) {
    for (double& value : numerator) value = true_ratio * std::exp(noise(engine));
    for (double& value : denominator) value = std::exp(noise(engine));
    const RatioEstimate ratio = ratio_of(numerator, denominator, confidence);
    covered += ratio.ci_low <= true_ratio && true_ratio <= ratio.ci_high;
    log_error_sum += std::log(ratio.ratio / true_ratio);
    achieved = ratio.confidence_achieved;
  }
  return {static_cast<double>(covered) / trials, log_error_sum / trials, achieved};
}

TEST(RatioOf, CoverageSevenBySeven) {
  constexpr int kTrials = 2000;
  const CoverageResult result = simulate_ratio_coverage(7, 7, 1.7, 0.2, 0.95, kTrials, 20240601);
  EXPECT_GE(result.coverage, 0.93);
  EXPECT_LE(result.coverage, 0.97);
  // The interval is exact for a pure shift of the logs: coverage must match the reported level
  // (1 - 130/3432 = 0.962) within 4 binomial standard errors.
  const double p = result.confidence_achieved;
  EXPECT_NEAR(result.coverage, p, 4.0 * std::sqrt(p * (1.0 - p) / kTrials));
  // HL of symmetric log noise is median-unbiased; the per-trial sd is about
  // 0.2 * sqrt(2/7) ~ 0.11, so the mean over 2000 trials has sd ~ 0.0025.
  EXPECT_NEAR(result.mean_log_error, 0.0, 0.01);
}

TEST(RatioOf, CoverageUnequalSizesAndNormalApproximation) {
  const CoverageResult small = simulate_ratio_coverage(4, 11, 0.6, 0.3, 0.90, 1000, 7);
  EXPECT_NEAR(small.coverage, small.confidence_achieved, 4.0 * std::sqrt(0.1 * 0.9 / 1000));
  EXPECT_NEAR(small.mean_log_error, 0.0, 0.03);
  // 60 > kExactMaxSize: the interval comes from the normal approximation.
  const CoverageResult large = simulate_ratio_coverage(60, 60, 1.1, 0.1, 0.95, 400, 11);
  EXPECT_NEAR(large.confidence_achieved, 0.95, 0.002);
  EXPECT_NEAR(large.coverage, 0.95, 4.0 * std::sqrt(0.05 * 0.95 / 400));
}

// --- Mann-Whitney p-value -------------------------------------------------------------------

TEST(MannWhitney, TextbookExactPValue) {
  // U = #(x > y) = 35 of mn = 50 (R's W = 35). Exact: P(U >= 35) = 382/3003 = 0.1272 (R's
  // one-sided p-value for alternative = "greater"), two-sided 764/3003 = 0.2544.
  EXPECT_NEAR(mann_whitney_p_two_sided(kTextbookX, kTextbookY), 764.0 / 3003.0, 1e-12);
}

TEST(MannWhitney, SmallExactPValues) {
  // Complete separation: only 1 of C(6, 3) = 20 arrangements per tail -> p = 2/20.
  EXPECT_DOUBLE_EQ(mann_whitney_p_two_sided(Samples{1, 2, 3}, Samples{4, 5, 6}), 0.1);
  EXPECT_DOUBLE_EQ(mann_whitney_p_two_sided(Samples{6, 7, 8, 9, 10}, Samples{1, 2, 3, 4, 5}), 2.0 / 252.0);
  // x = {1, 4, 5}, y = {2, 3, 6}: U = 0 + 2 + 2 = 4, lower tail P(U <= 4) = 10/20 -> p = 1.
  EXPECT_DOUBLE_EQ(mann_whitney_p_two_sided(Samples{1, 4, 5}, Samples{2, 3, 6}), 1.0);
  // x = {1, 2, 4}, y = {3, 5, 6}: U = 1, P(U <= 1) = 2/20 -> p = 0.2.
  EXPECT_DOUBLE_EQ(mann_whitney_p_two_sided(Samples{1, 2, 4}, Samples{3, 5, 6}), 0.2);
}

TEST(MannWhitney, TiesUseCorrectedNormalApproximation) {
  // Pooled: 1, 2 2 2, 3 3 3, 4 4, 5, 6. U = #(x > y) + #(x == y)/2 = 8, mn/2 = 15.
  // Tie groups of 3, 3, 2: sum(t^3 - t) = 24 + 24 + 6 = 54.
  // Var = 30/12 * (12 - 54/110) = 28.7727; z = (|8 - 15| - 0.5) / sqrt(Var) = 1.21178;
  // p = erfc(z / sqrt 2) = 0.225598 (= R wilcox.test(exact = FALSE, correct = TRUE)).
  const Samples x = {1, 2, 2, 3, 5};
  const Samples y = {2, 3, 3, 4, 4, 6};
  const double variance = 30.0 / 12.0 * (12.0 - 54.0 / 110.0);
  EXPECT_NEAR(mann_whitney_p_two_sided(x, y), std::erfc(6.5 / std::sqrt(variance) / std::sqrt(2.0)), 1e-14);
  EXPECT_NEAR(mann_whitney_p_two_sided(x, y), 0.225598, 1e-6);
  // Identical samples, and all values tied: no evidence of a shift.
  EXPECT_DOUBLE_EQ(mann_whitney_p_two_sided(Samples{1, 2, 3}, Samples{1, 2, 3}), 1.0);
  EXPECT_DOUBLE_EQ(mann_whitney_p_two_sided(Samples{4, 4}, Samples{4, 4, 4}), 1.0);
}

TEST(MannWhitney, SymmetricInArguments) {
  std::mt19937_64 engine(3);
  std::normal_distribution<double> noise(0.0, 1.0);
  Samples large_x(70);
  Samples large_y(65);
  for (double& value : large_x) value = noise(engine) + 0.3;
  for (double& value : large_y) value = noise(engine);
  const std::vector<std::pair<Samples, Samples>> cases = {
      {kTextbookX, kTextbookY},
      {Samples{1, 2, 2, 3, 5}, Samples{2, 3, 3, 4, 4, 6}},
      {Samples{1.5, 0.2, 9.0}, Samples{3.0, 4.0, 0.1, 7.5, 2.2, 8.8, 6.1}},
      {large_x, large_y},
  };
  for (const auto& [x, y] : cases) {
    const double p = mann_whitney_p_two_sided(x, y);
    EXPECT_EQ(p, mann_whitney_p_two_sided(y, x));
    EXPECT_GT(p, 0.0);
    EXPECT_LE(p, 1.0);
  }
}

// --- bad input ------------------------------------------------------------------------------

TEST(BadInput, EmptyAndNonFiniteThrow) {
  const Samples empty;
  const Samples with_nan = {1.0, kNaN, 2.0};
  const Samples with_inf = {1.0, kInf};
  const Samples good = {1.0, 2.0, 3.0};
  for (const Samples* bad : {&empty, &with_nan, &with_inf}) {
    EXPECT_THROW(median(*bad), std::invalid_argument);
    EXPECT_THROW(quantile(*bad, 0.5), std::invalid_argument);
    EXPECT_THROW(mad(*bad), std::invalid_argument);
    EXPECT_THROW(robust_cv(*bad), std::invalid_argument);
    EXPECT_THROW(cv(*bad), std::invalid_argument);
    EXPECT_THROW(hodges_lehmann_shift(*bad, good), std::invalid_argument);
    EXPECT_THROW(hodges_lehmann_shift(good, *bad), std::invalid_argument);
    EXPECT_THROW(ratio_of(*bad, good), std::invalid_argument);
    EXPECT_THROW(ratio_of(good, *bad), std::invalid_argument);
    EXPECT_THROW(mann_whitney_p_two_sided(*bad, good), std::invalid_argument);
    EXPECT_THROW(mann_whitney_p_two_sided(good, *bad), std::invalid_argument);
  }
}

// Returns what() of the std::invalid_argument thrown by ratio_of, or "" if none was thrown.
std::string ratio_of_error(const Samples& numerator, const Samples& denominator) {
  try {
    ratio_of(numerator, denominator);
  } catch (const std::invalid_argument& error) {
    return error.what();
  }
  return "";
}

TEST(BadInput, RatioRejectsNonPositiveWithClearMessage) {
  const Samples good = {1.0, 2.0};
  for (const std::string& message :
       {ratio_of_error(Samples{1.0, 0.0}, good), ratio_of_error(Samples{-1.0, 2.0}, good)}) {
    EXPECT_NE(message.find("numerator samples must all be > 0"), std::string::npos) << message;
  }
  for (const std::string& message :
       {ratio_of_error(good, Samples{0.0, 1.0}), ratio_of_error(good, Samples{2.0, -3.0})}) {
    EXPECT_NE(message.find("denominator samples must all be > 0"), std::string::npos) << message;
  }
}

TEST(BadInput, OutOfRangeParametersThrow) {
  const Samples good = {1.0, 2.0, 3.0};
  EXPECT_THROW(quantile(good, -0.1), std::invalid_argument);
  EXPECT_THROW(quantile(good, 1.5), std::invalid_argument);
  EXPECT_THROW(quantile(good, kNaN), std::invalid_argument);
  EXPECT_THROW(hodges_lehmann_shift(good, good, 0.0), std::invalid_argument);
  EXPECT_THROW(hodges_lehmann_shift(good, good, 1.0), std::invalid_argument);
  EXPECT_THROW(ratio_of(good, good, kNaN), std::invalid_argument);
  EXPECT_THROW(shift_ci_rank(0, 3, 0.95), std::invalid_argument);
  EXPECT_THROW(cv(Samples{1.0}), std::invalid_argument);
  EXPECT_THROW(cv(Samples{-1.0, 1.0}), std::invalid_argument);
  EXPECT_THROW(robust_cv(Samples{-1.0, 0.0, 1.0}), std::invalid_argument);
}

}  // namespace
}  // namespace pairbench::stats
