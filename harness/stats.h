// Summary statistics for benchmark samples: robust location/spread, and the distribution-free
// Hodges–Lehmann shift / ratio estimates with Mann–Whitney confidence intervals and p-values.
// Every function throws std::invalid_argument on empty or non-finite input.
#pragma once

#include <cstddef>
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
ShiftEstimate hodges_lehmann_shift(std::span<const double> x, std::span<const double> y,
                                   double confidence = 0.95);

struct RatioEstimate {
  double ratio;
  double ci_low;
  double ci_high;
  double confidence_achieved;
};

// Ratio numerator/denominator as exp(Hodges–Lehmann shift of the log samples), CI likewise
// exponentiated. All samples must be finite and > 0.
RatioEstimate ratio_of(std::span<const double> numerator_samples,
                       std::span<const double> denominator_samples, double confidence = 0.95);

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

// A robust step detector for a series of positive values (e.g. per-run medians; it works on
// their logarithms, so steps are relative): binary segmentation that splits where the CUSUM
// statistic peaks, scores the split by the difference of segment medians over the series' noise
// (robust scale of consecutive differences) times sqrt(nL*nR/n), and keeps the split when that score exceeds
// `min_score` and the step exceeds `min_relative_step` in absolute value. Returns split indices
// (the first index of each new segment), ascending. Segments shorter than `min_segment` are never made.
std::vector<std::size_t> detect_change_points(std::span<const double> series, double min_score = 6.0,
                                              double min_relative_step = 0.02, std::size_t min_segment = 3);

}  // namespace pairbench::stats
