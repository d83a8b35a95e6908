// Implementation of pairbench::stats: order statistics, the exact Mann–Whitney U null
// distribution, Hodges–Lehmann shift/ratio intervals and the Mann–Whitney p-value.
#include "harness/stats/stats.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace pairbench::stats {
namespace {

void require_samples(std::span<const double> samples, const char* function) {
  if (samples.empty()) {
    throw std::invalid_argument(std::string("pairbench::stats::") + function + ": empty sample");
  }
  for (double value : samples) {
    if (!std::isfinite(value)) {
      throw std::invalid_argument(std::string("pairbench::stats::") + function +
                                  ": sample contains a non-finite value (NaN or infinity)");
    }
  }
}

void require_confidence(double confidence, const char* function) {
  if (!(confidence > 0.0 && confidence < 1.0)) {
    throw std::invalid_argument(std::string("pairbench::stats::") + function +
                                ": confidence must lie strictly between 0 and 1");
  }
}

std::vector<double> sorted_copy(std::span<const double> samples) {
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  return sorted;
}

// Type-7 quantile of already sorted, validated data.
double sorted_quantile(const std::vector<double>& sorted, double q) {
  const double h = static_cast<double>(sorted.size() - 1) * q;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

double normal_cdf(double z) { return 0.5 * std::erfc(-z / std::sqrt(2.0)); }

// Inverse of normal_cdf. The standard library has none; bisection on the monotone CDF is
// slower than a rational approximation but trivially correct to full double precision, and it
// runs once per interval.
double normal_quantile(double p) {
  double lo = -40.0;
  double hi = 40.0;
  for (int iteration = 0; iteration < 200 && hi - lo > 1e-15; ++iteration) {
    const double mid = 0.5 * (lo + hi);
    (normal_cdf(mid) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

bool use_exact_distribution(std::size_t m, std::size_t n) { return m <= kExactMaxSize && n <= kExactMaxSize; }

}  // namespace

double median(std::span<const double> samples) {
  require_samples(samples, "median");
  return sorted_quantile(sorted_copy(samples), 0.5);
}

double quantile(std::span<const double> samples, double q) {
  require_samples(samples, "quantile");
  if (!(q >= 0.0 && q <= 1.0)) {
    throw std::invalid_argument("pairbench::stats::quantile: q must lie in [0, 1]");
  }
  return sorted_quantile(sorted_copy(samples), q);
}

double mad(std::span<const double> samples) {
  require_samples(samples, "mad");
  const double center = median(samples);
  std::vector<double> deviations(samples.size());
  std::transform(samples.begin(), samples.end(), deviations.begin(),
                 [center](double value) { return std::abs(value - center); });
  return median(deviations);
}

double robust_cv(std::span<const double> samples) {
  require_samples(samples, "robust_cv");
  const double center = median(samples);
  if (center == 0.0) {
    throw std::invalid_argument("pairbench::stats::robust_cv: median is zero");
  }
  return kMadToSigma * mad(samples) / std::abs(center);
}

double cv(std::span<const double> samples) {
  require_samples(samples, "cv");
  if (samples.size() < 2) {
    throw std::invalid_argument("pairbench::stats::cv: needs at least 2 samples");
  }
  const double n = static_cast<double>(samples.size());
  const double mean = std::accumulate(samples.begin(), samples.end(), 0.0) / n;
  if (mean == 0.0) {
    throw std::invalid_argument("pairbench::stats::cv: mean is zero");
  }
  // Two-pass variance: the one-pass formula cancels catastrophically when the spread is tiny
  // relative to the mean, which is the normal case for benchmark timings.
  double sum_squares = 0.0;
  for (double value : samples) sum_squares += (value - mean) * (value - mean);
  return std::sqrt(sum_squares / (n - 1.0)) / std::abs(mean);
}

std::vector<double> mann_whitney_u_counts(std::size_t m, std::size_t n) {
  // The distribution is symmetric in (m, n); fixing the order makes results bit-identical for
  // swapped arguments, which keeps p(x, y) == p(y, x) exact.
  if (m > n) std::swap(m, n);
  const std::size_t max_u = m * n;
  // Mann & Whitney (1947) recurrence on the largest pooled observation: if it is an x it beats
  // all j remaining y's, otherwise it contributes nothing:
  //   f(i, j, u) = f(i - 1, j, u - j) + f(i, j - 1, u),   f(0, j, u) = f(i, 0, u) = [u == 0].
  // Only additions of non-negative terms, so double stays accurate far beyond 2^53.
  std::vector<std::vector<double>> previous(n + 1, std::vector<double>(max_u + 1, 0.0));
  for (auto& row : previous) row[0] = 1.0;
  std::vector<std::vector<double>> current = previous;
  for (std::size_t i = 1; i <= m; ++i) {
    for (std::size_t j = 1; j <= n; ++j) {
      for (std::size_t u = 0; u <= i * j; ++u) {
        current[j][u] = (u >= j ? previous[j][u - j] : 0.0) + current[j - 1][u];
      }
    }
    std::swap(previous, current);
  }
  return previous[n];
}

CiRank shift_ci_rank(std::size_t m, std::size_t n, double confidence) {
  if (m == 0 || n == 0) {
    throw std::invalid_argument("pairbench::stats::shift_ci_rank: sample sizes must be >= 1");
  }
  require_confidence(confidence, "shift_ci_rank");
  const double tail = (1.0 - confidence) / 2.0;
  const double mn = static_cast<double>(m) * static_cast<double>(n);
  // Under a pure shift Delta, #{d_ij < Delta} has the null distribution of U, so
  // P(Delta < d_(k)) = P(Delta > d_(mn+1-k)) = P(U <= k - 1) and the coverage of
  // [d_(k), d_(mn+1-k)] is 1 - 2 P(U <= k - 1) (Hollander & Wolfe, sec. 4.3).
  //
  // With very few samples even the widest interval [d_(1), d_(mn)] misses Delta with probability
  // 2 / C(m+n, m) (e.g. 1/3 for m = n = 2), so the requested confidence may be unreachable. We
  // then still return k = 1 rather than failing or inventing a wider interval: the caller gets
  // the most informative interval the data support and confidence_achieved tells it how much
  // that interval is worth.
  if (use_exact_distribution(m, n)) {
    const std::vector<double> counts = mann_whitney_u_counts(m, n);
    const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
    // Slack so that asking for exactly an attainable level (e.g. 1 - 8/252) selects it.
    const double limit = tail * total * (1.0 + 1e-12);
    // k = 1 is kept even when counts[0] alone exceeds the limit (unreachable level, see above).
    std::size_t k = 1;
    double lower = counts[0];  // total * P(U <= k - 1)
    while (k < counts.size() && lower + counts[k] <= limit) {
      lower += counts[k];
      ++k;
    }
    return {k, 1.0 - 2.0 * lower / total};
  }
  // Normal approximation with continuity correction: P(U <= k - 1) ~ Phi((k - 1/2 - mn/2) / s),
  // s^2 = mn (m + n + 1) / 12; take the largest k keeping that below the tail.
  const double sigma = std::sqrt(mn * static_cast<double>(m + n + 1) / 12.0);
  const double z = normal_quantile(1.0 - tail);
  const double raw_k = std::floor(mn / 2.0 - z * sigma + 0.5);
  const std::size_t k = raw_k < 1.0 ? 1 : static_cast<std::size_t>(raw_k);
  const double k_tail = normal_cdf((static_cast<double>(k) - 0.5 - mn / 2.0) / sigma);
  return {k, 1.0 - 2.0 * k_tail};
}

ShiftEstimate hodges_lehmann_shift(std::span<const double> x, std::span<const double> y, double confidence) {
  require_samples(x, "hodges_lehmann_shift");
  require_samples(y, "hodges_lehmann_shift");
  require_confidence(confidence, "hodges_lehmann_shift");
  std::vector<double> differences;
  differences.reserve(x.size() * y.size());
  for (double xi : x) {
    for (double yj : y) differences.push_back(xi - yj);
  }
  std::sort(differences.begin(), differences.end());
  // The interval assumes continuous data; with ties among the differences the closed interval
  // is conservative, so confidence_achieved remains a lower bound in practice.
  const CiRank rank = shift_ci_rank(x.size(), y.size(), confidence);
  return {sorted_quantile(differences, 0.5), differences[rank.k - 1], differences[differences.size() - rank.k],
          rank.confidence_achieved};
}

RatioEstimate ratio_of(std::span<const double> numerator_samples, std::span<const double> denominator_samples,
                       double confidence) {
  // Logs turn the multiplicative model typical of timings (noise proportional to the mean)
  // into a pure location shift, the model under which the Hodges–Lehmann interval is exact.
  auto logs = [](std::span<const double> samples, const char* which) {
    require_samples(samples, "ratio_of");
    std::vector<double> result;
    result.reserve(samples.size());
    for (double value : samples) {
      if (!(value > 0.0)) {
        std::ostringstream message;
        message << "pairbench::stats::ratio_of: " << which << " samples must all be > 0 (got " << value << ")";
        throw std::invalid_argument(message.str());
      }
      result.push_back(std::log(value));
    }
    return result;
  };
  const std::vector<double> log_numerator = logs(numerator_samples, "numerator");
  const std::vector<double> log_denominator = logs(denominator_samples, "denominator");
  const ShiftEstimate shift = hodges_lehmann_shift(log_numerator, log_denominator, confidence);
  return {std::exp(shift.estimate), std::exp(shift.ci_low), std::exp(shift.ci_high), shift.confidence_achieved};
}

double mann_whitney_p_two_sided(std::span<const double> x, std::span<const double> y) {
  require_samples(x, "mann_whitney_p_two_sided");
  require_samples(y, "mann_whitney_p_two_sided");
  const std::size_t m = x.size();
  const std::size_t n = y.size();
  const std::size_t total_size = m + n;

  // Midranks of the pooled sample; U = (rank sum of x) - m(m+1)/2 counts x_i > y_j pairs with
  // ties as 1/2. All quantities are half-integers, exact in double.
  std::vector<std::pair<double, bool>> pooled;  // (value, belongs to x)
  pooled.reserve(total_size);
  for (double value : x) pooled.emplace_back(value, true);
  for (double value : y) pooled.emplace_back(value, false);
  std::sort(pooled.begin(), pooled.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  double rank_sum_x = 0.0;
  double tie_term = 0.0;  // sum over tie groups of t^3 - t
  for (std::size_t begin = 0; begin < total_size;) {
    std::size_t end = begin + 1;
    while (end < total_size && pooled[end].first == pooled[begin].first) ++end;
    const double midrank = static_cast<double>(begin + end + 1) / 2.0;
    for (std::size_t i = begin; i < end; ++i) {
      if (pooled[i].second) rank_sum_x += midrank;
    }
    const double t = static_cast<double>(end - begin);
    tie_term += t * t * t - t;
    begin = end;
  }
  const double md = static_cast<double>(m);
  const double mn = md * static_cast<double>(n);
  const double u = rank_sum_x - md * (md + 1.0) / 2.0;

  if (tie_term == 0.0 && use_exact_distribution(m, n)) {
    // The null distribution is symmetric about mn/2, so the two-sided p-value is twice the lower
    // tail at the more extreme of U and mn - U; using only the lower tail keeps p(x,y) == p(y,x).
    const std::vector<double> counts = mann_whitney_u_counts(m, n);
    const double total = std::accumulate(counts.begin(), counts.end(), 0.0);
    const auto extreme = static_cast<std::ptrdiff_t>(std::min(u, mn - u));
    const double lower_tail = std::accumulate(counts.begin(), counts.begin() + extreme + 1, 0.0) / total;
    return std::min(1.0, 2.0 * lower_tail);
  }

  // Normal approximation, tie-corrected variance (Lehmann 1975, eq. 1.48) and continuity
  // correction, matching R's wilcox.test(exact = FALSE, correct = TRUE).
  const double big_n = static_cast<double>(total_size);
  const double variance = mn / 12.0 * ((big_n + 1.0) - tie_term / (big_n * (big_n - 1.0)));
  if (variance <= 0.0) return 1.0;  // every observation tied: no evidence of any shift
  const double z = std::max(0.0, std::abs(u - mn / 2.0) - 0.5) / std::sqrt(variance);
  return std::erfc(z / std::sqrt(2.0));
}

std::vector<double> holm_adjust(std::span<const double> p_values) {
  const std::size_t m = p_values.size();
  std::vector<std::size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return p_values[a] < p_values[b]; });
  std::vector<double> adjusted(m);
  double running = 0;
  for (std::size_t rank = 0; rank < m; ++rank) {
    const double p = p_values[order[rank]];
    if (!(p >= 0 && p <= 1)) throw std::invalid_argument("pairbench::stats::holm_adjust: p-value outside [0, 1]");
    running = std::max(running, std::min(1.0, static_cast<double>(m - rank) * p));  // monotone step-down
    adjusted[order[rank]] = running;
  }
  return adjusted;
}

std::vector<double> benjamini_hochberg_adjust(std::span<const double> p_values) {
  const std::size_t m = p_values.size();
  std::vector<std::size_t> order(m);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return p_values[a] < p_values[b]; });
  std::vector<double> adjusted(m);
  double running = 1;
  for (std::size_t rank = m; rank-- > 0;) {
    const double p = p_values[order[rank]];
    if (!(p >= 0 && p <= 1)) {
      throw std::invalid_argument("pairbench::stats::benjamini_hochberg_adjust: p-value outside [0, 1]");
    }
    running = std::min(running, std::min(1.0, p * static_cast<double>(m) / static_cast<double>(rank + 1)));
    adjusted[order[rank]] = running;
  }
  return adjusted;
}

// --- Special functions -------------------------------------------------------------------------

double digamma(double x) {
  if (!(x > 0)) throw std::invalid_argument("pairbench::stats::digamma: x must be > 0");
  double result = 0;
  while (x < 12) {  // psi(x) = psi(x + 1) - 1/x, up to where the asymptotic series is accurate to ~1e-15
    result -= 1 / x;
    x += 1;
  }
  const double f = 1 / (x * x);
  return result + std::log(x) - 0.5 / x -
         f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f * (1.0 / 132)))));
}

