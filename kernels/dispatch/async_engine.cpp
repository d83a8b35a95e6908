// AsyncEngine implementation: a single-producer submission ring from the frontend, a dependency
// scheduler (per-buffer FIFO of blocked ops) run by whichever worker holds the scheduler lock,
// and spin-then-park waits (std::atomic::wait) on both sides. Design notes: NOTES.md.
#include "dispatch/async_engine.h"

#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace pairbench::kernels {
namespace {

constexpr std::size_t kCacheLine = 64;
// Submission ring, in 8-byte words; a tiny op (one buffer) takes 4 words. Power of two.
constexpr std::uint64_t kRingWords = std::uint64_t{1} << 14;
constexpr std::uint64_t kRingMask = kRingWords - 1;
constexpr std::uint64_t kRecordHeaderWords = 3;  // fn, ctx, (reads << 32 | writes)
// Records one scheduler pass ingests at most; bounds how long the scheduler lock is held.
constexpr int kIngestBatch = 32;
constexpr unsigned kChunkBits = 10;
constexpr std::uint32_t kChunkSize = std::uint32_t{1} << kChunkBits;
constexpr std::uint32_t kMaxChunks = std::uint32_t{1} << 14;  // 16 Mi buffer tags
constexpr std::uint32_t kInlineEntries = 4;
// Above this many buffer tags per op, deduplicate by sorting instead of pairwise compare.
constexpr std::size_t kLinearDedupLimit = 32;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Spins (pause, with a yield every 64 rounds so a descheduled peer on a busy core can run) until
// pred() holds or spin_ns elapse. Returns pred()'s last value. Never parks.
template <class Pred>
bool spin_until(Pred&& pred, std::int64_t spin_ns) {
  if (pred()) return true;
  if (spin_ns <= 0) return false;
  const std::int64_t deadline = now_ns() + spin_ns;
  for (std::uint32_t round = 1;; ++round) {
    if (pred()) return true;
    if ((round & 63) == 0) {
      if (now_ns() >= deadline) return pred();
      static const unsigned ye = getenv("YE") ? atoi(getenv("YE")) : 64;
      if (ye && (round & (ye * 64 - 1)) == 0) std::this_thread::yield();
    } else {
      cpu_relax();
    }
  }
}

// Test-and-test-and-set lock; held for a bounded scheduler pass, so spinning (with yields for
// the oversubscribed case) beats a futex mutex.
class SpinLock {
 public:
  void lock() {
    for (std::uint32_t round = 1;; ++round) {
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      while (locked_.load(std::memory_order_relaxed)) {
        if ((++round & 63) == 0) {
          std::this_thread::yield();
        } else {
          cpu_relax();
        }
      }
    }
  }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

struct Op;

// One (op, buffer) dependency; linked into the buffer's queue while the op waits for it.
struct Entry {
  Op* op;
  Entry* next;
  BufferId buffer;
  bool write;
};

// Scheduler-side op node, pooled (never freed before engine destruction).
struct Op {
  OpFn fn = nullptr;
  void* ctx = nullptr;
  std::uint64_t seq = 0;       // 1-based enqueue index
  std::uint32_t pending = 0;   // buffers not yet granted
  std::uint32_t count = 0;     // distinct buffers
  Entry* entries = nullptr;    // inline_entries or overflow.data()
  Op* next = nullptr;          // ready-queue or free-list link
  Entry inline_entries[kInlineEntries];
  std::vector<Entry> overflow;  // keeps its capacity across reuse
};

// Per-buffer dependency state (MXNet ThreadedVar): granted readers/writer plus a FIFO of
// blocked entries. Only touched under the scheduler lock.
struct VarState {
  Entry* head = nullptr;
  Entry* tail = nullptr;
  std::uint32_t active_reads = 0;
  bool active_write = false;
};

// Buffer table chunk. Arrays are split by who writes them so the frontend's writes and the
// workers' writes never share a cache line.
struct BufferChunk {
  std::uint64_t last_write_seq[kChunkSize] = {};  // frontend only: seq of the newest writer
  alignas(kCacheLine) std::atomic<std::uint64_t> done_write_seq[kChunkSize] = {};  // workers
  alignas(kCacheLine) VarState vars[kChunkSize];  // scheduler lock
};

}  // namespace

struct AsyncEngine::Impl {
  explicit Impl(AsyncEngineOptions options);
  ~Impl();

