// The CPU allocator workloads. Objects are written with memcpy (sizes need not be multiples of 8)
// and pointers pass through escape() so the compiler cannot drop a malloc/free pair.
#include "kernels/alloc/host_workloads.h"

#include "kernels/common/rng.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

namespace pairbench::kernels::alloc {
namespace {

inline void escape(void* p) { asm volatile("" : : "g"(p) : "memory"); }

std::size_t page_bytes() {
  static const std::size_t page = [] {
    const long v = sysconf(_SC_PAGESIZE);
    return v > 0 ? static_cast<std::size_t>(v) : std::size_t{4096};
  }();
  return page;
}

// Calls fn(offset) for one 8-byte word per page of a `bytes`-long object (bytes >= 8): offsets
// 0, page, 2 page, ... and the last 8-aligned word, so words never overlap and, for an 8-aligned
// object, every page it spans is touched (only the last bytes - bytes % 8 .. bytes may be skipped).
template <typename Fn>
inline void for_each_word(std::size_t bytes, Fn&& fn) {
  const std::size_t page = page_bytes();
  const std::size_t last = (bytes - 8) & ~std::size_t{7};
  std::size_t off = 0;
  for (; off < last; off += page) fn(off);
  fn(last);
}

inline std::uint64_t load_word(const unsigned char* p) {
  std::uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}
inline void store_word(unsigned char* p, std::uint64_t w) { std::memcpy(p, &w, sizeof w); }

void* checked_malloc(std::size_t bytes) {
  void* p = std::malloc(bytes);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

}  // namespace

std::uint64_t pattern_word(std::uint64_t seed, std::uint64_t id, std::uint64_t j) {
  std::uint64_t state = seed ^ (id * 0xD1B54A32D192ED03ull) ^ (j * 0xABC98388FB8FAC03ull);
  return splitmix64_next(state);
}

// ---- Tensor-sized buffers ----------------------------------------------------------------------

std::uint64_t tensor_buffer_step(std::size_t bytes, std::uint64_t seed) {
  if (bytes < 8) throw std::invalid_argument("tensor_buffer_step: bytes < 8");
  auto* b = static_cast<unsigned char*>(checked_malloc(bytes));
  std::uint64_t j = 0;
  for_each_word(bytes, [&](std::size_t off) { store_word(b + off, pattern_word(seed, 0, j++)); });
  escape(b);
  std::uint64_t sum = 0;
  for_each_word(bytes, [&](std::size_t off) { sum += load_word(b + off); });
  std::free(b);
  return sum;
}

std::uint64_t tensor_buffer_expected(std::size_t bytes, std::uint64_t seed) {
  if (bytes < 8) throw std::invalid_argument("tensor_buffer_expected: bytes < 8");
  std::uint64_t j = 0, sum = 0;
  for_each_word(bytes, [&](std::size_t) { sum += pattern_word(seed, 0, j++); });
  return sum;
}

// ---- Data loader -------------------------------------------------------------------------------

DataLoader::DataLoader(const LoaderOptions& options) : options_(options) {
  if (options_.workers < 1 || options_.samples_per_batch < 1 || options_.sample_bytes < 8 ||
      options_.queue_batches < 1) {
    throw std::invalid_argument("DataLoader: workers, samples, queue >= 1 and sample_bytes >= 8");
  }
  words_per_sample_ = 0;
  for_each_word(options_.sample_bytes, [&](std::size_t) { ++words_per_sample_; });
  for (int i = 0; i < options_.workers; ++i) threads_.emplace_back([this] { worker_loop(); });
}

DataLoader::~DataLoader() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  work_cv_.notify_all();
  space_cv_.notify_all();
  for (auto& t : threads_) t.join();
  for (const Batch& b : queue_) std::free(b.data);
}

DataLoader::Batch DataLoader::produce(std::int64_t index, std::uint64_t seed) {
  const std::size_t n = static_cast<std::size_t>(options_.samples_per_batch);
  const std::size_t sb = options_.sample_bytes;
  std::vector<unsigned char*> samples(n);
  for (std::size_t s = 0; s < n; ++s) {
    samples[s] = static_cast<unsigned char*>(checked_malloc(sb));
    const std::uint64_t id = static_cast<std::uint64_t>(index) * n + s;
    std::uint64_t j = 0;
    for_each_word(sb, [&](std::size_t off) { store_word(samples[s] + off, pattern_word(seed, id, j++)); });
  }
  auto* batch = static_cast<unsigned char*>(checked_malloc(sb * n));
  for (std::size_t s = 0; s < n; ++s) {
    unsigned char* dst = batch + s * sb;
    for_each_word(sb, [&](std::size_t off) { store_word(dst + off, load_word(samples[s] + off)); });
    std::free(samples[s]);
  }
  allocations_.fetch_add(static_cast<std::int64_t>(n) + 1, std::memory_order_relaxed);
  frees_.fetch_add(static_cast<std::int64_t>(n), std::memory_order_relaxed);
  return {batch, index, seed};
}

bool DataLoader::check_and_free(const Batch& batch) {
  const std::size_t n = static_cast<std::size_t>(options_.samples_per_batch);
  const std::size_t sb = options_.sample_bytes;
  const auto* data = static_cast<const unsigned char*>(batch.data);
  bool ok = true;
  for (std::size_t s = 0; s < n; ++s) {
    const std::uint64_t id = static_cast<std::uint64_t>(batch.index) * n + s;
    std::uint64_t j = 0;
    for_each_word(sb,
                  [&](std::size_t off) { ok &= load_word(data + s * sb + off) == pattern_word(batch.seed, id, j++); });
  }
  std::free(batch.data);
  frees_.fetch_add(1, std::memory_order_relaxed);
  return ok;
}

void DataLoader::worker_loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    work_cv_.wait(lock, [&] { return stop_ || next_index_ < target_index_; });
    if (stop_) return;
    const std::int64_t index = next_index_++;
    const std::uint64_t seed = seed_;
    lock.unlock();
    const Batch batch = produce(index, seed);
    lock.lock();
    space_cv_.wait(lock, [&] { return stop_ || queue_.size() < static_cast<std::size_t>(options_.queue_batches); });
    queue_.push_back(batch);  // freed by the destructor if stopping
    ready_cv_.notify_one();
  }
}

