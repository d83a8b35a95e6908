// GEMM shapes, random inputs, fp64 references (full and sampled) and verification.
#include "kernels/gemm/gemm_reference.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <numeric>
#include <random>
#include <stdexcept>

namespace pairbench::kernels::gemm {
namespace {

std::vector<std::int64_t> pick(std::int64_t total, std::int64_t count, std::uint64_t& state) {
  std::vector<std::int64_t> out;
  if (total <= count) {
    out.resize(static_cast<std::size_t>(total));
    std::iota(out.begin(), out.end(), 0);
    return out;
  }
  while (static_cast<std::int64_t>(out.size()) < count) {
    const auto v = static_cast<std::int64_t>(splitmix64_next(state) % static_cast<std::uint64_t>(total));
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void check_sizes(std::span<const float> a, std::span<const float> b, const GemmShape& s) {
  if (static_cast<std::int64_t>(a.size()) != s.m * s.k || static_cast<std::int64_t>(b.size()) != s.k * s.n) {
    throw std::invalid_argument("gemm: A or B size does not match " + s.text());
  }
}

}  // namespace

std::string GemmShape::text() const { return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k); }

GemmShape parse_shape(const std::string& text) {
  std::vector<std::int64_t> dims;
  const char* p = text.data();
  const char* end = text.data() + text.size();
  while (p < end) {
    std::int64_t v = 0;
    const auto [next, ec] = std::from_chars(p, end, v);
    if (ec != std::errc() || v <= 0) break;
    dims.push_back(v);
    p = next;
    if (p < end && *p == 'x')
      ++p;
    else
      break;
  }
  if (p != end || (dims.size() != 1 && dims.size() != 3)) {
    throw std::invalid_argument("shape '" + text + "' is not MxNxK or N");
  }
  if (dims.size() == 1) return {dims[0], dims[0], dims[0]};
  return {dims[0], dims[1], dims[2]};
}

void fill_random(std::span<float> out, std::uint64_t seed) {
  fill_uniform(out, seed, /*lo=*/-1.0f, /*width=*/2.0f);  // 24 random bits each: exact in fp32
  if (!out.empty() && std::all_of(out.begin(), out.end(), [](float v) { return v == 0; })) out[0] = 0.5f;
}

void gemm_reference(std::span<const float> a, std::span<const float> b, const GemmShape& s, std::span<double> c) {
  check_sizes(a, b, s);
  if (static_cast<std::int64_t>(c.size()) != s.m * s.n) throw std::invalid_argument("gemm_reference: C size");
  std::fill(c.begin(), c.end(), 0.0);
  for (std::int64_t i = 0; i < s.m; ++i) {
    double* crow = c.data() + i * s.n;
    for (std::int64_t p = 0; p < s.k; ++p) {
      const double aip = a[static_cast<std::size_t>(i * s.k + p)];
      const float* brow = b.data() + p * s.n;
      for (std::int64_t j = 0; j < s.n; ++j) crow[j] += aip * brow[j];
    }
  }
}

std::string GemmSample::describe() const {
  if (all) return "all " + std::to_string(rows.size() * cols.size()) + " entries";
  return std::to_string(rows.size()) + "x" + std::to_string(cols.size()) + " sampled entries (fp64)";
}

GemmSample choose_sample(const GemmShape& s, std::uint64_t seed) {
  GemmSample out;
  std::uint64_t state = seed;
  out.all = s.flops() <= kFullCheckFlops;
  const std::int64_t per_dim = out.all ? std::max(s.m, s.n) : 64;
  out.rows = pick(s.m, per_dim, state);
  out.cols = pick(s.n, per_dim, state);
  return out;
}

std::vector<double> reference_at(const GemmSample& sample, std::span<const float> a, std::span<const float> b,
                                 const GemmShape& s) {
  check_sizes(a, b, s);
  const std::size_t nc = sample.cols.size();
  // The sampled columns of B, gathered contiguous per column: the dot products then stream.
  std::vector<double> bcols(nc * static_cast<std::size_t>(s.k));
  for (std::size_t c = 0; c < nc; ++c) {
    for (std::int64_t p = 0; p < s.k; ++p) bcols[c * s.k + p] = b[static_cast<std::size_t>(p * s.n + sample.cols[c])];
  }
  std::vector<double> out(sample.rows.size() * nc);
  for (std::size_t r = 0; r < sample.rows.size(); ++r) {
    const float* arow = a.data() + sample.rows[r] * s.k;
    for (std::size_t c = 0; c < nc; ++c) {
      const double* bc = bcols.data() + c * s.k;
      double acc = 0;
      for (std::int64_t p = 0; p < s.k; ++p) acc += static_cast<double>(arow[p]) * bc[p];
      out[r * nc + c] = acc;
    }
  }
  return out;
}

std::vector<float> values_at(const GemmSample& sample, std::span<const float> c, const GemmShape& s) {
  if (static_cast<std::int64_t>(c.size()) != s.m * s.n) throw std::invalid_argument("values_at: C size");
  std::vector<float> out;
  out.reserve(sample.rows.size() * sample.cols.size());
  for (std::int64_t r : sample.rows) {
    for (std::int64_t col : sample.cols) out.push_back(c[static_cast<std::size_t>(r * s.n + col)]);
  }
  return out;
}

std::string GemmVerification::text() const { return check.text() + " over " + how; }

GemmVerification verify_gemm(std::span<const float> a, std::span<const float> b, std::span<const float> c,
                             const GemmShape& s, elementwise::Precision p, std::uint64_t seed) {
  const GemmSample sample = choose_sample(s, seed);
  std::vector<double> ref;
  if (sample.all) {
    ref.resize(static_cast<std::size_t>(s.m * s.n));
    gemm_reference(a, b, s, ref);
  } else {
    ref = reference_at(sample, a, b, s);
  }
  const std::vector<float> got = values_at(sample, c, s);
  const double err = elementwise::rel_error(ref, got);
  return {elementwise::check_error(err, elementwise::gemm_error_bound(p, s.k)), sample.describe()};
}

}  // namespace pairbench::kernels::gemm
