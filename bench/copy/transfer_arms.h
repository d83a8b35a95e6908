// Shared by copy.h2d and copy.d2h: the host<->device transfer arm (pageable, pinned or
// registered host memory) and the size grid, so the two directions cannot drift apart.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "bench/common/devices.h"
#include "bench/common/exec.h"
#include "bench/common/experiment.h"
#include "kernels/copy/cuda_copy.h"
#include "kernels/copy/host_buffer.h"
#include "kernels/copy/verify.h"

namespace pairbench::bench::copy_transfer {

namespace kc = kernels::copy;
using kc::cuda::HostKind;

// Small copies are queued back to back, >= 8 MiB per timed region, so the event pair's own
// resolution (~0.5 us) stays small against the region.
inline int copies_per_iteration(std::int64_t bytes) {
  return static_cast<int>(std::clamp<std::int64_t>((std::int64_t{8} << 20) / bytes, 1, 1024));
}

// One host<->device transfer arm: poisoned destination, every byte compared before timing, a
// spot check after; CUDA-event timing; bytes/s and page faults per copy.
inline void run_transfer(benchmark::State& state, const Point& p, kc::cuda::Direction direction, HostKind host) {
  const char* copy_name = direction == kc::cuda::Direction::kHostToDevice ? "device copy" : "host copy";
  const auto bytes = static_cast<std::size_t>(p.get_int("bytes"));
  const int copies = copies_per_iteration(static_cast<std::int64_t>(bytes));
  kc::cuda::Transfer t(bytes, direction, host);
  const std::uint64_t seed = kc::fresh_seed();
  t.fill_source(seed);
  t.poison_destination();
  t.enqueue(1);  // also the warm-up: first-use costs stay out of the timing
  if (const std::size_t at = t.first_mismatch(seed); at != bytes) {
    return fail_verification(state, std::string(copy_name) + " differs from its source at byte " + std::to_string(at));
  }
  mark_verified(state);
  t.poison_destination();

  std::int64_t faults = 0, f0 = 0;
  exec_cuda(
      state, Work{.bytes = static_cast<double>(bytes) * copies}, t.stream(), [&] { f0 = kc::minor_faults(); },
      [&] { t.enqueue(copies); }, [&] { faults += kc::minor_faults() - f0; });
  if (!t.spot_check(seed, kc::fresh_seed()))
    return fail_verification(state, std::string(copy_name) + " differs after timing");
  const double iterations = static_cast<double>(state.iterations());
  state.counters["minor_faults_per_op"] = static_cast<double>(faults) / (iterations * copies);  // op: one copy
  state.counters["copies_per_iteration"] = copies;
}

inline ArmFn transfer_arm(kc::cuda::Direction direction, HostKind host) {
  return [direction, host](benchmark::State& s, const Point& p) { run_transfer(s, p, direction, host); };
}

// The arms and grid copy.h2d and copy.d2h share: pageable (baseline), pinned, registered.
inline std::vector<Arm> transfer_arms(kc::cuda::Direction direction) {
  return {{.name = "pageable", .run = transfer_arm(direction, HostKind::kPageable), .unavailable = needs_cuda},
          {.name = "pinned", .run = transfer_arm(direction, HostKind::kPinned), .unavailable = needs_cuda},
          {.name = "registered", .run = transfer_arm(direction, HostKind::kRegistered), .unavailable = needs_cuda}};
}

inline Axis transfer_bytes_axis() {
  return {.name = "bytes",
          .quick = {"4096", "1048576", "67108864"},
          .nightly = {"4096", "16384", "65536", "262144", "1048576", "4194304", "16777216", "67108864", "268435456",
                      "1073741824"}};
}

}  // namespace pairbench::bench::copy_transfer