  BufferId new_buffer();
  void push(OpFn fn, void* ctx, std::span<const BufferId> reads, std::span<const BufferId> writes);
  void wait_for(BufferId buffer);
  void wait_all();
  void shutdown();

  BufferChunk& chunk(BufferId id) {
    return *chunk_dir_[id >> kChunkBits].load(std::memory_order_acquire);
  }
  void check_buffer(BufferId id) const {
    if (id >= num_buffers_.load(std::memory_order_acquire)) {
      throw std::out_of_range("AsyncEngine: unknown buffer id " + std::to_string(id));
    }
  }

  // Frontend side.
  template <class Pred>
  void frontend_wait(Pred&& pred);
  void rethrow_pending_error();
  void wake_worker();

  // Worker side.
  void worker_main();
  bool has_work() const {
    return tail_pub_.load(std::memory_order_acquire) != head_pub_.load(std::memory_order_relaxed) ||
           ready_count_.load(std::memory_order_relaxed) != 0;
  }
  bool idle_wait();  // false once stopping
  void run(Op* op);
  // Scheduler, all under sched_lock_.
  bool ingest();
  void ingest_record(std::uint64_t pos);
  void complete(Op* op);
  void grant(VarState& var);
  void release(Op* op) {
    if (--op->pending == 0) push_ready(op);
  }
  void push_ready(Op* op);
  Op* pop_ready();
  Op* alloc_op();
  void free_op(Op* op) {
    op->next = free_ops_;
    free_ops_ = op;
  }

  const int workers_;
  const std::size_t max_queued_;
  const std::int64_t spin_ns_;
  std::unique_ptr<std::uint64_t[]> ring_;

  // Frontend-owned state (one frontend at a time); fe_peak_ is read by any thread.
  struct alignas(kCacheLine) Frontend {
    std::uint64_t tail = 0;         // ring write position, words, monotonic
    std::uint64_t cached_head = 0;  // last seen consumer position
    std::uint64_t seq = 0;          // ops pushed
    std::uint64_t cached_completed = 0;
    std::uint64_t peak = 0;
  } fe_;
  alignas(kCacheLine) std::atomic<std::uint64_t> tail_pub_{0};
  std::atomic<std::uint64_t> pushed_{0};
  std::atomic<std::uint64_t> peak_pub_{0};

  // Published by the scheduler.
  alignas(kCacheLine) std::atomic<std::uint64_t> head_pub_{0};
  std::atomic<std::uint32_t> ready_count_{0};
  alignas(kCacheLine) std::atomic<std::uint64_t> completed_{0};

  // Scheduler state, guarded by sched_lock_.
  alignas(kCacheLine) SpinLock sched_lock_;
  std::uint64_t head_ = 0;          // ring read position, words
  std::uint64_t cached_tail_ = 0;   // last seen producer position
  std::uint64_t ingested_seq_ = 0;
  std::uint64_t completed_count_ = 0;
  std::uint32_t ready_size_ = 0;
  Op* ready_head_ = nullptr;
  Op* ready_tail_ = nullptr;
  Op* free_ops_ = nullptr;
  std::vector<std::unique_ptr<Op[]>> op_blocks_;
  std::vector<Entry> dedup_scratch_;

  // Parking. Each epoch is bumped before a notify so a waiter that read the old value never
  // sleeps through it; the waiter counts let the fast paths skip the notify syscall.
  alignas(kCacheLine) std::atomic<std::uint32_t> work_epoch_{0};
  std::atomic<std::uint32_t> sleeping_workers_{0};
  std::atomic<bool> stop_{false};
  alignas(kCacheLine) std::atomic<std::uint32_t> done_epoch_{0};
  std::atomic<std::uint32_t> frontend_waiters_{0};

  // Buffer table.
  alignas(kCacheLine) std::mutex grow_mu_;
  std::atomic<std::uint32_t> num_buffers_{0};
  std::unique_ptr<std::atomic<BufferChunk*>[]> chunk_dir_;