LoaderStats DataLoader::run(std::int64_t batches, std::uint64_t seed) {
  const std::int64_t allocations_before = allocations_.load();
  const std::int64_t frees_before = frees_.load();
  LoaderStats stats;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    seed_ = seed;
    target_index_ = next_index_ + batches;
  }
  work_cv_.notify_all();
  while (stats.batches < batches) {
    Batch batch;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      ready_cv_.wait(lock, [&] { return !queue_.empty(); });
      batch = queue_.front();
      queue_.pop_front();
    }
    space_cv_.notify_one();
    if (!check_and_free(batch)) ++stats.bad_batches;
    ++stats.batches;
  }
  stats.allocations = allocations_.load() - allocations_before;
  stats.frees = frees_.load() - frees_before;
  return stats;
}

// ---- Small-object churn ------------------------------------------------------------------------

namespace {
constexpr std::size_t kChurnSequence = std::size_t{1} << 16;  // ops per thread before the sequence repeats
}

SmallObjectChurn::SmallObjectChurn(const ChurnOptions& options) : options_(options) {
  if (options_.threads < 1 || options_.live_objects_per_thread < 1 || options_.min_bytes < 16 ||
      options_.max_bytes < options_.min_bytes) {
    throw std::invalid_argument("SmallObjectChurn: threads, slots >= 1; 16 <= min_bytes <= max_bytes");
  }
  for (int t = 0; t < options_.threads; ++t) {
    auto state = std::make_unique<Thread>();
    std::uint64_t rng = options_.seed * kSplitMix64Gamma + static_cast<std::uint64_t>(t);
    const std::uint64_t span = options_.max_bytes - options_.min_bytes + 1;
    state->ops.resize(kChurnSequence);
    for (Op& op : state->ops) {
      op.slot = static_cast<std::uint32_t>(splitmix64_next(rng) %
                                           static_cast<std::uint64_t>(options_.live_objects_per_thread));
      op.bytes = static_cast<std::uint32_t>(options_.min_bytes + splitmix64_next(rng) % span);
    }
    state->slots.resize(static_cast<std::size_t>(options_.live_objects_per_thread));
    state->next_tag = static_cast<std::uint64_t>(t) << 48;
    state_.push_back(std::move(state));
  }
  for (int i = 1; i < options_.threads; ++i) helpers_.emplace_back([this, i] { helper_loop(i); });
}

