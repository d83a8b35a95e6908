// copy.wrap_vs_copy (C11): making a float32 tensor from an existing host buffer by adopting it
// (torch.as_tensor: no allocation of elements, no copy) vs copying it into new storage
// (torch.tensor), 4 KiB to 1 GiB, in ns per tensor made.
#include <algorithm>
#include <string>
#include <vector>

#include "bench/common/exec.h"
#include "bench/common/experiment.h"
#include "kernels/copy/host_buffer.h"
#include "kernels/copy/host_tensor.h"
#include "kernels/copy/verify.h"

namespace pairbench::bench {
namespace {

namespace kc = kernels::copy;
enum class Make { kCopy, kWrap };

// Tensors per timed region: enough that one region covers >= 8 MiB of copying (or 1024 wraps).
int tensors_per_iteration(std::int64_t bytes) {
  return static_cast<int>(std::clamp<std::int64_t>((std::int64_t{8} << 20) / bytes, 1, 1024));
}

void run(benchmark::State& state, const Point& p, Make make) {
  const auto bytes = static_cast<std::size_t>(p.get_int("bytes"));
  const std::int64_t elements = static_cast<std::int64_t>(bytes / sizeof(float));
  const int per_iteration = tensors_per_iteration(static_cast<std::int64_t>(bytes));
  kc::require_host_memory(bytes * (make == Make::kCopy ? 1 + static_cast<std::size_t>(per_iteration) : 1),
                          "the source and the tensors made per iteration");
  kc::HostBuffer src(bytes, kc::PageState::kPrefaulted);
  const std::uint64_t seed = kc::fresh_seed();
  kc::fill_random(src.span(), seed);
  auto* data = reinterpret_cast<float*>(src.data());
  auto make_one = [&] {
    return make == Make::kWrap ? kc::HostTensor::wrap(data, {elements}) : kc::HostTensor::copy_of(data, {elements});
  };
  // A copy's storage is allocated inside copy_of, so it cannot be poisoned first; every byte is
  // compared instead, and the storage must be new.
  auto check = [&](const kc::HostTensor& t) -> std::string {
    if (t.numel() != static_cast<std::size_t>(elements)) return "wrong element count";
    if (make == Make::kWrap && (t.data() != data || t.owns_storage())) return "wrap did not adopt the buffer";
    if (make == Make::kCopy && (t.data() == data || !t.owns_storage())) return "copy did not make new storage";
    const std::size_t at = kc::first_mismatch(t.data(), data, bytes);
    return at == bytes ? "" : "tensor differs from source at byte " + std::to_string(at);
  };
  if (const std::string why = check(make_one()); !why.empty()) return fail_verification(state, why);
  mark_verified(state);

  std::vector<kc::HostTensor> made;
  made.reserve(static_cast<std::size_t>(per_iteration));
  // Untimed warm-up round: the first round of copies takes fresh pages from the OS, every later
  // one reuses the storage freed before it. Timed: that steady state, whatever the iteration count
  // (without it, the time per copy depended on the iteration count; docs/guide.md).
  for (int i = 0; i < per_iteration; ++i) made.push_back(make_one());
  std::int64_t faults = 0, f0 = 0;
  exec(
      state, Work{.ops = static_cast<double>(per_iteration)},
      [&] {
        made.clear();  // untimed: freeing the last iteration's tensors
        f0 = kc::minor_faults();
      },
      [&] {
        for (int i = 0; i < per_iteration; ++i) made.push_back(make_one());
      },
      [&] { faults += kc::minor_faults() - f0; });
  if (made.empty()) return fail_verification(state, "no tensor made");
  if (const std::string why = check(made.back()); !why.empty()) return fail_verification(state, why + " after timing");
  const double iterations = static_cast<double>(state.iterations());
  state.counters["minor_faults_per_op"] = static_cast<double>(faults) / (iterations * per_iteration);  // op: one tensor
  state.counters["tensors_per_iteration"] = per_iteration;
}

ArmFn arm(Make make) {
  return [make](benchmark::State& s, const Point& p) { run(s, p, make); };
}

}  // namespace

// Expect: wrap costs the same ~50-100 ns (one small allocation for the shape) at every size;
// copy grows with size: ~1 us at 4 KiB, ~10 ms at 64 MiB (allocation, a fault per fresh page,
// memcpy), so the ratio runs from ~10x to ~1e5x. The metric is ns per tensor, not bytes per
// second, because a wrap moves no bytes.
PAIRBENCH_EXPERIMENT(wrap_vs_copy) {
  std::vector<Target> targets;
  for (const char* bytes : {"4096", "1048576", "67108864", "1073741824"}) {
    targets.push_back({.arm = "wrap",
                       .where = {{"bytes", bytes}},
                       .bound = 1000,
                       .text = "wrap <= 1 us per tensor, independent of size"});
  }
  return Experiment{
      .name = "copy.wrap_vs_copy",
      .claim = "C11",
      .question = "How much cheaper is adopting an existing buffer as a tensor than copying it into a new one?",
      .arms = {{.name = "copy", .run = arm(Make::kCopy)}, {.name = "wrap", .run = arm(Make::kWrap)}},
      .grid = {{.name = "bytes",
                .quick = {"4096", "67108864"},
                .nightly = {"4096", "1048576", "67108864", "1073741824"}}},
      .timing = Timing::kWallClock,
      .metric = {.name = "ns_per_op", .unit = "ns", .better = Better::kLower},
      .targets = targets,
      .secondary = {{.name = "minor_faults_per_op", .unit = "faults", .better = Better::kLower}},
      // Instruction counts gate this experiment too: one thread copies or wraps: deterministic user-space work.
      .instructions = cpu_point,
      .verdict = {{.test = VerdictCheck::Test::kBetter, .threshold = 1.0}},
  };
}

}  // namespace pairbench::bench
