// splitmix64 (Steele, Lea, Flood 2014) and the seeds and fills built on it: the one generator of
// every kernel family's inputs and checks. Host and device (nvcc) code get the same bits.
#pragma once

#include <chrono>
#include <cstdint>
#include <random>
#include <span>

#if defined(__CUDACC__)
#define PAIRBENCH_HOST_DEVICE __host__ __device__
#else
#define PAIRBENCH_HOST_DEVICE
#endif

namespace pairbench::kernels {

inline constexpr std::uint64_t kSplitMix64Gamma = 0x9E3779B97F4A7C15ull;  // 2^64 / golden ratio

// Counter-based: a bijective mix of `x` (adds the gamma, then splitmix64's finaliser), so
// splitmix64(seed ^ i) is the i-th value of a stream without state.
PAIRBENCH_HOST_DEVICE constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += kSplitMix64Gamma;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Sequential: the next value of the stream whose state is `state` (advanced by the gamma).
PAIRBENCH_HOST_DEVICE constexpr std::uint64_t splitmix64_next(std::uint64_t& state) {
  const std::uint64_t x = splitmix64(state);
  state += kSplitMix64Gamma;
  return x;
}

// The top 53 bits as a double in [0, 1), every value exactly representable.
PAIRBENCH_HOST_DEVICE constexpr double unit_double(std::uint64_t bits) {
  return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

// The top 24 bits as a float in [lo, lo + width): exact in fp32 when width is a power of two.
PAIRBENCH_HOST_DEVICE constexpr float float24(std::uint64_t bits, float lo, float width) {
  return static_cast<float>(bits >> 40) * (width * 0x1p-24f) + lo;
}

// Fills `out` with the sequential stream from `seed`, as floats uniform in [lo, lo + width).
inline void fill_uniform(std::span<float> out, std::uint64_t seed, float lo, float width) {
  std::uint64_t state = seed;
  for (float& v : out) v = float24(splitmix64_next(state), lo, width);
}

// std::random_device mixed with the clock: a seed nobody chose, different on every call and in
// every process, so checks see fresh inputs.
inline std::uint64_t fresh_seed() {
  std::random_device rd;
  return (static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^
         static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
}

}  // namespace pairbench::kernels
