// Counter-based random bytes, poison, full and spot comparisons.
#include "kernels/copy/verify.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstring>
#include <random>

namespace pairbench::kernels::copy {
namespace {

// Word i of the stream. Byte k of the stream is byte k % 8 of word k / 8 in little-endian order,
// which is also what the memcpy of whole words below writes (every supported host is little-endian).
std::uint64_t word(std::uint64_t seed, std::uint64_t i) { return splitmix64(seed ^ splitmix64(i)); }

}  // namespace

void fill_random(std::span<std::byte> out, std::uint64_t seed, std::size_t offset) {
  std::size_t pos = 0;
  const std::size_t n = out.size();
  // Unaligned head: byte by byte until the stream offset is a multiple of 8.
  while (pos < n && (offset + pos) % 8 != 0) {
    const std::size_t at = offset + pos;
    out[pos++] = static_cast<std::byte>(word(seed, at / 8) >> (8 * (at % 8)));
  }
  for (; pos + 8 <= n; pos += 8) {
    const std::uint64_t w = word(seed, (offset + pos) / 8);
    std::memcpy(out.data() + pos, &w, 8);
  }
  for (; pos < n; ++pos) {
    const std::size_t at = offset + pos;
    out[pos] = static_cast<std::byte>(word(seed, at / 8) >> (8 * (at % 8)));
  }
}

void poison(std::span<std::byte> out) { std::memset(out.data(), static_cast<int>(kPoison), out.size()); }

std::size_t first_mismatch(const void* a, const void* b, std::size_t n) {
  const auto* pa = static_cast<const unsigned char*>(a);
  const auto* pb = static_cast<const unsigned char*>(b);
  constexpr std::size_t kBlock = 4096;
  for (std::size_t off = 0; off < n; off += kBlock) {
    const std::size_t len = std::min(kBlock, n - off);
    if (std::memcmp(pa + off, pb + off, len) == 0) continue;
    for (std::size_t i = off; i < off + len; ++i) {
      if (pa[i] != pb[i]) return i;
    }
  }
  return n;
}

std::size_t first_mismatch_random(std::span<const std::byte> data, std::uint64_t seed, std::size_t offset) {
  std::array<std::byte, 64 * 1024> ref;  // stays in L2 while it is compared
  for (std::size_t off = 0; off < data.size(); off += ref.size()) {
    const std::size_t len = std::min(ref.size(), data.size() - off);
    fill_random({ref.data(), len}, seed, offset + off);
    const std::size_t at = first_mismatch(data.data() + off, ref.data(), len);
    if (at != len) return off + at;
  }
  return data.size();
}

std::vector<std::pair<std::size_t, std::size_t>> spot_ranges(std::size_t n, std::uint64_t pick_seed, int windows) {
  constexpr std::size_t kEdge = 4096, kWindow = 64;
  std::vector<std::pair<std::size_t, std::size_t>> out;
  if (n == 0) return out;
  out.emplace_back(0, std::min(kEdge, n));
  if (n > kEdge) out.emplace_back(n - kEdge, kEdge);
  std::mt19937_64 rng(pick_seed);
  for (int i = 0; i < windows && n > kWindow; ++i) {
    out.emplace_back(std::uniform_int_distribution<std::size_t>(0, n - kWindow)(rng), kWindow);
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool spot_check_random(std::span<const std::byte> data, std::uint64_t seed, std::uint64_t pick_seed) {
  std::array<std::byte, 4096> ref;
  for (const auto& [off, len] : spot_ranges(data.size(), pick_seed)) {
    fill_random({ref.data(), len}, seed, off);
    if (std::memcmp(data.data() + off, ref.data(), len) != 0) return false;
  }
  return true;
}

}  // namespace pairbench::kernels::copy
