// Layout randomisation (docs/gate.md, "Layout"; Mytkowicz et al., ASPLOS 2009; Curtsinger & Berger,
// Stabilizer, ASPLOS 2013): where a build's code and data land in memory changes its speed by more
// than many real changes, and is fixed per build. So every time process draws its own placement
// from the run's seed and its index in the run: a relinked variant of its bench binary (code and
// static data moved by a different offset mod 4 KiB), environment padding (stack), and a seed for
// its buffers' page offsets and its heap (kernels/common/layout.h). Both sides of `ab` alike; the
// draw is recorded in the process's row, and the same seed gives the same draws.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "harness/store/sample.h"

namespace pairbench::harness {

inline constexpr const char* kLayoutPadEnv = "PAIRBENCH_LAYOUT_PAD";
inline constexpr int kMaxLayoutPadBytes = 4095;

// The placement of the process with index `process_index` in the run seeded `run_seed`, for a bench
// binary with `variants` layout variants (1: the plain binary only). Pure: same inputs, same draw.
ProcessLayout draw_layout(std::uint64_t run_seed, std::uint64_t process_index, int variants);

// What the process's environment gets: PAIRBENCH_LAYOUT_PAD (env_pad_bytes bytes) and
// PAIRBENCH_LAYOUT_SEED.
std::map<std::string, std::string> layout_env(const ProcessLayout& layout);

// The binary a layout runs: variant k of `binaries` (the plain binary first, then bench_X.layout<k>).
const std::string& layout_binary(const std::vector<std::string>& binaries, const ProcessLayout& layout);

}  // namespace pairbench::harness
