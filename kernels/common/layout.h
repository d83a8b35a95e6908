// Where a process puts its buffers within their pages: the bench side of pairbench's layout
// randomisation (docs/gate.md, "Layout"). The harness sets PAIRBENCH_LAYOUT_SEED per process; where
// it is set, each buffer that asks starts at a random multiple of its alignment within 4 KiB, so a
// build's placement (4K aliasing, cache-set and page-offset effects) is noise across processes, not
// a constant of one side. Unset (a bench run by hand, an instruction-counting process): offset 0.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>

#include "kernels/common/rng.h"

namespace pairbench::kernels {

inline constexpr const char* kLayoutSeedEnv = "PAIRBENCH_LAYOUT_SEED";
// Offsets stay below one page: what a page offset can change (4K aliasing between two streams,
// which cache sets a buffer's lines map to) repeats every 4 KiB.
inline constexpr std::size_t kLayoutSpanBytes = 4096;

// The `draw`-th offset of the stream `seed`: a multiple of `alignment` (a power of two, at most the
// span) in [0, kLayoutSpanBytes). Pure, so that tests can check every draw keeps the alignment.
constexpr std::size_t layout_offset_bytes(std::uint64_t seed, std::uint64_t draw, std::size_t alignment) {
  if (alignment == 0 || alignment >= kLayoutSpanBytes) return 0;
  const std::uint64_t slots = kLayoutSpanBytes / alignment;
  return static_cast<std::size_t>(splitmix64(seed ^ splitmix64(draw)) % slots) * alignment;
}

// The process's layout seed from PAIRBENCH_LAYOUT_SEED (decimal), read once; nothing where unset or
// not a number.
inline std::optional<std::uint64_t> process_layout_seed() {
  static const std::optional<std::uint64_t> seed = []() -> std::optional<std::uint64_t> {
    const char* v = std::getenv(kLayoutSeedEnv);
    if (!v || !*v) return std::nullopt;
    char* end = nullptr;
    const unsigned long long s = std::strtoull(v, &end, 10);
    if (end == v || *end) return std::nullopt;
    return static_cast<std::uint64_t>(s);
  }();
  return seed;
}

// The next buffer's offset in this process: 0 without a layout seed. Callers allocate
// kLayoutSpanBytes more than they need and start their data this far in.
inline std::size_t next_layout_offset_bytes(std::size_t alignment) {
  static std::atomic<std::uint64_t> draws{0};
  const std::optional<std::uint64_t> seed = process_layout_seed();
  return seed ? layout_offset_bytes(*seed, draws++, alignment) : 0;
}

}  // namespace pairbench::kernels
