// Host axpb and row-wise layer-norm over fp32 / bf16 / fp16 storage, and their fp64 references.
#include "kernels/elementwise/bandwidth_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <vector>

#include "kernels/common/layout.h"
#include "kernels/common/pages.h"

namespace pairbench::kernels::elementwise {

const char* storage_name(Storage s) {
  switch (s) {
    case Storage::kFp32:
      return "fp32";
    case Storage::kBf16:
      return "bf16";
    case Storage::kFp16:
      return "fp16";
  }
  return "?";
}

std::size_t storage_bytes(Storage s) { return s == Storage::kFp32 ? 4 : 2; }

Precision precision_of(Storage s) {
  switch (s) {
    case Storage::kFp32:
      return Precision::kFp32;
    case Storage::kBf16:
      return Precision::kBf16;
    case Storage::kFp16:
      return Precision::kFp16;
  }
  return Precision::kFp32;
}

constexpr std::size_t kAlign = 64;

void HostArray::Free::operator()(std::byte* p) const { ::operator delete[](p, std::align_val_t(kAlign)); }

HostArray::HostArray(Storage storage, std::size_t n)
    : storage_(storage), n_(n), offset_(next_layout_offset_bytes(kAlign)) {
  const std::size_t allocated = std::max<std::size_t>(n * storage_bytes(storage), 1) + (offset_ ? kLayoutSpanBytes : 0);
  if (allocated >= kMallocAlwaysMapsBytes) {
    // Where the aligned operator new would have mapped it (64 bytes into a fresh mapping), but
    // backed in one call and, in a shared process, reused (kernels/common/pages.h).
    pages_ = PageBuffer(allocated, kAlign);
    base_ = pages_.data();
  } else {
    heap_.reset(static_cast<std::byte*>(::operator new[](allocated, std::align_val_t(kAlign))));
    base_ = heap_.get();
  }
}

namespace {

float* f32(void* p) { return static_cast<float*>(p); }
const float* f32(const void* p) { return static_cast<const float*>(p); }
template <typename H>
H* h16(void* p) {
  return static_cast<H*>(p);
}
template <typename H>
const H* h16(const void* p) {
  return static_cast<const H*>(p);
}

// Widens n elements of x (any storage) to fp32 in `out`.
void widen(Storage s, const void* x, std::size_t n, float* out) {
  switch (s) {
    case Storage::kFp32:
      std::memcpy(out, x, n * sizeof(float));
      return;
    case Storage::kBf16:
      convert(std::span<const Bf16>(h16<Bf16>(x), n), std::span<float>(out, n));
      return;
    case Storage::kFp16:
      convert(std::span<const Fp16>(h16<Fp16>(x), n), std::span<float>(out, n));
      return;
  }
}

// Rounds n fp32 values into y (any storage).
void narrow(Storage s, const float* in, std::size_t n, void* y) {
  switch (s) {
    case Storage::kFp32:
      std::memcpy(y, in, n * sizeof(float));
      return;
    case Storage::kBf16:
      convert(std::span<const float>(in, n), std::span<Bf16>(h16<Bf16>(y), n));
      return;
    case Storage::kFp16:
      convert(std::span<const float>(in, n), std::span<Fp16>(h16<Fp16>(y), n));
      return;
  }
}

void same_shape(const HostArray& x, const HostArray& y) {
  if (x.storage() != y.storage() || x.size() != y.size()) {
    throw std::invalid_argument("x and y must have the same storage and size");
  }
}

// The fp32 arithmetic every storage shares, so only the storage differs between arms. Cloned per
// target (the build has no -march): with SSE2 alone the 16-bit arms' extra passes made them
// compute-bound, which would measure this file rather than the storage type.
#if defined(__x86_64__)
#define PB_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define PB_CLONES
#endif

PB_CLONES void axpb_f32(float a, float b, const float* x, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = a * x[i] + b;
}

// Sum with 64 independent partial sums: vectorisable without -ffast-math (no reassociation needed)
// and four vector add chains deep even at 16 lanes, so not bound by the add latency.
constexpr std::size_t kPartials = 64;

// Folds the partial sums in halves (vector adds), not one by one: a serial 64-add chain cost more
// than the whole pass over a 1024-element row.
inline float fold(float (&partial)[kPartials]) {
  for (std::size_t width = kPartials / 2; width >= 1; width /= 2) {
    for (std::size_t l = 0; l < width; ++l) partial[l] += partial[l + width];
  }
  return partial[0];
}

PB_CLONES float sum_f32(const float* x, std::size_t n) {
  float partial[kPartials] = {};
  std::size_t i = 0;
  for (; i + kPartials <= n; i += kPartials) {
    for (std::size_t l = 0; l < kPartials; ++l) partial[l] += x[i + l];
  }
  float total = 0;
  for (; i < n; ++i) total += x[i];
  return total + fold(partial);
}

PB_CLONES float sum_sq_dev_f32(const float* x, std::size_t n, float mean) {
  float partial[kPartials] = {};
  std::size_t i = 0;
  for (; i + kPartials <= n; i += kPartials) {
    for (std::size_t l = 0; l < kPartials; ++l) {
      const float d = x[i + l] - mean;
      partial[l] += d * d;
    }
  }
  float total = 0;
  for (; i < n; ++i) total += (x[i] - mean) * (x[i] - mean);
  return total + fold(partial);
}

PB_CLONES void normalise_row_f32(const float* x, float* y, std::size_t cols, float eps) {
  const float mean = sum_f32(x, cols) / static_cast<float>(cols);
  const float var = sum_sq_dev_f32(x, cols, mean) / static_cast<float>(cols);
  const float rstd = 1.0f / std::sqrt(var + eps);
  for (std::size_t j = 0; j < cols; ++j) y[j] = (x[j] - mean) * rstd;
}

constexpr std::size_t kChunk = 1024;  // fp32 elements: 4 KiB, stays in L1 between widen and narrow

}  // namespace

void HostArray::store(std::span<const float> values) {
  if (values.size() != n_) throw std::invalid_argument("HostArray::store: size mismatch");
  narrow(storage_, values.data(), n_, data());
}

void HostArray::load(std::span<float> out) const {
  if (out.size() != n_) throw std::invalid_argument("HostArray::load: size mismatch");
  widen(storage_, data(), n_, out.data());
}

void HostArray::load(std::span<float> out, std::size_t first) const {
  if (first > n_ || out.size() > n_ - first) throw std::invalid_argument("HostArray::load: range outside the array");
  widen(storage_, static_cast<const std::byte*>(data()) + first * storage_bytes(storage_), out.size(), out.data());
}

void HostArray::poison() {
  switch (storage_) {
    case Storage::kFp32:
      std::fill_n(f32(data()), n_, std::numeric_limits<float>::quiet_NaN());
      return;
    case Storage::kBf16:
      std::fill_n(h16<Bf16>(data()), n_, Bf16{0x7FC0});
      return;
    case Storage::kFp16:
      std::fill_n(h16<Fp16>(data()), n_, Fp16{0x7E00});
      return;
  }
}

void axpb(float a, float b, const HostArray& x, HostArray& y) {
  same_shape(x, y);
  const Storage s = x.storage();
  const std::size_t n = x.size();
  if (s == Storage::kFp32) return axpb_f32(a, b, f32(x.data()), f32(y.data()), n);
  alignas(kAlign) float tmp[kChunk];
  const std::size_t bytes = storage_bytes(s);
  const auto* xs = static_cast<const std::byte*>(x.data());
  auto* ys = static_cast<std::byte*>(y.data());
  for (std::size_t i = 0; i < n; i += kChunk) {
    const std::size_t len = std::min(kChunk, n - i);
    widen(s, xs + i * bytes, len, tmp);
    axpb_f32(a, b, tmp, tmp, len);
    narrow(s, tmp, len, ys + i * bytes);
  }
}

void layer_norm_rows(const HostArray& x, HostArray& y, std::size_t cols, float eps) {
  same_shape(x, y);
  if (cols == 0 || x.size() % cols != 0) throw std::invalid_argument("layer_norm_rows: size is not a multiple of cols");
  const Storage s = x.storage();
  const std::size_t rows = x.size() / cols;
  if (s == Storage::kFp32) {
    for (std::size_t r = 0; r < rows; ++r)
      normalise_row_f32(f32(x.data()) + r * cols, f32(y.data()) + r * cols, cols, eps);
    return;
  }
  std::vector<float> in(cols), out(cols);
  const std::size_t row_bytes = cols * storage_bytes(s);
  const auto* xs = static_cast<const std::byte*>(x.data());
  auto* ys = static_cast<std::byte*>(y.data());
  for (std::size_t r = 0; r < rows; ++r) {
    widen(s, xs + r * row_bytes, cols, in.data());
    normalise_row_f32(in.data(), out.data(), cols, eps);
    narrow(s, out.data(), cols, ys + r * row_bytes);
  }
}

void axpb_reference(double a, double b, std::span<const float> x, std::span<double> y) {
  if (x.size() != y.size()) throw std::invalid_argument("axpb_reference: size mismatch");
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = a * x[i] + b;
}

void layer_norm_reference(std::span<const float> x, std::size_t cols, double eps, std::span<double> y) {
  if (x.size() != y.size() || cols == 0 || x.size() % cols != 0) {
    throw std::invalid_argument("layer_norm_reference: bad sizes");
  }
  for (std::size_t r = 0; r < x.size() / cols; ++r) {
    const float* row = x.data() + r * cols;
    double mean = 0;
    for (std::size_t j = 0; j < cols; ++j) mean += row[j];
    mean /= static_cast<double>(cols);
    double var = 0;
    for (std::size_t j = 0; j < cols; ++j) var += (row[j] - mean) * (row[j] - mean);
    var /= static_cast<double>(cols);
    const double rstd = 1.0 / std::sqrt(var + eps);
    for (std::size_t j = 0; j < cols; ++j) y[r * cols + j] = (row[j] - mean) * rstd;
  }
}

}  // namespace pairbench::kernels::elementwise
