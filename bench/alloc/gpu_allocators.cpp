// alloc.gpu_allocators (C16, GPU side): one training step's tensors (tensor_trace.h: activations
// and gradients of 256 KiB-64 MiB, workspaces, small side-stream buffers) allocated and freed
// through cudaMalloc/cudaFree, a stream-ordered pool (release threshold 0, CUDA's default, and
// UINT64_MAX) and our caching allocator; each tensor's first 4 KiB written on its stream.
// ns_per_op is per allocation (its free included), host wall clock over a synchronised step.
#include "bench/common/devices.h"
#include "bench/common/exec.h"
#include "bench/common/experiment.h"
#include "kernels/alloc/gpu_allocators.h"
#include "kernels/alloc/tensor_trace.h"

#include <random>

namespace pairbench::bench::alloc {
namespace {

using kernels::cuda::GpuAllocatorKind;
constexpr std::uint64_t kTimedSeed = 0x6B0;

void gpu_step(benchmark::State& state, const Point& p, GpuAllocatorKind kind) {
  const int layers = static_cast<int>(p.get_int("layers"));
  kernels::cuda::GpuTraceReplay replay(kind);
  const kernels::alloc::TensorTrace check = kernels::alloc::make_training_step_trace(layers, std::random_device{}());
  for (int step = 0; step < 2; ++step) {  // the second step exercises reuse of cached blocks
    if (const std::string why = replay.verify_step(check); !why.empty()) return fail_verification(state, why);
  }
  mark_verified(state);
  const kernels::alloc::TensorTrace trace = kernels::alloc::make_training_step_trace(layers, kTimedSeed);
  replay.run_step(trace);  // untimed warm-up: pools and caches reach their steady state
  exec(state, Work{.ops = static_cast<double>(trace.allocations())}, [&] { replay.run_step(trace); });
  if (const std::string why = replay.verify_step(trace); !why.empty())
    return fail_verification(state, "after timing: " + why);
  state.counters["peak_live_bytes"] = static_cast<double>(trace.peak_live_bytes);
  state.counters["release_threshold_bytes"] = static_cast<double>(replay.release_threshold_bytes());
  state.SetLabel(replay.describe());
}

ArmFn arm(GpuAllocatorKind kind) {
  return [kind](benchmark::State& s, const Point& p) { gpu_step(s, p, kind); };
}

}  // namespace

// Expect: cuda_malloc is slowest by 10x or more: cudaMalloc maps physical memory on every call
// (tens of microseconds for MiB-sized tensors) and cudaFree synchronises the device. The caching
// allocator and the retaining pool (threshold UINT64_MAX) serve every steady-state request from
// memory they already hold, within 2x of each other. With threshold 0 (CUDA's default) the pool
// gives its memory back at each step's synchronisation and maps it again in the next step, so it
// lands between the two.
PAIRBENCH_EXPERIMENT(alloc_gpu_allocators) {
  return Experiment{
      .name = "alloc.gpu_allocators",
      .claim = "C16",
      .question =
          "Is a stream-ordered pool or a caching allocator faster than cudaMalloc/cudaFree every step for a training "
          "step's tensors?",
      .arms =
          {{.name = "cuda_malloc", .run = arm(GpuAllocatorKind::kCudaMalloc), .unavailable = needs_cuda, .cuda = true},
           {.name = "async_pool", .run = arm(GpuAllocatorKind::kAsyncPool), .unavailable = needs_cuda, .cuda = true},
           {.name = "async_pool_retain",
            .run = arm(GpuAllocatorKind::kAsyncPoolRetain),
            .unavailable = needs_cuda,
            .cuda = true},
           {.name = "caching", .run = arm(GpuAllocatorKind::kCaching), .unavailable = needs_cuda, .cuda = true}},
      .grid = {{.name = "layers", .quick = {"16"}, .nightly = {"16", "64"}}},
      .timing = Timing::kWallClock,
      .metric = {.name = "ns_per_op", .unit = "ns", .better = Better::kLower},
      // Its own process per benchmark: the allocator's heap and the peak RSS are the process's history.
      .own_process = true,
      .verdict = {{.test = VerdictCheck::Test::kBetter,
                   .treatments = {"jemalloc", "tcmalloc"},
                   .threshold = 1.0,
                   .why = "the claim names jemalloc and tcmalloc, host allocators this GPU experiment does not have: "
                          "its arms are shown in the figures and never decide it"}},
  };
}

}  // namespace pairbench::bench::alloc
