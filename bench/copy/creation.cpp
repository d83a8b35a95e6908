// copy.creation (C8): a tensor of standard-normal float32 values made on the host and copied to
// the GPU (torch.randn(n).cuda()) vs made on the GPU by cuRAND (torch.randn(n, device="cuda")),
// same generator (Philox4x32-10), size and distribution. Tensor bytes per second, CUDA events.
#include <cmath>
#include <string>
#include <vector>

#include "bench/common/devices.h"
#include "bench/common/exec.h"
#include "bench/common/experiment.h"
#include "kernels/copy/cuda_copy.h"
#include "kernels/copy/host_buffer.h"
#include "kernels/copy/verify.h"

namespace pairbench::bench {
namespace {

namespace kc = kernels::copy;
enum class Where { kHostThenCopy, kOnDevice };

// "" when `v` looks like n draws of N(0, 1): finite, |x| < 10, mean and variance within
// 6 standard errors (a generator bug or a missed write fails this; a fair sample almost never).
std::string looks_standard_normal(const std::vector<float>& v) {
  double sum = 0, sum_sq = 0;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!std::isfinite(v[i]) || std::fabs(v[i]) >= 10) return "value " + std::to_string(i) + " is not a normal draw";
    sum += v[i];
    sum_sq += static_cast<double>(v[i]) * v[i];
  }
  const double n = static_cast<double>(v.size());
  const double mean = sum / n, var = sum_sq / n - mean * mean;
  if (std::fabs(mean) > 6 / std::sqrt(n) || std::fabs(var - 1) > 6 * std::sqrt(2 / n)) {
    return "mean " + std::to_string(mean) + ", variance " + std::to_string(var) + " are not N(0, 1)";
  }
  return "";
}

// The same Philox sequence on host and device; the device's Box-Muller may differ in the last
// bits (device math functions), so values are compared to 1e-4, far below any sequence error.
std::string same_values(const std::vector<float>& got, std::span<const float> want, bool exact) {
  for (std::size_t i = 0; i < got.size(); ++i) {
    const bool ok = exact ? got[i] == want[i] : std::fabs(got[i] - want[i]) <= 1e-4f * (1 + std::fabs(want[i]));
    if (!ok)
      return "value " + std::to_string(i) + ": " + std::to_string(got[i]) + " vs host " + std::to_string(want[i]);
  }
  return "";
}

void run(benchmark::State& state, const Point& p, Where where) {
  const auto bytes = static_cast<std::size_t>(p.get_int("bytes"));
  const std::size_t count = bytes / sizeof(float);
  kc::cuda::RandomTensor t(count);
  auto make = [&] { where == Where::kOnDevice ? t.make_on_device() : t.make_on_host_and_copy(); };
  std::vector<float> got(count);

  const std::uint64_t seed = kc::fresh_seed();
  t.reseed(seed);
  t.poison_device();
  make();  // also the warm-up
  t.download(got);
  if (where == Where::kOnDevice) {
    t.reseed(seed);
    t.generate_on_host();  // the reference: cuRAND's host implementation of the same sequence
  }
  if (std::string why = same_values(got, t.host_values(), where == Where::kHostThenCopy); !why.empty()) {
    return fail_verification(state, why);
  }
  if (std::string why = looks_standard_normal(got); !why.empty()) return fail_verification(state, why);
  mark_verified(state);
  t.poison_device();

  std::int64_t faults = 0, f0 = 0;
  exec_cuda(
      state, Work{.bytes = static_cast<double>(bytes)}, t.stream(), [&] { f0 = kc::minor_faults(); }, make,
      [&] { faults += kc::minor_faults() - f0; });
  // The timed draws continue the sequence, so only the copy arm has an exact reference left.
  t.download(got);
  std::string why = looks_standard_normal(got);
  if (why.empty() && where == Where::kHostThenCopy) why = same_values(got, t.host_values(), true);
  if (!why.empty()) return fail_verification(state, why + " after timing");
  state.counters["minor_faults_per_op"] =
      static_cast<double>(faults) / static_cast<double>(state.iterations());  // op: one tensor
}

ArmFn arm(Where where) {
  return [where](benchmark::State& s, const Point& p) { run(s, p, where); };
}

}  // namespace

// Expect: on_device wins by 50-500x: one host thread makes ~0.5-1 GB/s of normal floats and the
// pageable copy adds its own ~10 GB/s, while cuRAND on an H100 writes normals at a good fraction
// of HBM bandwidth (~1 TB/s or more). At 1 MiB the device arm is launch-bound (~10 us), so the
// gap is smallest there.
PAIRBENCH_EXPERIMENT(creation) {
  return Experiment{
      .name = "copy.creation",
      .claim = "C8",
      .question = "Is a random tensor faster to make on the GPU than to make on the host and copy?",
      .arms = {{.name = "host_then_copy", .run = arm(Where::kHostThenCopy), .unavailable = needs_cuda},
               {.name = "on_device", .run = arm(Where::kOnDevice), .unavailable = needs_cuda}},
      .grid = {{.name = "bytes", .quick = {"1048576", "67108864"}, .nightly = {"1048576", "16777216", "268435456"}}},
      .timing = Timing::kCudaEvents,
      .metric = {.name = "bytes_per_second", .unit = "B/s", .better = Better::kHigher},
      // The copy arm cannot beat the pinned H2D link; the device arm writes each byte once, so
      // against device-to-device copy traffic (read + write) it shows its share of HBM bandwidth.
      .limits = {{.experiment = "limits.gpu_copy", .arm = "h2d_pinned", .arms = {"host_then_copy"}},
                 {.experiment = "limits.gpu_copy", .arm = "d2d", .arms = {"on_device"}}},
      .secondary = {{.name = "minor_faults_per_op", .unit = "faults", .better = Better::kLower}},
      // Its own process per benchmark: where a new tensor's memory comes from (fresh pages or the
      // allocator's reuse) is the process's history.
      .own_process = true,
      .verdict = {{.test = VerdictCheck::Test::kBetter, .threshold = 1.0}},
  };
}

}  // namespace pairbench::bench
