// Thread all-reduce: one std::barrier shared by the team marks every phase (start, each ring
// step, done); the barrier's completion orders each phase's writes before the next phase's reads.
#include "kernels/collective/thread_allreduce.h"

#include "kernels/common/pages.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <cstring>
#include <stdexcept>

namespace pairbench::kernels::collective {
namespace {

constexpr std::size_t kLine = 64 / sizeof(float);  // chunks start on a cache line where n allows
constexpr std::size_t kBlock = 4096;               // gather: 16 KiB of the sum stays in L1 across sources

// dst[i] += src[i]; vectorised at -O3. Out of line so both algorithms run the same loop.
[[gnu::noinline]] void add_into(float* __restrict__ dst, const float* __restrict__ src, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] += src[i];
}

int mod(int a, int p) { return ((a % p) + p) % p; }

float gradient(std::uint64_t seed, int participant, std::size_t i) {
  const std::uint64_t key = seed ^ (0xD1B54A32D192ED03ull * (static_cast<std::uint64_t>(participant) + 1));
  return static_cast<float>(static_cast<int>(splitmix64(key + kSplitMix64Gamma * i) % 2001) - 1000);
}

}  // namespace

Algorithm algorithm_from_name(const std::string& name) {
  if (name == "gather_broadcast") return Algorithm::kGatherBroadcast;
  if (name == "ring") return Algorithm::kRing;
  throw std::invalid_argument("allreduce: unknown algorithm '" + name + "' (gather_broadcast | ring)");
}

const char* algorithm_name(Algorithm a) { return a == Algorithm::kRing ? "ring" : "gather_broadcast"; }

void fill_gradients(std::span<float> out, std::uint64_t seed, int participant) {
  for (std::size_t i = 0; i < out.size(); ++i) out[i] = gradient(seed, participant, i);
}

void reference_sum(std::span<float> out, std::uint64_t seed, int participants) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    long sum = 0;  // integers: exact whatever the order
    for (int q = 0; q < participants; ++q) sum += static_cast<long>(gradient(seed, q, i));
    out[i] = static_cast<float>(sum);
  }
}

std::size_t first_difference(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size()) throw std::invalid_argument("first_difference: sizes differ");
  if (a.empty() || std::memcmp(a.data(), b.data(), a.size_bytes()) == 0) return a.size();
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return i;
  }
  return a.size();
}

std::pair<std::size_t, std::size_t> chunk_range(std::size_t n, int c, int chunks) {
  const std::size_t granule = n >= kLine * static_cast<std::size_t>(chunks) ? kLine : 1;
  const std::size_t granules = (n + granule - 1) / granule;
  const auto parts = static_cast<std::size_t>(chunks);
  const auto k = static_cast<std::size_t>(c);
  const std::size_t per = granules / parts, extra = granules % parts;
  const std::size_t first = k * per + std::min(k, extra);
  const std::size_t count = per + (k < extra ? 1 : 0);
  return {std::min(n, first * granule), std::min(n, (first + count) * granule)};
}

ThreadAllReduce::ThreadAllReduce(int participants, std::size_t elements)
    : participants_(participants >= 1 ? participants
                                      : throw std::invalid_argument("ThreadAllReduce: participants must be >= 1")),
      elements_(elements),
      step_(participants) {
  buffers_.reserve(static_cast<std::size_t>(participants));
  // Untouched memory: each owner writes its own pages first (below), so that on a NUMA host they
  // sit on its node. On one node a large buffer may come back from the benchmark before instead.
  const std::size_t bytes = std::max<std::size_t>(elements, 1) * sizeof(float);
  const bool reuse = bytes >= kMallocAlwaysMapsBytes && single_numa_node();
  for (int p = 0; p < participants; ++p) {
    if (reuse) {
      pages_.emplace_back(bytes, 16);
      buffers_.push_back(reinterpret_cast<float*>(pages_.back().data()));
    } else {
      heap_.emplace_back(new float[std::max<std::size_t>(elements, 1)]);
      buffers_.push_back(heap_.back().get());
    }
  }
  helpers_.reserve(static_cast<std::size_t>(participants - 1));
  for (int m = 1; m < participants; ++m) {
    helpers_.emplace_back([this, m] {
      for (;;) {
        step_.arrive_and_wait();  // start: job_, first_touch_ and stop_ were written before it
        if (stop_) return;
        work(m);
        step_.arrive_and_wait();  // done
      }
    });
  }
  first_touch_ = true;
  run(Algorithm::kRing);
  first_touch_ = false;
}