  // First exception thrown by an op and not yet rethrown.
  std::mutex error_mu_;
  std::exception_ptr error_;
  std::atomic<bool> has_error_{false};

  std::vector<std::thread> threads_;
  bool shut_down_ = false;
};

AsyncEngine::Impl::Impl(AsyncEngineOptions options)
    : workers_(options.workers),
      max_queued_(options.max_queued_ops),
      spin_ns_(std::max<std::int64_t>(options.spin_ns, 0)),
      ring_(new std::uint64_t[kRingWords]),
      chunk_dir_(new std::atomic<BufferChunk*>[kMaxChunks]) {
  if (workers_ < 1) throw std::invalid_argument("AsyncEngine: workers must be >= 1");
  for (std::uint32_t i = 0; i < kMaxChunks; ++i) chunk_dir_[i].store(nullptr, std::memory_order_relaxed);
  threads_.reserve(static_cast<std::size_t>(workers_));
  try {
    for (int i = 0; i < workers_; ++i) threads_.emplace_back([this] { worker_main(); });
  } catch (...) {
    shutdown();
    throw;
  }
}

AsyncEngine::Impl::~Impl() {
  for (std::uint32_t i = 0; i < kMaxChunks; ++i) delete chunk_dir_[i].load(std::memory_order_relaxed);
}

void AsyncEngine::Impl::shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  const std::uint64_t target = fe_.seq;
  frontend_wait([&] { return completed_.load(std::memory_order_acquire) >= target; });
  stop_.store(true, std::memory_order_seq_cst);
  work_epoch_.fetch_add(1, std::memory_order_seq_cst);
  work_epoch_.notify_all();
  for (std::thread& t : threads_) t.join();
}

BufferId AsyncEngine::Impl::new_buffer() {
  std::lock_guard<std::mutex> lock(grow_mu_);
  const std::uint32_t id = num_buffers_.load(std::memory_order_relaxed);
  const std::uint32_t c = id >> kChunkBits;
  if (c >= kMaxChunks) throw std::length_error("AsyncEngine: too many buffers");
  if (chunk_dir_[c].load(std::memory_order_relaxed) == nullptr) {
    chunk_dir_[c].store(new BufferChunk(), std::memory_order_release);
  }
  num_buffers_.store(id + 1, std::memory_order_release);
  return id;
}

void AsyncEngine::Impl::wake_worker() {
  work_epoch_.fetch_add(1, std::memory_order_seq_cst);
  work_epoch_.notify_one();
}

template <class Pred>
void AsyncEngine::Impl::frontend_wait(Pred&& pred) {
  if (spin_until(pred, spin_ns_)) return;
  frontend_waiters_.fetch_add(1, std::memory_order_seq_cst);
  for (;;) {
    const std::uint32_t epoch = done_epoch_.load(std::memory_order_seq_cst);
    if (pred()) break;
    done_epoch_.wait(epoch, std::memory_order_seq_cst);
  }
  frontend_waiters_.fetch_sub(1, std::memory_order_relaxed);
}

void AsyncEngine::Impl::rethrow_pending_error() {
  if (!has_error_.load(std::memory_order_acquire)) return;
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(error_mu_);
    error = std::move(error_);
    error_ = nullptr;
    has_error_.store(false, std::memory_order_relaxed);
  }
  if (error) std::rethrow_exception(error);
}

