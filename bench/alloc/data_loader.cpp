// alloc.data_loader (C16): the data-loader pattern. Worker threads allocate 32 samples, write every
// page, collate them into a freshly allocated batch and free the samples; the main thread checks
// each batch and frees it (a cross-thread free). ns_per_op is per batch.
#include <algorithm>

#include "bench/alloc/allocator_arms.h"
#include "bench/common/exec.h"
#include "kernels/alloc/host_workloads.h"

namespace pairbench::bench::alloc {
namespace {

constexpr std::uint64_t kTimedSeed = 0x10ADE5;
constexpr int kSamplesPerBatch = 32;
constexpr std::int64_t kBatchesPerIteration = 4;
constexpr std::int64_t kWarmupBatches = 32;  // untimed: the allocators reach their steady state

void data_loader(benchmark::State& state, const Point& p, std::string& label) {
  const int workers = static_cast<int>(p.get_int("workers"));
  const ka::LoaderOptions options{.workers = workers,
                                  .samples_per_batch = kSamplesPerBatch,
                                  .sample_bytes = static_cast<std::size_t>(p.get_int("sample_bytes")),
                                  .queue_batches = 2 * workers};
  const std::int64_t allocations_per_batch = kSamplesPerBatch + 1;
  ka::DataLoader loader(options);
  const std::int64_t check_batches = std::max<std::int64_t>(4, 2 * workers);
  const ka::LoaderStats check = loader.run(check_batches, fresh_seed());
  if (check.batches != check_batches || check.bad_batches != 0) {
    return fail_verification(state, std::to_string(check.bad_batches) + " of " + std::to_string(check.batches) +
                                        " batches arrived with wrong contents");
  }
  if (check.allocations != check_batches * allocations_per_batch || check.frees != check.allocations) {
    return fail_verification(
        state, std::to_string(check.allocations) + " allocations but " + std::to_string(check.frees) + " frees");
  }
  mark_verified(state);
  loader.run(kWarmupBatches, kTimedSeed);
  ka::LoaderStats total;
  MemoryCounters memory;
  memory.start();
  ka::LoaderStats s;
  exec(
      state, Work{.ops = static_cast<double>(kBatchesPerIteration)}, [] {},
      [&] { s = loader.run(kBatchesPerIteration, kTimedSeed); },
      [&] {
        total.batches += s.batches;
        total.bad_batches += s.bad_batches;
        total.allocations += s.allocations;
        total.frees += s.frees;
      });
  const double batches = static_cast<double>(kBatchesPerIteration) * static_cast<double>(state.iterations());
  memory.finish(state, batches, label);
  if (total.bad_batches != 0 || total.allocations != total.frees ||
      total.allocations != total.batches * allocations_per_batch) {
    return fail_verification(state, "timed batches: " + std::to_string(total.bad_batches) + " wrong, " +
                                        std::to_string(total.allocations) + " allocations, " +
                                        std::to_string(total.frees) + " frees");
  }
}

}  // namespace

// Expect: the preloaded allocators beat glibc by 1.2x or more. A 4.8 MB batch is above glibc's
// initial mmap threshold and every batch is freed by a thread other than the one whose arena it
// came from, so glibc takes the owner arena's lock and tends to trim and re-fault heap pages;
// jemalloc, tcmalloc and mimalloc hand remote frees back through per-thread caches and keep the
// pages. Fewer minor faults per batch should come with the speed-up.
PAIRBENCH_EXPERIMENT(alloc_data_loader) {
  return Experiment{
      .name = "alloc.data_loader",
      .claim = "C16",
      .question =
          "When worker threads allocate batches and the main thread frees them, does another allocator beat glibc?",
      .arms = allocator_arms(data_loader),
      .grid = {{.name = "workers", .quick = {"2"}, .nightly = {"1", "2", "4"}},
               {.name = "sample_bytes", .quick = {"150528"}, .nightly = {"4096", "150528"}}},
      .timing = Timing::kWallClock,
      .metric = {.name = "ns_per_op", .unit = "ns", .better = Better::kLower},
      .secondary = {{.name = "peak_rss_bytes", .unit = "B", .better = Better::kLower},
                    {.name = "minor_faults_per_op", .unit = "faults", .better = Better::kLower}},
      // The workers, and the main thread checking and freeing every batch meanwhile.
      // Its own process per benchmark: the allocator's heap and the peak RSS are the process's history.
      .own_process = true,
      .threads = [](const Arm&, const Point& p) { return 1 + static_cast<int>(p.get_int("workers")); },
      .verdict = {{.test = VerdictCheck::Test::kBetter,
                   .treatments = {"jemalloc", "tcmalloc"},
                   .threshold = 1.0,
                   .why = "the claim names jemalloc and tcmalloc; mimalloc and the GPU allocators are shown in the "
                          "figures but do not decide it"}},
      .figure = {.kind = FigureKind::kMemory, .counter = "peak_rss_bytes"},
  };
}

}  // namespace pairbench::bench::alloc
