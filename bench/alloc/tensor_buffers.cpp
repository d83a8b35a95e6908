// alloc.tensor_buffers (C16): one tensor-sized buffer (1-64 MiB) per op: malloc, write one word in
// every page, read them back, free; under glibc, jemalloc, tcmalloc and mimalloc. Also reports
// the page faults and peak RSS that each allocator's keep-or-return policy costs.
#include "bench/alloc/allocator_arms.h"
#include "bench/common/exec.h"
#include "kernels/alloc/host_workloads.h"

namespace pairbench::bench::alloc {
namespace {

constexpr std::uint64_t kTimedSeed = 0x7E45E7;

void tensor_buffers(benchmark::State& state, const Point& p, std::string& label) {
  const auto bytes = static_cast<std::size_t>(p.get_int("bytes"));
  const std::uint64_t seed = fresh_seed();
  if (ka::tensor_buffer_step(bytes, seed) != ka::tensor_buffer_expected(bytes, seed)) {
    return fail_verification(state, "a page did not keep the word written to it");
  }
  mark_verified(state);
  const std::uint64_t expected = ka::tensor_buffer_expected(bytes, kTimedSeed);
  std::int64_t wrong = 0;
  MemoryCounters memory;
  memory.start();
  std::uint64_t sum = 0;
  exec(
      state, Work{.ops = 1}, [] {}, [&] { sum = ka::tensor_buffer_step(bytes, kTimedSeed); },
      [&] { wrong += sum != expected; });
  memory.finish(state, static_cast<double>(state.iterations()), label);
  if (wrong > 0) return fail_verification(state, std::to_string(wrong) + " timed ops read back a wrong word");
}

}  // namespace

// Expect: at 64 MiB glibc pays 16384 page faults per op: the request is above glibc's 32 MiB
// maximum mmap threshold, so malloc maps fresh zeroed pages and free unmaps them. tcmalloc keeps
// freed spans and should be 10x or more faster (the issue saw ~13 ms vs ~0.26 ms). jemalloc 5.3
// serves requests above its 8 MiB oversize_threshold from an arena that purges on free, and
// mimalloc frees huge segments, so both may fault like glibc there. At 1 MiB glibc raises its
// mmap threshold after the first free and reuses heap pages: all four within 2x of each other.
PAIRBENCH_EXPERIMENT(alloc_tensor_buffers) {
  return Experiment{
      .name = "alloc.tensor_buffers",
      .claim = "C16",
      .question =
          "Does another allocator make allocating, touching and freeing a tensor-sized buffer cheaper than glibc?",
      .arms = allocator_arms(tensor_buffers),
      .grid = {{.name = "bytes",
                .quick = {"1048576", "67108864"},
                .nightly = {"1048576", "4194304", "16777216", "33554432", "67108864"}}},
      .timing = Timing::kWallClock,
      .metric = {.name = "ns_per_op", .unit = "ns", .better = Better::kLower},
      .secondary = {{.name = "peak_rss_bytes", .unit = "B", .better = Better::kLower},
                    {.name = "minor_faults_per_op", .unit = "faults", .better = Better::kLower}},
      // Its own process per benchmark: the allocator's heap and the peak RSS are the process's history.
      .own_process = true,
      .verdict = {{.test = VerdictCheck::Test::kBetter,
                   .treatments = {"jemalloc", "tcmalloc"},
                   .threshold = 1.0,
                   .why = "the claim names jemalloc and tcmalloc; mimalloc and the GPU allocators are shown in the "
                          "figures but do not decide it"}},
      .figure = {.kind = FigureKind::kMemory, .counter = "peak_rss_bytes"},
  };
}

}  // namespace pairbench::bench::alloc