ThreadAllReduce::~ThreadAllReduce() {
  stop_ = true;
  if (!helpers_.empty()) step_.arrive_and_wait();  // releases the helpers, which see stop_
  for (std::thread& t : helpers_) t.join();
}

std::span<float> ThreadAllReduce::buffer(int participant) {
  if (participant < 0 || participant >= participants_) throw std::out_of_range("ThreadAllReduce::buffer");
  return {buffers_[static_cast<std::size_t>(participant)], elements_};
}

void ThreadAllReduce::run(Algorithm algorithm) {
  job_ = algorithm;
  if (participants_ > 1) step_.arrive_and_wait();
  work(0);
  if (participants_ > 1) step_.arrive_and_wait();
}

void ThreadAllReduce::work(int me) {
  if (first_touch_) {
    float* const mine = buffers_[static_cast<std::size_t>(me)];
    populate_pages(mine, elements_ * sizeof(float));  // one call, not a fault per page
    std::fill_n(mine, elements_, 0.0f);
    return;
  }
  if (job_ == Algorithm::kRing)
    ring(me);
  else
    gather_broadcast(me);
}

void ThreadAllReduce::gather_broadcast(int me) {
  const std::size_t n = elements_;
  float* const root = buffers_[0];
  if (me == 0) {  // everyone else waits at the barrier below meanwhile
    for (std::size_t lo = 0; lo < n; lo += kBlock) {
      const std::size_t len = std::min(kBlock, n - lo);
      for (int q = 1; q < participants_; ++q) add_into(root + lo, buffers_[static_cast<std::size_t>(q)] + lo, len);
    }
  }
  if (participants_ == 1) return;
  step_.arrive_and_wait();  // the sum is complete in participant 0's buffer
  if (me != 0 && n > 0) std::memcpy(buffers_[static_cast<std::size_t>(me)], root, n * sizeof(float));
}

void ThreadAllReduce::ring(int me) {
  const int p = participants_;
  if (p == 1) return;
  float* const mine = buffers_[static_cast<std::size_t>(me)];
  const float* const left = buffers_[static_cast<std::size_t>(mod(me - 1, p))];
  // Reduce-scatter: at step s, add the left neighbour's chunk (me - s - 1) into mine. The left
  // neighbour writes only its own chunk (me - s - 2) meanwhile, so no chunk is read and written at
  // once. After P-1 steps chunk (me + 1) of my buffer holds the full sum.
  for (int s = 0; s < p - 1; ++s) {
    const auto [lo, hi] = chunk_range(elements_, mod(me - s - 1, p), p);
    add_into(mine + lo, left + lo, hi - lo);
    step_.arrive_and_wait();
  }
  // All-gather: at step s, copy chunk (me - s) from the left neighbour, which completed it at the
  // step before (or holds it fully reduced, at s = 0).
  for (int s = 0; s < p - 1; ++s) {
    const auto [lo, hi] = chunk_range(elements_, mod(me - s, p), p);
    if (hi > lo) std::memcpy(mine + lo, left + lo, (hi - lo) * sizeof(float));
    if (s < p - 2) step_.arrive_and_wait();  // after the last step, run()'s done barrier orders it
  }
}

}  // namespace pairbench::kernels::collective
