// Per-process layout draws (harness/exec/layout.h).
#include "harness/exec/layout.h"

#include <stdexcept>

#include "kernels/common/layout.h"
#include "kernels/common/rng.h"

namespace pairbench::harness {

ProcessLayout draw_layout(std::uint64_t run_seed, std::uint64_t process_index, int variants) {
  // One stream per process: independent of the order in which processes are launched.
  std::uint64_t state = kernels::splitmix64(run_seed ^ kernels::splitmix64(process_index ^ 0x6c61796f7574ull));
  ProcessLayout l;
  l.drawn = true;
  l.variants = variants < 1 ? 1 : variants;
  l.variant = static_cast<int>(kernels::splitmix64_next(state) % static_cast<std::uint64_t>(l.variants));
  l.env_pad_bytes = static_cast<int>(kernels::splitmix64_next(state) % (kMaxLayoutPadBytes + 1));
  l.seed = kernels::splitmix64_next(state) >> 11;  // 53 bits: exact in every JSON reader
  return l;
}

std::map<std::string, std::string> layout_env(const ProcessLayout& layout) {
  if (!layout.drawn) return {};
  return {{kLayoutPadEnv, std::string(static_cast<std::size_t>(layout.env_pad_bytes), 'x')},
          {kernels::kLayoutSeedEnv, std::to_string(layout.seed)}};
}

const std::string& layout_binary(const std::vector<std::string>& binaries, const ProcessLayout& layout) {
  if (binaries.empty()) throw std::invalid_argument("layout_binary: no binaries");
  const auto k = static_cast<std::size_t>(layout.drawn ? layout.variant : 0);
  return binaries[k < binaries.size() ? k : 0];
}

}  // namespace pairbench::harness
