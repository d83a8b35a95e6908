// Inputs and checks shared by every copy workload: counter-based random bytes (any range can be
// regenerated from the seed, so a reference never needs a second full-size buffer), the poison
// pattern written to destinations before a copy, and full and spot comparisons.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "kernels/common/rng.h"

namespace pairbench::kernels::copy {

inline constexpr std::byte kPoison{0xA5};

// Fills `out` with the bytes at [offset, offset + out.size()) of the random stream named by
// `seed` (splitmix64 of the 8-byte word index): the same seed and offset give the same bytes.
void fill_random(std::span<std::byte> out, std::uint64_t seed, std::size_t offset = 0);
using ::pairbench::kernels::fresh_seed;  // kernels/common/rng.h
void poison(std::span<std::byte> out);

// Offset of the first byte where a and b differ, or n when they are equal.
std::size_t first_mismatch(const void* a, const void* b, std::size_t n);
// Index of the first byte of `data` that differs from bytes [offset, offset + data.size()) of the
// random stream `seed`, or data.size(). Regenerates the reference in cache-sized pieces.
std::size_t first_mismatch_random(std::span<const std::byte> data, std::uint64_t seed, std::size_t offset = 0);

// The ranges a spot check compares: the first and last 4 KiB and `windows` 64-byte windows at
// offsets drawn from `pick_seed`. Sorted, within [0, n).
std::vector<std::pair<std::size_t, std::size_t>> spot_ranges(std::size_t n, std::uint64_t pick_seed, int windows = 64);
// True when `data` equals the random stream (seed, from offset 0) on every spot range.
bool spot_check_random(std::span<const std::byte> data, std::uint64_t seed, std::uint64_t pick_seed);

}  // namespace pairbench::kernels::copy