double trigamma(double x) {
  if (!(x > 0)) throw std::invalid_argument("pairbench::stats::trigamma: x must be > 0");
  double result = 0;
  while (x < 12) {  // psi'(x) = psi'(x + 1) + 1/x^2
    result += 1 / (x * x);
    x += 1;
  }
  const double f = 1 / (x * x);
  // 1/x + 1/(2x^2) + 1/(6x^3) - 1/(30x^5) + 1/(42x^7) - 1/(30x^9) + 5/(66x^11)
  return result + 1 / x + f / 2 + f / x * (1.0 / 6 - f * (1.0 / 30 - f * (1.0 / 42 - f * (1.0 / 30 - f * 5.0 / 66))));
}

double tetragamma(double x) {
  if (!(x > 0)) throw std::invalid_argument("pairbench::stats::tetragamma: x must be > 0");
  double result = 0;
  while (x < 12) {  // psi''(x) = psi''(x + 1) - 2/x^3
    result -= 2 / (x * x * x);
    x += 1;
  }
  const double f = 1 / (x * x);
  // -1/x^2 - 1/x^3 - 1/(2x^4) + 1/(6x^6) - 1/(6x^8) + 3/(10x^10) - 5/(6x^12)
  return result - f - f / x - f * f * (0.5 - f * (1.0 / 6 - f * (1.0 / 6 - f * (3.0 / 10 - f * 5.0 / 6))));
}