void AsyncEngine::Impl::push(OpFn fn, void* ctx, std::span<const BufferId> reads,
                             std::span<const BufferId> writes) {
  if (fn == nullptr) throw std::invalid_argument("AsyncEngine::push: null op");
  for (BufferId b : reads) check_buffer(b);
  for (BufferId b : writes) check_buffer(b);
  const std::uint64_t ids = reads.size() + writes.size();
  const std::uint64_t words = kRecordHeaderWords + (ids + 1) / 2;
  if (words > kRingWords || reads.size() > UINT32_MAX || writes.size() > UINT32_MAX) {
    throw std::length_error("AsyncEngine::push: too many buffers for one op");
  }

  const std::uint64_t seq = fe_.seq + 1;
  if (max_queued_ != 0 && seq - fe_.cached_completed > max_queued_) {
    frontend_wait([&] {
      fe_.cached_completed = completed_.load(std::memory_order_acquire);
      return seq - fe_.cached_completed <= max_queued_;
    });
  }
  // A stale completed count only overestimates, so reload it only when it would raise the peak.
  if (seq - fe_.cached_completed > fe_.peak) {
    fe_.cached_completed = completed_.load(std::memory_order_acquire);
    if (seq - fe_.cached_completed > fe_.peak) {
      fe_.peak = seq - fe_.cached_completed;
      peak_pub_.store(fe_.peak, std::memory_order_relaxed);
    }
  }

  // A record never wraps: if it would, a zero word tells the consumer to skip to the ring start.
  std::uint64_t pos = fe_.tail & kRingMask;
  const std::uint64_t skip = pos + words > kRingWords ? kRingWords - pos : 0;
  const std::uint64_t end = fe_.tail + skip + words;
  if (end - fe_.cached_head > kRingWords) {
    frontend_wait([&] {
      fe_.cached_head = head_pub_.load(std::memory_order_acquire);
      return end - fe_.cached_head <= kRingWords;
    });
  }
  if (skip != 0) {
    ring_[pos] = 0;
    pos = 0;
  }
  std::uint64_t* rec = &ring_[pos];
  rec[0] = reinterpret_cast<std::uintptr_t>(fn);
  rec[1] = reinterpret_cast<std::uintptr_t>(ctx);
  rec[2] = (static_cast<std::uint64_t>(reads.size()) << 32) | writes.size();
  std::uint64_t* id_words = rec + kRecordHeaderWords;
  std::uint64_t k = 0;
  auto put = [&](BufferId b) {
    if ((k & 1) == 0) {
      id_words[k >> 1] = b;
    } else {
      id_words[k >> 1] |= static_cast<std::uint64_t>(b) << 32;
    }
    ++k;
  };
  for (BufferId b : reads) put(b);
  for (BufferId b : writes) {
    put(b);
    chunk(b).last_write_seq[b & (kChunkSize - 1)] = seq;
  }
  fe_.tail = end;
  fe_.seq = seq;
  // pushed_ before tail_pub_: no worker can complete an op that outstanding_ops() does not count.
  pushed_.store(seq, std::memory_order_relaxed);
  tail_pub_.store(end, std::memory_order_release);
  // Pairs with the fetch_add in idle_wait(): either the worker sees the new tail or we see it asleep.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleeping_workers_.load(std::memory_order_relaxed) != 0) wake_worker();
}

void AsyncEngine::Impl::wait_for(BufferId buffer) {
  check_buffer(buffer);
  BufferChunk& c = chunk(buffer);
  const std::uint32_t slot = buffer & (kChunkSize - 1);
  const std::uint64_t target = c.last_write_seq[slot];
  // Writers of one buffer complete in enqueue order, so one monotonic seq per buffer suffices.
  frontend_wait([&] { return c.done_write_seq[slot].load(std::memory_order_acquire) >= target; });
  rethrow_pending_error();
}

void AsyncEngine::Impl::wait_all() {
  const std::uint64_t target = fe_.seq;
  frontend_wait([&] { return completed_.load(std::memory_order_acquire) >= target; });
  rethrow_pending_error();
}

// ---- worker side ----

void AsyncEngine::Impl::worker_main() {
  Op* done = nullptr;
  for (;;) {
    Op* next = nullptr;
    bool progressed = false;
    bool more_ready = false;
    sched_lock_.lock();
    if (done != nullptr) {
      complete(done);
      progressed = true;
    }
    progressed |= ingest();
    next = pop_ready();
    more_ready = ready_size_ != 0;
    sched_lock_.unlock();

    if (progressed || more_ready) {
      // Pairs with the fetch_adds in frontend_wait() and idle_wait() (no lost wake-up).
      std::atomic_thread_fence(std::memory_order_seq_cst);
      if (progressed && frontend_waiters_.load(std::memory_order_relaxed) != 0) {
        done_epoch_.fetch_add(1, std::memory_order_seq_cst);
        done_epoch_.notify_all();
      }
      if (more_ready && sleeping_workers_.load(std::memory_order_relaxed) != 0) wake_worker();
    }
    if (next != nullptr) {
      run(next);
      done = next;
      continue;
    }
    done = nullptr;
    if (!idle_wait()) return;
  }
}

