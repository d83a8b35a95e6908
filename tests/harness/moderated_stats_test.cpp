// Known-answer tests for the pieces of the gate's moderated trimmed t statistic: polygamma
// functions, Student's t, Yuen's trimmed summaries and limma's empirical-Bayes variance prior.
// Reference values are from SciPy 1.10 (Debian 12's python3-scipy); the commands are in comments.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "harness/stats/stats.h"

namespace pairbench::stats {
namespace {

// scipy.special.digamma / polygamma(1, x) / polygamma(2, x)
TEST(Polygamma, MatchesScipy) {
  struct Row {
    double x, psi, psi1, psi2;
  };
  const Row rows[] = {{0.1, -10.423754940411076, 101.43329915079275, -2001.8614573783439},
                      {0.5, -1.9635100260214235, 4.9348022005446799, -16.828796644234316},
                      {1.0, -0.5772156649015329, 1.6449340668482266, -2.404113806319188},
                      {2.5, 0.7031566406452432, 0.49035775610023491, -0.23620405164172736},
                      {7.0, 1.872784335098467, 0.15354517795933756, -0.023530472985855234},
                      {40.0, 3.6763273740348428, 0.025315103841291032, -0.00064082027183529847}};
  for (const Row& r : rows) {
    EXPECT_NEAR(digamma(r.x), r.psi, 1e-12 * std::max(1.0, std::fabs(r.psi))) << r.x;
    EXPECT_NEAR(trigamma(r.x), r.psi1, 1e-11 * std::max(1.0, std::fabs(r.psi1))) << r.x;
    EXPECT_NEAR(tetragamma(r.x), r.psi2, 1e-10 * std::max(1.0, std::fabs(r.psi2))) << r.x;
  }
  EXPECT_THROW(digamma(0), std::invalid_argument);
  EXPECT_THROW(trigamma(-1), std::invalid_argument);
}

TEST(Polygamma, TrigammaInverseRoundTrips) {
  for (double x : {1e-4, 0.05, 0.5, 1.0, 3.7, 50.0, 1e4, 1e7}) {
    EXPECT_NEAR(trigamma_inverse(trigamma(x)), x, 1e-6 * x) << x;
  }
}

// scipy.stats.t.cdf / t.sf / t.ppf; scipy.special.betainc
TEST(StudentT, CdfTailAndQuantileMatchScipy) {
  EXPECT_NEAR(student_t_cdf(2.0, 3), 0.9303370157205785, 1e-13);
  EXPECT_NEAR(student_t_cdf(-1.5, 8), 0.08600164597595565, 1e-13);
  EXPECT_NEAR(1 - student_t_cdf(4.0, 16), 0.0005160124234543931, 1e-14);
  EXPECT_NEAR(1 - student_t_cdf(6.0, 20), 3.6218499652082863e-06, 1e-15);
  EXPECT_NEAR(1 - student_t_cdf(10.0, 4), 0.00028100181135799556, 1e-15);
  EXPECT_NEAR(student_t_cdf(0.3, 1e6), 0.6179113910105027, 1e-6);
  // Far tail: the lower tail at -30 is computed directly, not as 1 - cdf.
  EXPECT_NEAR(student_t_cdf(-30, 10) / 1.9808961710156598e-11, 1.0, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.95, 8), 1.8595480375228424, 1e-9);
  EXPECT_NEAR(student_t_quantile(0.99999, 20), 5.542838633160987, 1e-8);
  EXPECT_NEAR(student_t_quantile(0.025, 3), -3.182446305284263, 1e-9);
  EXPECT_NEAR(incomplete_beta(0.3, 2.5, 0.5), 0.01892712407194565, 1e-14);
  EXPECT_NEAR(incomplete_beta(0.9, 0.5, 7), 0.9999999780702158, 1e-14);
  EXPECT_EQ(student_t_cdf(std::numeric_limits<double>::infinity(), 5), 1.0);
  EXPECT_THROW(student_t_quantile(1.0, 5), std::invalid_argument);
  EXPECT_THROW(student_t_cdf(1.0, 0), std::invalid_argument);
}

// scipy.stats.trim_mean(a, 0.2) and scipy.stats.mstats.winsorize(a, (0.2, 0.2)).var(ddof=1)
TEST(TrimmedSummary, YuenTrimmedMeanAndWinsorisedScale) {
  const std::vector<double> a = {3, 1, 2, 10, 4, 5, 6, 7, 8};
  const TrimmedSummary t = trimmed_summary(a);
  EXPECT_EQ(t.n, 9);
  EXPECT_EQ(t.kept, 7);
  EXPECT_DOUBLE_EQ(t.mean, 5.0);
  EXPECT_NEAR(t.scale2, 8 * 5.75 / 6, 1e-12);
  EXPECT_DOUBLE_EQ(t.df(), 0.8 * 6);  // trimmed: Yuen's kept - 1, scaled to the effective df
  // Below 5 values nothing is trimmed: the ordinary mean and variance.
  const TrimmedSummary small = trimmed_summary(std::vector<double>{1, 2, 6});
  EXPECT_EQ(small.kept, 3);
  EXPECT_DOUBLE_EQ(small.mean, 3.0);
  EXPECT_DOUBLE_EQ(small.scale2, 7.0);
  // One value: a mean, no scale.
  EXPECT_EQ(trimmed_summary(std::vector<double>{4}).df(), 0);
}

// The gate's per-benchmark test (two trimmed samples of 9, pooled scale, t on the effective df)
// must not reject more often than nominal in the far tail, where Holm over hundreds of
// benchmarks works: simulated on normal data, rejections at one-sided 1e-3 and 1e-4.
TEST(TrimmedSummary, TrimmedTTestHoldsItsLevelInTheTail) {
  constexpr int kReps = 300000;
  std::mt19937_64 rng(2026);
  std::normal_distribution<double> z(0, 1);
  std::vector<double> a(9), b(9);
  int over3 = 0, over4 = 0;
  double q3 = 0, q4 = 0, cached_df = -1;
  for (int r = 0; r < kReps; ++r) {
    for (double& x : a) x = z(rng);
    for (double& x : b) x = z(rng);
    const TrimmedSummary ta = trimmed_summary(a), tb = trimmed_summary(b);
    const double df = ta.df() + tb.df();
    const double v = (ta.df() * ta.scale2 + tb.df() * tb.scale2) / df;
    const double t = (tb.mean - ta.mean) / std::sqrt(v * (1.0 / ta.kept + 1.0 / tb.kept));
    if (df != cached_df) cached_df = df, q3 = student_t_quantile(1 - 1e-3, df), q4 = student_t_quantile(1 - 1e-4, df);
    over3 += t > q3;
    over4 += t > q4;
  }
  EXPECT_LE(over3, 1.15 * 1e-3 * kReps) << over3;  // 300 expected at the nominal level
  EXPECT_LE(over4, 1.30 * 1e-4 * kReps) << over4;  // 30 expected
  EXPECT_GE(over3, 0.5 * 1e-3 * kReps) << over3;   // and not wastefully conservative
}

TEST(TrimmedSummary, OneWildProcessDoesNotMoveTheMean) {
  std::vector<double> logs = {0.00, 0.01, -0.01, 0.005, -0.005, 0.0, 0.01, -0.01, 0.002};
  const double before = trimmed_summary(logs).mean;
  logs[3] = 0.7;  // one process twice as slow
  EXPECT_NEAR(trimmed_summary(logs).mean, before, 0.005);
}

// The limma recipe (fitFDist) on the same ten variances in NumPy/SciPy: df0 = 10.1096499237,
// s0^2 = 0.00957580553779.
TEST(VariancePrior, MatchesLimmaRecipe) {
  const std::vector<double> v = {0.010, 0.004, 0.020, 0.007, 0.003, 0.015, 0.009, 0.006, 0.012, 0.030};
  const std::vector<double> d(v.size(), 8.0);
  const VariancePrior p = fit_variance_prior(v, d);
  EXPECT_NEAR(p.df, 10.1096499237, 1e-6);
  EXPECT_NEAR(p.variance, 0.00957580553779, 1e-10);
  EXPECT_EQ(p.count, 10);
  EXPECT_NEAR(posterior_variance(p, 0.02, 8), (p.df * p.variance + 8 * 0.02) / (p.df + 8), 1e-15);
  EXPECT_NEAR(posterior_df(p, 8), p.df + 8, 1e-12);
}

TEST(VariancePrior, RecoversAKnownPriorFromSimulatedVariances) {
  // sigma_i^2 ~ scaled inverse chi-square(d0 = 12, s0^2 = 0.0025); s_i^2 ~ sigma_i^2 chi2_8 / 8.
  std::mt19937_64 rng(7);
  std::chi_squared_distribution<double> prior_chi(12), sample_chi(8);
  std::vector<double> v, d;
  for (int i = 0; i < 4000; ++i) {
    const double sigma2 = 12 * 0.0025 / prior_chi(rng);
    v.push_back(sigma2 * sample_chi(rng) / 8);
    d.push_back(8);
  }
  const VariancePrior p = fit_variance_prior(v, d);
  EXPECT_NEAR(p.df, 12, 2.5);
  EXPECT_NEAR(p.variance, 0.0025, 0.00025);
}

TEST(VariancePrior, EqualTrueVariancesGiveAnInfinitePrior) {
  std::mt19937_64 rng(11);
  std::chi_squared_distribution<double> chi(8);
  std::vector<double> v, d;
  for (int i = 0; i < 3000; ++i) {
    v.push_back(0.001 * chi(rng) / 8);
    d.push_back(8);
  }
  const VariancePrior p = fit_variance_prior(v, d);
  EXPECT_GT(p.df, 200);  // infinite or very large: sampling explains all the spread
  EXPECT_NEAR(p.variance, 0.001, 0.0001);
}

TEST(VariancePrior, TooFewOrDeterministicEstimatesGiveNoPrior) {
  const std::vector<double> v = {0.01, 0.0, 0.02};
  const std::vector<double> d = {8, 8, 8};
  const VariancePrior p = fit_variance_prior(v, d);
  EXPECT_EQ(p.df, 0);
  EXPECT_EQ(p.count, 2);  // the zero variance is not an estimate of noise
  EXPECT_DOUBLE_EQ(posterior_variance(p, 0.5, 8), 0.5);
}

}  // namespace
}  // namespace pairbench::stats