double trigamma_inverse(double y) {
  if (!(y > 0)) throw std::invalid_argument("pairbench::stats::trigamma_inverse: y must be > 0");
  if (y > 1e7) return 1 / std::sqrt(y);  // trigamma(x) ~ 1/x^2 near 0
  if (y < 1e-6) return 1 / y;            // trigamma(x) ~ 1/x for large x
  // Smyth's Newton iteration on 1/trigamma(x), which is nearly linear in x: monotone convergence.
  double x = 0.5 + 1 / y;
  for (int i = 0; i < 50; ++i) {
    const double tri = trigamma(x);
    const double step = tri * (1 - tri / y) / tetragamma(x);
    x += step;
    if (-step / x < 1e-10) break;
  }
  return x;
}

namespace {
// Continued fraction for the incomplete beta (modified Lentz), valid for x < (a + 1) / (a + b + 2).
double beta_continued_fraction(double x, double a, double b) {
  constexpr double kTiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 10000; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + aa * d;
    if (std::fabs(d) < kTiny) d = kTiny;
    c = 1 + aa / c;
    if (std::fabs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::fabs(delta - 1) < 1e-15) break;
  }
  return h;
}
}  // namespace

double incomplete_beta(double x, double a, double b) {
  if (!(a > 0 && b > 0) || !(x >= 0 && x <= 1)) {
    throw std::invalid_argument("pairbench::stats::incomplete_beta: needs a, b > 0 and x in [0, 1]");
  }
  if (x == 0 || x == 1) return x;
  const double log_front = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  if (x < (a + 1) / (a + b + 2)) return std::exp(log_front) * beta_continued_fraction(x, a, b) / a;
  return 1 - std::exp(log_front) * beta_continued_fraction(1 - x, b, a) / b;
}

