// The CPU dispatch workload: tiny ops on tiny tensors, as in d2l §13.2 (`y = x + 1` on a
// 1x2 array), so that the engine's own cost dominates. Ops match AsyncEngine's OpFn.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>

namespace pairbench::kernels {

// 16 floats on their own cache line: no false sharing between tensors.
struct alignas(64) TinyTensor {
  static constexpr std::size_t kElements = 16;
  float values[kElements] = {};

  void fill(float v) { std::fill(std::begin(values), std::end(values), v); }
  bool all_equal(float v) const {
    return std::all_of(std::begin(values), std::end(values), [v](float x) { return x == v; });
  }
};

// x += 1 elementwise. ctx: TinyTensor*.
inline void add_one_op(void* ctx) {
  auto* t = static_cast<TinyTensor*>(ctx);
  for (float& v : t->values) v += 1.0f;
}

// Accumulates x[0] into a running fp64 sum on the backend (what `.item()` in a loop avoids).
struct Accumulation {
  const TinyTensor* source = nullptr;
  double sum = 0;
};
inline void accumulate_op(void* ctx) {
  auto* a = static_cast<Accumulation*>(ctx);
  a->sum += static_cast<double>(a->source->values[0]);
}

// Unrelated work: keeps a worker busy for `busy_ns` of wall time and counts how often it ran.
struct BusyWork {
  long long busy_ns = 1000;
  long long runs = 0;
};
inline void busy_op(void* ctx) {
  auto* w = static_cast<BusyWork*>(ctx);
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(w->busy_ns);
  while (std::chrono::steady_clock::now() < until) {
  }
  ++w->runs;
}

// A heavier op: keeps the worker busy for `busy_ns`, then x += 1 (d2l's ops are matrix products
// far heavier than their enqueue; this stands in for them without a BLAS dependency).
struct BusyAddOne {
  TinyTensor* x = nullptr;
  long long busy_ns = 10'000;
};
inline void busy_add_one_op(void* ctx) {
  auto* w = static_cast<BusyAddOne*>(ctx);
  BusyWork spin{.busy_ns = w->busy_ns};
  busy_op(&spin);
  add_one_op(w->x);
}

}  // namespace pairbench::kernels
