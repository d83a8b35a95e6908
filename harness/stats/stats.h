// Summary statistics for benchmark samples: robust location/spread, and the distribution-free
// Hodges–Lehmann shift / ratio estimates with Mann–Whitney confidence intervals and p-values.
// Every function throws std::invalid_argument on empty or non-finite input.
#pragma once

#include <cstddef>
#include <limits>
#include <span>
#include <vector>

namespace pairbench::stats {

// Samples per arm up to which the Mann–Whitney U null distribution is computed exactly; above
// it the normal approximation is used (its error is then far below the sampling noise).
inline constexpr std::size_t kExactMaxSize = 50;

// Scales an unscaled MAD to a consistent estimate of the standard deviation under normality.
inline constexpr double kMadToSigma = 1.4826;

double median(std::span<const double> samples);

// Sample quantile by linear interpolation between order statistics (Hyndman & Fan type 7, the
// default of R and NumPy). q must lie in [0, 1].
double quantile(std::span<const double> samples, double q);

// Median absolute deviation from the median, unscaled.
double mad(std::span<const double> samples);

// kMadToSigma * MAD / |median|; throws std::invalid_argument if the median is zero.
double robust_cv(std::span<const double> samples);

// Sample standard deviation (n - 1 denominator) / |mean|; needs at least 2 samples and a
// non-zero mean, throws std::invalid_argument otherwise.
double cv(std::span<const double> samples);

struct ShiftEstimate {
  double estimate;             // median of all pairwise differences x_i - y_j
  double ci_low;               // d_(k)
  double ci_high;              // d_(mn+1-k)
  double confidence_achieved;  // actual coverage of [ci_low, ci_high], see shift_ci_rank
};

// Hodges–Lehmann estimate of the location shift x - y with the distribution-free confidence
// interval of Bauer (1972) / Hollander & Wolfe (Nonparametric Statistical Methods, sec. 4.3).
// confidence must lie in (0, 1).
ShiftEstimate hodges_lehmann_shift(std::span<const double> x, std::span<const double> y, double confidence = 0.95);

struct RatioEstimate {
  double ratio;
  double ci_low;
  double ci_high;
  double confidence_achieved;
};

// Ratio numerator/denominator as exp(Hodges–Lehmann shift of the log samples), CI likewise
// exponentiated. All samples must be finite and > 0.
RatioEstimate ratio_of(std::span<const double> numerator_samples, std::span<const double> denominator_samples,
                       double confidence = 0.95);

// Two-sided Mann–Whitney (Wilcoxon rank-sum) p-value for a location difference between x and y.
// Exact when there are no ties and both sizes are <= kExactMaxSize; otherwise the normal
// approximation with tie-corrected variance and continuity correction (as R's wilcox.test).
double mann_whitney_p_two_sided(std::span<const double> x, std::span<const double> y);

// Lower-level pieces, exposed so the tests can check them against tabulated values.

// counts[u] = number of the C(m+n, m) equally likely arrangements of m x's and n y's (no ties)
// with U = #{(i, j) : x_i > y_j} = u, for u = 0..m*n. Exact integers while C(m+n, m) < 2^53;
// beyond that correct to double rounding (all terms are positive, no cancellation).
std::vector<double> mann_whitney_u_counts(std::size_t m, std::size_t n);

struct CiRank {
  std::size_t k;               // 1-based: the interval is [d_(k), d_(mn+1-k)]
  double confidence_achieved;  // 1 - 2 P(U <= k - 1)
};

// Order-statistic rank of the Hodges–Lehmann interval: the largest k with
// P(U <= k - 1) <= (1 - confidence) / 2, but at least 1 (see stats.cpp for the small-sample case).
CiRank shift_ci_rank(std::size_t m, std::size_t n, double confidence);

// Holm's step-down adjustment (family-wise error control, any dependence): adjusted p-values
// in the input order; reject where adjusted < alpha.
std::vector<double> holm_adjust(std::span<const double> p_values);
// Benjamini–Hochberg adjustment (false discovery rate control): adjusted p-values, input order.
std::vector<double> benjamini_hochberg_adjust(std::span<const double> p_values);

// --- Distributions and special functions (for the gate's moderated t statistics) -------------

double digamma(double x);           // psi(x), x > 0
double trigamma(double x);          // psi'(x), x > 0
double tetragamma(double x);        // psi''(x), x > 0
double trigamma_inverse(double y);  // the x > 0 with trigamma(x) = y, y > 0 (limma's Newton iteration)

// Regularised incomplete beta function I_x(a, b), a, b > 0, x in [0, 1].
double incomplete_beta(double x, double a, double b);
// Student's t distribution with `df` > 0 degrees of freedom (df = infinity: the normal).
double student_t_cdf(double t, double df);
double student_t_quantile(double p, double df);  // p in (0, 1)

// --- Trimmed means (Yuen 1974) -----------------------------------------------------------------

// A sample summarised for Yuen's trimmed-mean test: gamma-trimmed mean, and the winsorised scale
// whose square over `kept` estimates the variance of that mean. Robust to a slow outlier process.
struct TrimmedSummary {
  double mean = 0;      // trimmed mean
  double scale2 = 0;    // (n - 1) * winsorised variance / (kept - 1); 0 when kept < 2
  int n = 0, kept = 0;  // sample size, and what trimming keeps (n - 2 floor(gamma n))
  // Degrees of freedom of scale2. Yuen's kept - 1 overstates them once values are trimmed: for
  // normal data at 5 to 15 values the winsorised variance varies like a chi-square with about
  // 0.8 (kept - 1) degrees of freedom, and with kept - 1 the test's tail at 1e-5 runs 1.3-1.8x
  // its nominal rate (simulated; tests/harness/moderated_stats_test.cpp checks the calibration).
  double df() const {
    if (kept < 2) return 0;
    return kept < n ? kTrimmedDfFactor * (kept - 1) : kept - 1;
  }
  static constexpr double kTrimmedDfFactor = 0.8;
};
TrimmedSummary trimmed_summary(std::span<const double> values, double gamma = 0.2);

// --- Empirical-Bayes variance prior (Smyth 2004, limma's fitFDist) ---------------------------

// Many benchmarks, each with a variance estimate s2_i on df_i degrees of freedom: the scaled
// inverse-chi-square prior they share, fitted by matching the moments of log s2_i. Each
// benchmark's posterior variance (df0 s0^2 + df_i s2_i) / (df0 + df_i) then has df0 + df_i degrees
// of freedom: at 5 to 9 processes per side this is what lets a t statistic reach small p-values
// without trusting one benchmark's handful of processes for its noise. df0 = infinity when the
// variances are no more spread than sampling alone explains; df0 = 0 (no prior) with fewer than
// `min_count` usable estimates.
struct VariancePrior {
  double df = 0;        // df0, prior degrees of freedom (may be +infinity)
  double variance = 0;  // s0^2
  int count = 0;        // estimates it was fitted on
};
VariancePrior fit_variance_prior(std::span<const double> variances, std::span<const double> dfs, int min_count = 8);
// (df0 s0^2 + df s2) / (df0 + df); s0^2 when df0 is infinite; s2 when there is no prior.
double posterior_variance(const VariancePrior& prior, double s2, double df);
double posterior_df(const VariancePrior& prior, double df);

// --- Always-valid inference for a mean (sequential sampling) -----------------------------------

// A confidence sequence for the mean of i.i.d. normal values with unknown variance, valid at every
// sample size at once (time-uniform), so that a decision may look after every new value and stop
// whenever it likes: the normal mixture of Robbins (1970) with the variance integrated out, Lai's
// (1976) t-mixture (Wang & Ramdas 2023; Howard et al. 2021 for the family). For testing mean = m,
// with S = sum(x - m), Q = sum((x - m)^2) over n values,
//   M_n(m) = sqrt(c2 / (n + c2)) * (1 - S^2 / ((n + c2) (d0 s0^2 + Q)))^(-(n + d0) / 2)
// is a nonnegative martingale with M_0 = 1 under the null: the mixing distribution of the
// standardised effect (mean - m) / sigma is N(0, 1 / c2), and sigma^2 is integrated against the
// scaled inverse chi-square prior (d0, s0^2) in numerator and denominator alike; d0 = 0 is the
// scale-invariant (Haar) case, exact for every sigma; d0 = infinity is sigma = s0 known (Robbins).
// By Ville's inequality P(some n has M_n(m) >= 1 / alpha) <= alpha: the set of m with
// M_n(m) < 1 / alpha is a 1 - alpha confidence sequence, here a closed-form interval
// mean_n +- radius_n, and inf_n 1 / M_n(m) an always-valid p-value.
struct MixtureSpec {
  double c2 = 1.0;            // precision of the mixing normal on the standardised effect
  double prior_variance = 0;  // s0^2 of the variance prior (unused when prior_df == 0)
  double prior_df = 0;        // d0; 0: no prior (Lai), infinity: the variance is prior_variance
};

// log M_n(m) from n, S = sum(x - m) and Q = sum((x - m)^2). n >= 1.
double mixture_log_martingale(double n, double sum, double sum_squares, const MixtureSpec& spec);

// The radius of the 1 - alpha confidence sequence at n values whose squared deviations from their
// own mean sum to `centred_ss`: every m within it of the mean has M_n(m) < 1 / alpha. Infinite
// where no mean can be excluded yet (a handful of values without a variance prior).
double mixture_radius(double n, double centred_ss, double alpha, const MixtureSpec& spec);

// The sequence read after the values `x` arrived one at a time (every prefix is a look):
// the running intersection of the 1 - alpha intervals and the always-valid p-value for mean = 0
// (the running minimum of 1 / M_n(0)), both for a two-sided mixture. Needs no minimum size: with
// fewer than 2 values (no prior) the interval is the whole line and p = 1.
struct AlwaysValidMean {
  int n = 0;
  double mean = 0;                                          // of all n values
  double sd = 0;                                            // their sample standard deviation (0 with n < 2)
  double low = -std::numeric_limits<double>::infinity();    // running intersection of the
  double high = std::numeric_limits<double>::infinity();    // 1 - alpha intervals
  double radius = std::numeric_limits<double>::infinity();  // the last look's own radius
  double p_value = 1;                                       // always-valid, for mean = 0, two-sided
  // Directional: the running minimum of 1 / M_n(0) over the looks whose mean was above (below)
  // 0. Claiming "mean > 0" when p_greater <= a is wrong with probability <= a: it needs the
  // 1 - a sequence to exclude the true mean at some look.
  double p_greater = 1, p_less = 1;
};
AlwaysValidMean always_valid_mean(std::span<const double> x, double alpha, const MixtureSpec& spec);

// A robust always-valid confidence sequence for the centre of symmetry delta of values x_i =
// delta + e_i, the e_i independent and symmetric about 0 (a paired log difference of two
// exchangeable sides: exactly so for identical builds, and under a shift of one side). It bets
// against each candidate delta: x_i's deviation from delta, clipped at +-c_i and divided by c_i,
// has mean 0 under delta by symmetry; the capital prod(1 + lambda_i * clip) is then a nonnegative
// martingale, and by Ville's inequality the deltas where it ever reaches 2 / alpha (either
// direction) are excluded with probability <= alpha. c_i (clip_k robust standard deviations of
// x_1..x_{i-1} about their median) and lambda_i (tuned for a look at target_n values) depend only
// on earlier values, so one burst of a noisy neighbour moves the capital by a bounded factor
// instead of widening the interval as it does a mean's. For each n the capital falls as delta
// rises, so the sequence is an interval found by bisection, and it is the running intersection
// over every look by construction (the supremum over n).
struct LocationSpec {
  double clip_k = 2.0;       // clip at this many robust standard deviations of the earlier values
  double first_clip = 0.7;   // the clip before 2 values are in (log scale: a factor of 2)
  double min_sigma = 0.002;  // the smallest robust standard deviation the clip assumes
  double lambda_max = 0.75;  // the largest bet: one value moves the capital by at most 1.75x / 0.25x
  double target_n = 30;      // the bets are sized for a look at about this many values
  double prior_weight = 1;   // pseudo-values of clipped variance 1/4 in the bet size's estimate
};

struct AlwaysValidLocation {
  int n = 0;
  double estimate = 0;  // the median of the values, clamped into [low, high]
  double scale = 0;     // their robust standard deviation (kMadToSigma * MAD; 0 with n < 2)
  double low = -std::numeric_limits<double>::infinity();  // the 1 - alpha interval (both
  double high = std::numeric_limits<double>::infinity();  // sides at alpha / 2), every look
  // Always-valid one-sided p-values for delta <= 0 (p_greater) and delta >= 0 (p_less): 1 / the
  // highest capital reached betting against delta = 0 with bets sized for `test_alpha`. Valid for
  // the composite null: the capital at 0 is at most the capital at any delta < 0.
  double p_greater = 1, p_less = 1;
};
AlwaysValidLocation always_valid_location(std::span<const double> x, double alpha, double test_alpha,
                                          const LocationSpec& spec = {});

}  // namespace pairbench::stats