double student_t_cdf(double t, double df) {
  if (std::isnan(t) || !(df > 0)) throw std::invalid_argument("pairbench::stats::student_t_cdf: needs df > 0");
  if (std::isinf(t)) return t > 0 ? 1 : 0;
  if (std::isinf(df) || df > 1e8) return normal_cdf(t);
  // P(T > |t|) = I_{df/(df+t^2)}(df/2, 1/2) / 2; written through t^2/df for accuracy at large |t|.
  const double x = df / (df + t * t);
  const double tail = 0.5 * incomplete_beta(x, df / 2, 0.5);
  return t > 0 ? 1 - tail : tail;
}

double student_t_quantile(double p, double df) {
  if (!(p > 0 && p < 1) || !(df > 0)) {
    throw std::invalid_argument("pairbench::stats::student_t_quantile: needs p in (0, 1) and df > 0");
  }
  if (p == 0.5) return 0;
  if (p < 0.5) return -student_t_quantile(1 - p, df);
  double lo = 0, hi = 1;
  while (student_t_cdf(hi, df) < p && hi < 1e300) hi *= 2;
  for (int i = 0; i < 300 && hi - lo > 1e-12 * hi; ++i) {
    const double mid = 0.5 * (lo + hi);
    (student_t_cdf(mid, df) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

TrimmedSummary trimmed_summary(std::span<const double> values, double gamma) {
  require_samples(values, "trimmed_summary");
  if (!(gamma >= 0 && gamma < 0.5)) throw std::invalid_argument("pairbench::stats::trimmed_summary: gamma in [0, 0.5)");
  std::vector<double> v = sorted_copy(values);
  const std::size_t n = v.size();
  const auto g = static_cast<std::size_t>(std::floor(gamma * static_cast<double>(n)));
  TrimmedSummary out;
  out.n = static_cast<int>(n);
  out.kept = static_cast<int>(n - 2 * g);
  double sum = 0;
  for (std::size_t i = g; i < n - g; ++i) sum += v[i];
  out.mean = sum / out.kept;
  if (out.kept < 2) return out;
  for (std::size_t i = 0; i < g; ++i) {  // winsorise
    v[i] = v[g];
    v[n - 1 - i] = v[n - 1 - g];
  }
  const double mean_w = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(n);
  double ss = 0;
  for (double x : v) ss += (x - mean_w) * (x - mean_w);
  out.scale2 = ss / (out.kept - 1);  // = (n - 1) s_w^2 / (kept - 1)
  return out;
}

VariancePrior fit_variance_prior(std::span<const double> variances, std::span<const double> dfs, int min_count) {
  if (variances.size() != dfs.size()) throw std::invalid_argument("pairbench::stats::fit_variance_prior: sizes differ");
  std::vector<double> e, tri;
  for (std::size_t i = 0; i < variances.size(); ++i) {
    if (!(variances[i] > 0) || !std::isfinite(variances[i]) || !(dfs[i] > 0)) continue;  // deterministic or unknown
    const double half = dfs[i] / 2;
    e.push_back(std::log(variances[i]) - digamma(half) + std::log(half));
    tri.push_back(trigamma(half));
  }
  VariancePrior prior;
  prior.count = static_cast<int>(e.size());
  if (prior.count < std::max(min_count, 2)) return prior;  // too few to learn a prior from
  const double n = static_cast<double>(e.size());
  const double mean_e = std::accumulate(e.begin(), e.end(), 0.0) / n;
  double ss = 0;
  for (double x : e) ss += (x - mean_e) * (x - mean_e);
  const double excess = ss / (n - 1) - std::accumulate(tri.begin(), tri.end(), 0.0) / n;
  if (excess > 0) {
    prior.df = 2 * trigamma_inverse(excess);
    prior.variance = std::exp(mean_e + digamma(prior.df / 2) - std::log(prior.df / 2));
  } else {
    prior.df = std::numeric_limits<double>::infinity();
    prior.variance = std::exp(mean_e);
  }
  return prior;
}

double posterior_variance(const VariancePrior& prior, double s2, double df) {
  if (std::isinf(prior.df)) return prior.variance;
  if (prior.df + df <= 0) return s2;
  return (prior.df * prior.variance + df * s2) / (prior.df + df);
}

double posterior_df(const VariancePrior& prior, double df) { return prior.df + df; }

}  // namespace pairbench::stats

namespace pairbench::stats {

double mixture_log_martingale(double n, double sum, double sum_squares, const MixtureSpec& spec) {
  if (!(n >= 1) || !(spec.c2 > 0) || !std::isfinite(sum) || !(sum_squares >= 0)) {
    throw std::invalid_argument("pairbench::stats::mixture_log_martingale: bad arguments");
  }
  const double n_c2 = n + spec.c2, log_shrink = 0.5 * std::log(spec.c2 / n_c2);
  if (std::isinf(spec.prior_df)) {  // sigma^2 known: Robbins' normal mixture
    return log_shrink + sum * sum / (2 * spec.prior_variance * n_c2);
  }
  const double scale = spec.prior_df * spec.prior_variance + sum_squares;
  if (!(scale > 0)) return sum == 0 ? 0.0 : std::numeric_limits<double>::infinity();
  // S^2 <= n Q < (n + c2) Q: the fraction lies in [0, 1).
  const double fraction = std::min(sum * sum / (n_c2 * scale), 1.0);
  return log_shrink - 0.5 * (n + spec.prior_df) * std::log1p(-fraction);
}

double mixture_radius(double n, double centred_ss, double alpha, const MixtureSpec& spec) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (!(n >= 1) || !(alpha > 0 && alpha < 1) || !(centred_ss >= 0) || !(spec.c2 > 0)) {
    throw std::invalid_argument("pairbench::stats::mixture_radius: bad arguments");
  }
  const double n_c2 = n + spec.c2;
  if (std::isinf(spec.prior_df)) {
    // S^2 >= 2 sigma^2 (n + c2) log(sqrt((n + c2) / c2) / alpha), S = n (mean - m).
    return std::sqrt(2 * spec.prior_variance * n_c2 * (0.5 * std::log(n_c2 / spec.c2) - std::log(alpha))) / n;
  }
  // M_n(m) >= 1 / alpha  <=>  S^2 >= k (D + Q), k = (1 - q)(n + c2), q = (alpha^2 c2 / (n + c2))^(1 / (n + d0)),
  // with S = n d and Q = SS + n d^2 for d = mean - m:  d^2 >= k (D + SS) / (n (n - k)).
  const double power = n + spec.prior_df;
  if (!(power > 0)) return kInf;
  const double k = -std::expm1((2 * std::log(alpha) + std::log(spec.c2 / n_c2)) / power) * n_c2;
  if (!(n > k)) return kInf;  // even an infinite t cannot reach 1 / alpha yet
  return std::sqrt(k * (spec.prior_df * spec.prior_variance + centred_ss) / (n * (n - k)));
}

AlwaysValidMean always_valid_mean(std::span<const double> x, double alpha, const MixtureSpec& spec) {
  AlwaysValidMean out;
  double mean = 0, ss = 0, sum = 0, sum_squares = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (!std::isfinite(x[i])) throw std::invalid_argument("pairbench::stats::always_valid_mean: value not finite");
    const double n = static_cast<double>(i + 1), delta = x[i] - mean;  // Welford
    mean += delta / n;
    ss += delta * (x[i] - mean);
    sum += x[i];
    sum_squares += x[i] * x[i];
    const double radius = mixture_radius(n, ss, alpha, spec);
    out.low = std::max(out.low, mean - radius);
    out.high = std::min(out.high, mean + radius);
    out.radius = radius;
    const double p = std::exp(-mixture_log_martingale(n, sum, sum_squares, spec));
    out.p_value = std::min(out.p_value, p);
    if (sum > 0) out.p_greater = std::min(out.p_greater, p);
    if (sum < 0) out.p_less = std::min(out.p_less, p);
  }
  out.n = static_cast<int>(x.size());
  out.mean = mean;
  out.sd = x.size() >= 2 ? std::sqrt(ss / static_cast<double>(x.size() - 1)) : 0;
  if (out.low > out.high) out.low = out.high = std::clamp(mean, out.high, out.low);  // crossed: a point (rare)
  return out;
}

namespace {

// What the bets of always_valid_location need from the values before each one: the clip c_i and
// the bet sizes for the interval and for the test, all from x_1..x_{i-1} only (predictable).
struct Bets {
  std::vector<double> clip, interval, test;
};

Bets location_bets(std::span<const double> x, double alpha, double test_alpha, const LocationSpec& spec) {
  Bets b;
  const double log_interval = std::log(2 / alpha), log_test = std::log(1 / test_alpha);
  std::vector<double> earlier;
  for (std::size_t i = 0; i < x.size(); ++i) {
    double c = spec.first_clip, v = 0.25 * spec.prior_weight;
    if (earlier.size() >= 2) {
      const double centre = median(earlier);
      // Two values: |x1 - x0| is about 1.13 sigma; from three on, the MAD. A floor keeps a run of
      // identical values from clipping every later one to a sign.
      const double sigma = std::max(
          spec.min_sigma, earlier.size() == 2 ? std::fabs(earlier[1] - earlier[0]) / 1.13 : kMadToSigma * mad(earlier));
      c = spec.clip_k * sigma;
      // The clipped variance so far, about the earlier median, in units of the clip just chosen.
      for (double e : earlier) {
        const double u = std::clamp((e - centre) / c, -1.0, 1.0);
        v += u * u;
      }
    }
    v /= spec.prior_weight + static_cast<double>(earlier.size());
    v = std::max(v, 1e-3);
    b.clip.push_back(c);
    b.interval.push_back(std::min(spec.lambda_max, std::sqrt(2 * log_interval / (v * spec.target_n))));
    b.test.push_back(std::min(spec.lambda_max, std::sqrt(2 * log_test / (v * spec.target_n))));
    earlier.push_back(x[i]);
  }
  return b;
}

// The highest log capital over every prefix, betting that the values lie above delta (sign +1)
// or below it (sign -1).
double best_log_capital(std::span<const double> x, const Bets& b, const std::vector<double>& lambda, double delta,
                        double sign) {
  double log_capital = 0, best = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double u = std::clamp((x[i] - delta) / b.clip[i], -1.0, 1.0);
    log_capital += std::log1p(sign * lambda[i] * u);
    best = std::max(best, log_capital);
  }
  return best;
}

}  // namespace