SmallObjectChurn::~SmallObjectChurn() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  start_cv_.notify_all();
  for (auto& h : helpers_) h.join();
  drain();
}

namespace {
inline bool object_intact(const void* p, std::uint32_t bytes, std::uint64_t tag) {
  const auto* b = static_cast<const unsigned char*>(p);
  return load_word(b) == tag && b[bytes - 1] == static_cast<unsigned char>(tag ^ 0x5A);
}
}  // namespace

void SmallObjectChurn::run_thread(Thread& t, std::int64_t ops) {
  constexpr std::size_t kMask = kChurnSequence - 1;
  for (std::int64_t i = 0; i < ops; ++i) {
    const Op op = t.ops[t.cursor];
    t.cursor = (t.cursor + 1) & kMask;
    Object& o = t.slots[op.slot];
    if (o.p != nullptr) {
      t.stats.bad_objects += !object_intact(o.p, o.bytes, o.tag);
      ::operator delete(o.p, o.bytes);
      ++t.stats.frees;
    }
    auto* p = static_cast<unsigned char*>(::operator new(op.bytes));
    const std::uint64_t tag = t.next_tag++;
    store_word(p, tag);
    p[op.bytes - 1] = static_cast<unsigned char>(tag ^ 0x5A);
    o = {p, op.bytes, tag};
    ++t.stats.allocations;
  }
}

void SmallObjectChurn::helper_loop(int index) {
  std::uint64_t seen = 0;
  while (true) {
    std::int64_t ops = 0;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      ops = ops_per_thread_;
    }
    run_thread(*state_[static_cast<std::size_t>(index)], ops);
    std::lock_guard<std::mutex> lock(mutex_);
    if (--running_ == 0) done_cv_.notify_one();
  }
}

ChurnStats SmallObjectChurn::run(std::int64_t ops_per_thread) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    ops_per_thread_ = ops_per_thread;
    running_ = options_.threads - 1;
    ++generation_;
  }
  start_cv_.notify_all();
  run_thread(*state_[0], ops_per_thread);
  ChurnStats total;
  std::unique_lock<std::mutex> lock(mutex_);
  done_cv_.wait(lock, [&] { return running_ == 0; });
  for (const auto& t : state_) {
    total.allocations += t->stats.allocations;
    total.frees += t->stats.frees;
    total.bad_objects += t->stats.bad_objects;
  }
  return total;
}

ChurnStats SmallObjectChurn::drain() {
  ChurnStats total;
  for (const auto& t : state_) {
    for (Object& o : t->slots) {
      if (o.p == nullptr) continue;
      t->stats.bad_objects += !object_intact(o.p, o.bytes, o.tag);
      ::operator delete(o.p, o.bytes);
      ++t->stats.frees;
      o = {};
    }
    total.allocations += t->stats.allocations;
    total.frees += t->stats.frees;
    total.bad_objects += t->stats.bad_objects;
  }
  return total;
}

// ---- Fragmentation -----------------------------------------------------------------------------