bool AsyncEngine::Impl::idle_wait() {
  auto ready = [&] { return has_work() || stop_.load(std::memory_order_relaxed); };
  while (!spin_until(ready, spin_ns_)) {
    const std::uint32_t epoch = work_epoch_.load(std::memory_order_seq_cst);
    sleeping_workers_.fetch_add(1, std::memory_order_seq_cst);
    if (!ready()) work_epoch_.wait(epoch, std::memory_order_seq_cst);
    sleeping_workers_.fetch_sub(1, std::memory_order_relaxed);
  }
  return !(stop_.load(std::memory_order_acquire) && !has_work());
}

void AsyncEngine::Impl::run(Op* op) {
  try {
    op->fn(op->ctx);
  } catch (...) {
    std::lock_guard<std::mutex> lock(error_mu_);
    if (!error_) {
      error_ = std::current_exception();
      has_error_.store(true, std::memory_order_release);
    }
  }
}

bool AsyncEngine::Impl::ingest() {
  if (head_ == cached_tail_) {
    cached_tail_ = tail_pub_.load(std::memory_order_acquire);
    if (head_ == cached_tail_) return false;
  }
  for (int n = 0; n < kIngestBatch && head_ != cached_tail_; ++n) {
    const std::uint64_t pos = head_ & kRingMask;
    if (ring_[pos] == 0) {  // wrap marker
      head_ += kRingWords - pos;
      --n;
      continue;
    }
    const std::uint64_t counts = ring_[pos + 2];
    const std::uint64_t ids = (counts >> 32) + (counts & 0xffffffffu);
    ingest_record(pos);
    head_ += kRecordHeaderWords + (ids + 1) / 2;
  }
  head_pub_.store(head_, std::memory_order_release);
  return true;
}

void AsyncEngine::Impl::ingest_record(std::uint64_t pos) {
  const std::uint64_t* rec = &ring_[pos];
  const std::uint32_t n_reads = static_cast<std::uint32_t>(rec[2] >> 32);
  const std::uint32_t n_writes = static_cast<std::uint32_t>(rec[2]);
  const std::uint32_t n = n_reads + n_writes;
  const std::uint64_t* id_words = rec + kRecordHeaderWords;
  auto id_at = [&](std::uint32_t k) {
    return static_cast<BufferId>(id_words[k >> 1] >> ((k & 1) * 32));
  };

  Op* op = alloc_op();
  op->fn = reinterpret_cast<OpFn>(static_cast<std::uintptr_t>(rec[0]));
  op->ctx = reinterpret_cast<void*>(static_cast<std::uintptr_t>(rec[1]));
  op->seq = ++ingested_seq_;
  op->pending = 0;
  if (n <= kInlineEntries) {
    op->entries = op->inline_entries;
  } else {
    op->overflow.resize(n);
    op->entries = op->overflow.data();
  }

  // Distinct buffers; a buffer both read and written (or listed twice) counts once, as a write.
  std::uint32_t count = 0;
  if (n <= kLinearDedupLimit) {
    for (std::uint32_t k = 0; k < n; ++k) {
      const BufferId b = id_at(k);
      const bool write = k >= n_reads;
      std::uint32_t i = 0;
      while (i < count && op->entries[i].buffer != b) ++i;
      if (i < count) {
        op->entries[i].write |= write;
      } else {
        op->entries[count++] = Entry{op, nullptr, b, write};
      }
    }
  } else {
    dedup_scratch_.clear();
    for (std::uint32_t k = 0; k < n; ++k) dedup_scratch_.push_back(Entry{op, nullptr, id_at(k), k >= n_reads});
    std::sort(dedup_scratch_.begin(), dedup_scratch_.end(), [](const Entry& a, const Entry& b) {
      return a.buffer != b.buffer ? a.buffer < b.buffer : a.write > b.write;
    });
    for (const Entry& e : dedup_scratch_) {
      if (count == 0 || op->entries[count - 1].buffer != e.buffer) op->entries[count++] = e;
    }
  }
  op->count = count;

  for (std::uint32_t i = 0; i < count; ++i) {
    Entry& e = op->entries[i];
    VarState& var = chunk(e.buffer).vars[e.buffer & (kChunkSize - 1)];
    const bool free_now = e.write ? (!var.active_write && var.active_reads == 0 && var.head == nullptr)
                                  : (!var.active_write && var.head == nullptr);
    if (free_now) {
      if (e.write) {
        var.active_write = true;
      } else {
        ++var.active_reads;
      }
    } else {
      if (var.tail != nullptr) {
        var.tail->next = &e;
      } else {
        var.head = &e;
      }
      var.tail = &e;
      ++op->pending;
    }
  }
  if (op->pending == 0) push_ready(op);
}