AlwaysValidLocation always_valid_location(std::span<const double> x, double alpha, double test_alpha,
                                          const LocationSpec& spec) {
  for (double v : x) {
    if (!std::isfinite(v)) throw std::invalid_argument("pairbench::stats::always_valid_location: value not finite");
  }
  if (!(alpha > 0 && alpha < 1 && test_alpha > 0 && test_alpha < 1)) {
    throw std::invalid_argument("pairbench::stats::always_valid_location: alpha outside (0, 1)");
  }
  AlwaysValidLocation out;
  out.n = static_cast<int>(x.size());
  if (x.empty()) return out;
  const Bets b = location_bets(x, alpha, test_alpha, spec);
  const double bar = std::log(2 / alpha);
  const auto [lo_it, hi_it] = std::minmax_element(x.begin(), x.end());
  const double widest = *std::max_element(b.clip.begin(), b.clip.end());
  const double below = *lo_it - widest - 1, above = *hi_it + widest + 1;  // every clip saturated
  // The lower end: the smallest delta the "above delta" capital never reached the bar against.
  // Capital falls as delta rises (each factor does), so bisection finds it.
  auto bound = [&](double sign) {
    const double far = sign > 0 ? below : above, near = sign > 0 ? above : below;
    if (best_log_capital(x, b, b.interval, far, sign) < bar) return sign > 0 ? out.low : out.high;  // none excluded
    double excluded = far, kept = near;
    for (int it = 0; it < 60 && std::fabs(kept - excluded) > 1e-9 * (1 + std::fabs(kept)); ++it) {
      const double mid = 0.5 * (excluded + kept);
      (best_log_capital(x, b, b.interval, mid, sign) >= bar ? excluded : kept) = mid;
    }
    return kept;
  };
  out.low = bound(+1);
  out.high = bound(-1);
  std::vector<double> values(x.begin(), x.end());
  out.estimate = median(values);
  out.scale = values.size() >= 2 ? kMadToSigma * mad(values) : 0;
  if (out.low > out.high) out.low = out.high = std::clamp(out.estimate, out.high, out.low);  // crossed: a point
  out.estimate = std::clamp(out.estimate, out.low, out.high);
  out.p_greater = std::min(1.0, std::exp(-best_log_capital(x, b, b.test, 0, +1)));
  out.p_less = std::min(1.0, std::exp(-best_log_capital(x, b, b.test, 0, -1)));
  return out;
}

}  // namespace pairbench::stats