FragmentationTrace::FragmentationTrace(const FragmentationOptions& options) : seed_(options.seed) {
  if (options.phases < 1 || options.phases > 6 || options.short_lifetime_max < 1 || options.survivor_fraction < 0 ||
      options.survivor_fraction > 1 || options.phase_bytes == 0) {
    throw std::invalid_argument(
        "FragmentationTrace: 1 <= phases <= 6, short_lifetime_max >= 1, 0 <= survivor_fraction <= 1");
  }
  std::uint64_t rng = options.seed;
  auto uniform = [&] { return unit_double(splitmix64_next(rng)); };
  std::vector<std::size_t> phase_end;
  std::vector<int> phase_of;
  for (int k = 0; k < options.phases; ++k) {
    const double low = 64.0 * std::pow(4.0, k);
    std::size_t bytes = 0;
    while (bytes < options.phase_bytes) {
      const auto size = static_cast<std::uint32_t>(low * std::pow(4.0, uniform()));
      sizes_.push_back(size);
      phase_of.push_back(k);
      bytes += size;
    }
    total_bytes_ += bytes;
    phase_end.push_back(sizes_.size());
  }
  const std::size_t n = sizes_.size();
  // death[i]: freed just before allocation death[i]; n means at the end.
  std::vector<std::uint32_t> death(n);
  for (std::size_t i = 0; i < n; ++i) {
    const int k = phase_of[i];
    if (uniform() < options.survivor_fraction) {
      death[i] = static_cast<std::uint32_t>(k + 1 < options.phases ? phase_end[static_cast<std::size_t>(k) + 1] : n);
    } else {
      const std::size_t life = 1 + splitmix64_next(rng) % static_cast<std::uint64_t>(options.short_lifetime_max);
      death[i] = static_cast<std::uint32_t>(std::min(n, i + life));
    }
  }
  free_offsets_.assign(n + 2, 0);
  for (std::uint32_t d : death) ++free_offsets_[d + 1];
  for (std::size_t i = 1; i < free_offsets_.size(); ++i) free_offsets_[i] += free_offsets_[i - 1];
  free_order_.resize(n);
  std::vector<std::uint32_t> fill(free_offsets_.begin(), free_offsets_.end() - 1);
  for (std::size_t i = 0; i < n; ++i) free_order_[fill[death[i]]++] = static_cast<std::uint32_t>(i);
  std::size_t live = 0;
  for (std::size_t i = 0; i < n; ++i) {
    for (std::uint32_t f = free_offsets_[i]; f < free_offsets_[i + 1]; ++f) live -= sizes_[free_order_[f]];
    live += sizes_[i];
    peak_live_bytes_ = std::max(peak_live_bytes_, live);
  }
  pointers_.assign(n, nullptr);
}

FragmentationStats FragmentationTrace::replay() {
  FragmentationStats stats;
  const std::size_t n = sizes_.size();
  std::size_t live = 0;
  auto release = [&](std::uint32_t id) {
    auto* b = static_cast<unsigned char*>(pointers_[id]);
    std::uint64_t j = 0;
    bool ok = true;
    for_each_word(sizes_[id], [&](std::size_t off) { ok &= load_word(b + off) == pattern_word(seed_, id, j++); });
    stats.bad_objects += !ok;
    std::free(b);
    pointers_[id] = nullptr;
    live -= sizes_[id];
    ++stats.frees;
  };
  for (std::size_t i = 0; i < n; ++i) {
    for (std::uint32_t f = free_offsets_[i]; f < free_offsets_[i + 1]; ++f) release(free_order_[f]);
    auto* b = static_cast<unsigned char*>(checked_malloc(sizes_[i]));
    std::uint64_t j = 0;
    for_each_word(sizes_[i], [&](std::size_t off) { store_word(b + off, pattern_word(seed_, i, j++)); });
    pointers_[i] = b;
    live += sizes_[i];
    stats.peak_live_bytes = std::max(stats.peak_live_bytes, live);
    ++stats.allocations;
  }
  for (std::uint32_t f = free_offsets_[n]; f < free_offsets_[n + 1]; ++f) release(free_order_[f]);
  return stats;
}

}  // namespace pairbench::kernels::alloc