void AsyncEngine::Impl::grant(VarState& var) {
  while (Entry* h = var.head) {
    if (h->write ? (var.active_write || var.active_reads != 0) : var.active_write) return;
    var.head = h->next;
    if (var.head == nullptr) var.tail = nullptr;
    h->next = nullptr;
    if (h->write) {
      var.active_write = true;
      release(h->op);
      return;
    }
    ++var.active_reads;
    release(h->op);
  }
}

void AsyncEngine::Impl::complete(Op* op) {
  for (std::uint32_t i = 0; i < op->count; ++i) {
    const Entry& e = op->entries[i];
    BufferChunk& c = chunk(e.buffer);
    const std::uint32_t slot = e.buffer & (kChunkSize - 1);
    VarState& var = c.vars[slot];
    if (e.write) {
      var.active_write = false;
      c.done_write_seq[slot].store(op->seq, std::memory_order_release);
      grant(var);
    } else if (--var.active_reads == 0) {
      grant(var);
    }
  }
  ++completed_count_;
  completed_.store(completed_count_, std::memory_order_release);
  free_op(op);
}

void AsyncEngine::Impl::push_ready(Op* op) {
  op->next = nullptr;
  if (ready_tail_ != nullptr) {
    ready_tail_->next = op;
  } else {
    ready_head_ = op;
  }
  ready_tail_ = op;
  ready_count_.store(++ready_size_, std::memory_order_relaxed);
}

Op* AsyncEngine::Impl::pop_ready() {
  Op* op = ready_head_;
  if (op == nullptr) return nullptr;
  ready_head_ = op->next;
  if (ready_head_ == nullptr) ready_tail_ = nullptr;
  ready_count_.store(--ready_size_, std::memory_order_relaxed);
  return op;
}

Op* AsyncEngine::Impl::alloc_op() {
  if (free_ops_ == nullptr) {
    constexpr std::size_t kBlock = 256;
    op_blocks_.emplace_back(new Op[kBlock]);
    Op* block = op_blocks_.back().get();
    for (std::size_t i = 0; i < kBlock; ++i) free_op(&block[i]);
  }
  Op* op = free_ops_;
  free_ops_ = op->next;
  return op;
}

// ---- public API ----

AsyncEngine::AsyncEngine(AsyncEngineOptions options) : impl_(new Impl(options)) {}

AsyncEngine::~AsyncEngine() {
  impl_->shutdown();
  delete impl_;
}

BufferId AsyncEngine::new_buffer() { return impl_->new_buffer(); }

void AsyncEngine::push(OpFn fn, void* ctx, std::span<const BufferId> reads,
                       std::span<const BufferId> writes) {
  impl_->push(fn, ctx, reads, writes);
}

void AsyncEngine::wait_for(BufferId buffer) { impl_->wait_for(buffer); }

void AsyncEngine::wait_all() { impl_->wait_all(); }

std::size_t AsyncEngine::outstanding_ops() const {
  // completed first: completed <= pushed at every instant, so the difference never underflows.
  const std::uint64_t completed = impl_->completed_.load(std::memory_order_acquire);
  const std::uint64_t pushed = impl_->pushed_.load(std::memory_order_acquire);
  return static_cast<std::size_t>(pushed - completed);
}

std::size_t AsyncEngine::peak_outstanding_ops() const {
  return static_cast<std::size_t>(impl_->peak_pub_.load(std::memory_order_relaxed));
}

int AsyncEngine::workers() const { return impl_->workers_; }

}  // namespace pairbench::kernels
