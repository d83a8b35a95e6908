// AsyncEngine implementation: a single-producer submission ring from the frontend, a dependency
// scheduler (per-buffer FIFO of blocked ops) run by whichever worker holds the scheduler lock,
// and spin-then-park waits (std::atomic::wait) on both sides. Design notes: NOTES.md.
#include "kernels/dispatch/async_engine.h"

#include "kernels/common/cpus.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif
#if defined(__linux__)
#include <linux/membarrier.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace pairbench::kernels {
namespace {

constexpr std::size_t kCacheLine = 64;
// Submission ring, in 8-byte words (512 KiB, prefaulted); a tiny op (one buffer) takes 4 words,
// so 16Ki tiny ops fit. Sized so a 10k-op async burst never fills it: when full, the frontend
// moves records into (cold, growing) op nodes itself, ~3x slower per op on a fresh engine.
constexpr std::uint64_t kRingWords = std::uint64_t{1} << 16;
constexpr std::uint64_t kRingMask = kRingWords - 1;
constexpr std::uint64_t kRecordHeaderWords = 3;  // fn, ctx, (reads << 32 | writes)
// Records one scheduler pass ingests at most; bounds how long the scheduler lock is held.
constexpr int kIngestBatch = 32;
// A worker that already has its next op ingests more only while fewer ops than this are in the
// scheduler (ingested, not completed).
constexpr std::uint64_t kLookaheadOps = 2 * kIngestBatch;
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

inline int current_cpu() {
#if defined(__linux__)
  return sched_getcpu();
#else
  return -1;
#endif
}

// Lost wake-ups are Dekker races: one side publishes (work, progress), then reads the other
// side's "parked" count; the other increments that count, then re-checks for the publication
// before sleeping. Both sides need a full fence in between. The frontend's push is the hot side
// that matters: a fence there drains the store buffer, i.e. waits for the cross-core misses on
// the ring line and tail (measured ~0.1 us per push on the 2-core VM, more than the whole push).
// So, when membarrier(PRIVATE_EXPEDITED) is available and workers spin before parking, the push
// uses only a compiler barrier and a parking worker runs membarrier instead, which makes every
// running thread of the process execute the full barrier the push skipped. membarrier costs
// ~1 us, or ~50 us with another thread running (IPIs to a busy vCPU), so it stays off with
// spin_ns below kAsymmetricMinSpinNs, where workers park after every op.
constexpr std::int64_t kAsymmetricMinSpinNs = 10'000;

// True if this process may use membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) (now registered).
bool register_membarrier() {
#if defined(__linux__) && defined(SYS_membarrier)
  const long cmds = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0);
  if (cmds < 0 || (cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return false;
  return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0) == 0;
#else
  return false;
#endif
}

// Moves the calling worker to the (index+1)-th allowed CPU after `from_cpu`, cycling (so workers
// spread over all CPUs, worker 0 off `from_cpu`), then restores its affinity mask: a placement
// hint, not pinning. Linux starts a thread on its creator's CPU, and a futex wake may pull a
// worker onto the waker's; the load balancer takes ~10-25 ms to undo that, and until then every
// hand-off with the frontend is a context switch (sync round trip ~6 us instead of <1 us on the
// 2-core VM) and two busy workers may share one CPU.
inline void move_to_spread_cpu(int from_cpu, int index) {
#if defined(__linux__)
  cpu_set_t allowed;
  if (from_cpu < 0 || sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return;
  const int count = CPU_COUNT(&allowed);
  if (count < 2 || !CPU_ISSET(from_cpu, &allowed)) return;
  int skip = index % count + 1;
  int target = from_cpu;
  while (skip > 0) {
    target = (target + 1) % CPU_SETSIZE;
    if (CPU_ISSET(target, &allowed)) --skip;
  }
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(target, &one);
  if (sched_setaffinity(0, sizeof(one), &one) == 0) sched_setaffinity(0, sizeof(allowed), &allowed);
#else
  (void)from_cpu;
  (void)index;
#endif
}

// Moves the calling thread to `cpu`, then restores its affinity mask (placement, not pinning).
inline void move_to_cpu(int cpu) {
#if defined(__linux__)
  cpu_set_t allowed;
  if (cpu < 0 || sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  if (sched_setaffinity(0, sizeof(one), &one) == 0) sched_setaffinity(0, sizeof(allowed), &allowed);
#else
  (void)cpu;
#endif
}

// An allowed CPU of the calling thread outside `taken` (CPU numbers < 64), or -1.
inline int free_cpu(std::uint64_t taken) {
#if defined(__linux__)
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return -1;
  for (int cpu = 0; cpu < 64 && cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &allowed) && (taken & (std::uint64_t{1} << cpu)) == 0) return cpu;
  }
#else
  (void)taken;
#endif
  return -1;
}

inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Spins until pred() holds or spin_ns elapse; returns pred()'s last value. Never parks. Mostly
// pause (~20 ns here); every kCheckRounds rounds it reads the clock and yields, so a descheduled
// peer can run when threads outnumber cores (a yield costs ~1.2 us on the 2-core VM, hence not
// every round).
constexpr std::uint32_t kCheckRounds = 64;
template <class Pred>
bool spin_until(Pred&& pred, std::int64_t spin_ns) {
  if (pred()) return true;
  if (spin_ns <= 0) return false;
  const std::int64_t deadline = now_ns() + spin_ns;
  for (std::uint32_t round = 1;; ++round) {
    if (pred()) return true;
    if (round % kCheckRounds == 0) {
      if (now_ns() >= deadline) return pred();
      std::this_thread::yield();
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
        if (++round % kCheckRounds == 0) {
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
  std::uint64_t seq = 0;      // 1-based enqueue index
  std::uint32_t pending = 0;  // buffers not yet granted
  std::uint32_t count = 0;    // distinct buffers
  Entry* entries = nullptr;   // inline_entries or overflow.data()
  Op* next = nullptr;         // ready-queue or free-list link
  Entry inline_entries[kInlineEntries];
  std::vector<Entry> overflow;  // keeps its capacity across reuse
};

// Per-buffer dependency state (MXNet ThreadedVar): granted readers/writer plus a FIFO of
// blocked entries, guarded by the scheduler lock; and the seq of the newest completed writer,
// which the frontend polls in wait_for(). One cache line per buffer: workers completing ops on
// different buffers must not false-share.
struct alignas(kCacheLine) VarState {
  Entry* head = nullptr;
  Entry* tail = nullptr;
  std::uint32_t active_reads = 0;
  bool active_write = false;
  std::atomic<std::uint64_t> done_write_seq{0};
};

// Buffer table chunk; last_write_seq is written by the frontend only, so it lives apart.
struct BufferChunk {
  std::uint64_t last_write_seq[kChunkSize] = {};  // seq of the newest enqueued writer
  VarState vars[kChunkSize];
};

// What the parked frontend waits for; workers evaluate it so they only notify when it holds.
enum class WaitKind : std::uint32_t {
  kCompleted,      // completed_ >= target
  kBufferWritten,  // done_write_seq[buffer] >= target
};

}  // namespace

struct AsyncEngine::Impl {
  explicit Impl(AsyncEngineOptions options);
  ~Impl();

  BufferId new_buffer();
  void push(OpFn fn, void* ctx, std::span<const BufferId> reads, std::span<const BufferId> writes);
  void wait_for(BufferId buffer);
  void wait_all();
  // Blocks until all pushed ops completed, then joins the workers. Never throws op exceptions.
  void shutdown();

  BufferChunk& chunk(BufferId id) {
    return *chunk_dir_[id >> kChunkBits].load(std::memory_order_acquire);
  }
  std::atomic<std::uint64_t>& done_write_seq(BufferId id) { return var(id).done_write_seq; }
  VarState& var(BufferId id) { return chunk(id).vars[id & (kChunkSize - 1)]; }
  void check_buffer(BufferId id) const {
    if (id >= num_buffers_.load(std::memory_order_acquire)) {
      throw std::out_of_range("AsyncEngine: unknown buffer id " + std::to_string(id));
    }
  }

  bool reached(WaitKind kind, BufferId buffer, std::uint64_t target) {
    switch (kind) {
      case WaitKind::kCompleted:
        return completed_.load(std::memory_order_acquire) >= target;
      case WaitKind::kBufferWritten:
        return done_write_seq(buffer).load(std::memory_order_acquire) >= target;
    }
    return true;
  }
  // Frontend: blocks (spin, then park) until reached(kind, buffer, target).
  void frontend_wait(WaitKind kind, BufferId buffer, std::uint64_t target);
  void rethrow_pending_error();
  void note_frontend_cpu() {
    const int cpu = current_cpu();  // ~2 ns (glibc reads it from rseq)
    if (cpu != fe_.cpu) {
      fe_.cpu = cpu;
      frontend_cpu_.store(cpu, std::memory_order_relaxed);
    }
  }
  // Frontend, ring full: rather than wait for busy workers, moves queued records into the
  // scheduler itself (taking the scheduler lock) until the ring is at most half full and the
  // record ending at ring position `end` fits.
  void drain_ring(std::uint64_t end);
  // Frontend push side of the push / worker-park Dekker pair (see kAsymmetricMinSpinNs).
  void push_barrier() const {
    if (asymmetric_) {
      std::atomic_signal_fence(std::memory_order_seq_cst);
    } else {
      std::atomic_thread_fence(std::memory_order_seq_cst);
    }
  }
  // Worker side of that pair, after announcing it is about to park.
  void park_barrier() const {
#if defined(__linux__) && defined(SYS_membarrier)
    if (asymmetric_) {
      syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0);
      return;
    }
#endif
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
  // Wakes one parked worker unless some worker is searching (spinning, or in a scheduler pass
  // that has not yet picked an op): it will find the work. Call after publishing the work and a
  // barrier. The searching count needs a real fence: a searcher that turns busy decrements it
  // and then re-checks for leftover work with no heavy barrier.
  void maybe_wake_worker() {
    if (sleeping_workers_.load(std::memory_order_relaxed) == 0) return;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (searching_workers_.load(std::memory_order_relaxed) != 0) return;
    work_epoch_.fetch_add(1, std::memory_order_seq_cst);
    work_epoch_.notify_one();
  }
  // Searching-count updates; a single worker needs no count (a parked one is the only one).
  void searching_add(int delta) {
    if (workers_ > 1)
      searching_workers_.fetch_add(static_cast<std::uint32_t>(delta), std::memory_order_seq_cst);
  }

  void worker_main(int index);
  bool has_work() const {
    return tail_pub_.load(std::memory_order_acquire) != head_pub_.load(std::memory_order_acquire) ||
           ready_count_.load(std::memory_order_acquire) != 0;
  }
  bool stopping() const { return stop_.load(std::memory_order_acquire) && !has_work(); }
  // Blocks until there may be work; false once the engine is stopping. backoff_ns > 0 after a
  // pass that ingested only blocked ops: for that long only ready ops count as work, since the
  // worker running their predecessor ingests the ring itself when it completes.
  bool idle_wait(int index, std::int64_t backoff_ns);
  // After a futex wake-up: Linux tends to place the woken thread on the waker's CPU (the
  // frontend's, or a busy worker's). Moves to an allowed CPU that neither the frontend nor an
  // awake worker uses, if there is one, and records where this worker runs.
  void settle_after_wake(int index);
  void run(Op* op);
  // Scheduler, all under sched_lock_.
  // noexcept: an allocation failure here would leave the scheduler half-updated; terminate.
  bool ingest() noexcept;
  void ingest_record(std::uint64_t pos);
  // Records op's completion; returns the first op that this made ready (for the caller to run
  // next: its dependency data is hot in this core's cache), the rest go to the ready queue.
  Op* complete(Op* op);
  void grant(VarState& var, Op*& first_ready);
  void release(Op* op, Op*& first_ready) {
    if (--op->pending != 0) return;
    if (first_ready == nullptr) {
      first_ready = op;
    } else {
      push_ready(op);
    }
  }
  void push_ready(Op* op);
  Op* pop_ready();
  void publish_ready() {
    if (ready_size_ != published_ready_) {
      published_ready_ = ready_size_;
      ready_count_.store(ready_size_, std::memory_order_release);
    }
  }
  Op* alloc_op();
  void free_op(Op* op) {
    op->next = free_ops_;
    free_ops_ = op;
  }

  const int workers_;
  const std::size_t max_queued_;
  const std::int64_t spin_ns_;
  const bool asymmetric_;  // see kAsymmetricMinSpinNs
  const int cpu_count_;    // CPUs the engine's threads may run on
  // CPU of each worker that is not parked, -1 while parked (read when a worker wakes up).
  std::unique_ptr<std::atomic<int>[]> worker_cpu_;
  std::unique_ptr<std::uint64_t[]> ring_;

  // Frontend-owned state (one frontend thread at a time).
  struct alignas(kCacheLine) Frontend {
    std::uint64_t tail = 0;         // ring write position in words, monotonic
    std::uint64_t cached_head = 0;  // last seen head_pub_
    std::uint64_t seq = 0;          // ops pushed
    std::uint64_t cached_completed = 0;
    std::uint64_t completed_read_seq = 0;  // seq at which cached_completed was read for the peak
    std::uint64_t peak = 0;
    int cpu = -1;
  } fe_;
  alignas(kCacheLine) std::atomic<std::uint64_t> tail_pub_{0};
  std::atomic<std::uint64_t> pushed_{0};
  std::atomic<std::uint64_t> peak_pub_{0};
  std::atomic<int> frontend_cpu_{-1};  // CPU of the frontend's latest push or wait

  // Published by the scheduler.
  alignas(kCacheLine) std::atomic<std::uint64_t> head_pub_{0};
  std::atomic<std::uint32_t> ready_count_{0};
  alignas(kCacheLine) std::atomic<std::uint64_t> completed_{0};

  // Scheduler state, guarded by sched_lock_.
  alignas(kCacheLine) SpinLock sched_lock_;
  std::uint64_t head_ = 0;         // ring read position in words
  std::uint64_t cached_tail_ = 0;  // last seen tail_pub_
  std::uint64_t ingested_seq_ = 0;
  std::uint64_t completed_count_ = 0;
  std::uint32_t ready_size_ = 0;
  std::uint32_t published_ready_ = 0;
  Op* ready_head_ = nullptr;
  Op* ready_tail_ = nullptr;
  Op* free_ops_ = nullptr;
  std::vector<std::unique_ptr<Op[]>> op_blocks_;
  std::vector<Entry> dedup_scratch_;

  // Worker parking. An epoch is bumped before every notify, so a waiter that read the old value
  // cannot sleep through it; the counts let the fast paths skip the notify syscall.
  alignas(kCacheLine) std::atomic<std::uint32_t> work_epoch_{0};
  std::atomic<std::uint32_t> sleeping_workers_{0};
  std::atomic<bool> stop_{false};
  // Workers spinning or inside a scheduler pass (multi-worker engines only); starts at workers_.
  alignas(kCacheLine) std::atomic<std::uint32_t> searching_workers_{0};
  // Spinner role: at most one idle worker spins (the rest park); with 2 cores, more spinners
  // would steal the CPU from the frontend and the busy worker.
  static constexpr std::uint32_t kNoSpinner = 0, kSpinner = 1, kPoliteSpinner = 2;
  std::atomic<std::uint32_t> spinner_{kNoSpinner};

  // Frontend parking; the wait_* fields describe the frontend's pending wait.
  alignas(kCacheLine) std::atomic<std::uint32_t> frontend_waiters_{0};
  std::atomic<std::uint32_t> done_epoch_{0};
  std::atomic<WaitKind> wait_kind_{WaitKind::kCompleted};
  std::atomic<BufferId> wait_buffer_{0};
  std::atomic<std::uint64_t> wait_target_{0};

  // Buffer table: fixed directory of lazily allocated chunks, so ids stay valid while it grows.
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
      asymmetric_(spin_ns_ >= kAsymmetricMinSpinNs && register_membarrier()),
      cpu_count_(usable_cpus()),
      worker_cpu_(new std::atomic<int>[static_cast<std::size_t>(std::max(options.workers, 1))]),
      ring_(new std::uint64_t[kRingWords]),
      chunk_dir_(new std::atomic<BufferChunk*>[kMaxChunks]) {
  if (workers_ < 1) throw std::invalid_argument("AsyncEngine: workers must be >= 1");
  for (std::uint32_t i = 0; i < kMaxChunks; ++i)
    chunk_dir_[i].store(nullptr, std::memory_order_relaxed);
  // Touch the ring and a first block of op nodes now, so page faults (~several us each in the
  // VM) land in the constructor rather than in the first pushes.
  std::fill_n(ring_.get(), kRingWords, std::uint64_t{0});
  free_op(alloc_op());
  for (int i = 0; i < workers_; ++i) worker_cpu_[i].store(-1, std::memory_order_relaxed);
  threads_.reserve(static_cast<std::size_t>(workers_));
  searching_add(workers_);
  try {
    const int creator_cpu = current_cpu();
    for (int i = 0; i < workers_; ++i) {
      threads_.emplace_back([this, creator_cpu, i] {
        move_to_spread_cpu(creator_cpu, i);
        worker_cpu_[i].store(current_cpu(), std::memory_order_relaxed);
        worker_main(i);
      });
    }
  } catch (...) {
    shutdown();
    throw;
  }
}

AsyncEngine::Impl::~Impl() {
  for (std::uint32_t i = 0; i < kMaxChunks; ++i)
    delete chunk_dir_[i].load(std::memory_order_relaxed);
}

void AsyncEngine::Impl::shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  frontend_wait(WaitKind::kCompleted, 0, fe_.seq);
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

void AsyncEngine::Impl::frontend_wait(WaitKind kind, BufferId buffer, std::uint64_t target) {
  note_frontend_cpu();
  if (spin_until([&] { return reached(kind, buffer, target); }, spin_ns_)) return;
  wait_kind_.store(kind, std::memory_order_relaxed);
  wait_buffer_.store(buffer, std::memory_order_relaxed);
  wait_target_.store(target, std::memory_order_relaxed);
  // Dekker with worker_main(), which publishes progress and then reads frontend_waiters_: we
  // increment, then re-check. One of the two sees the other.
  frontend_waiters_.fetch_add(1, std::memory_order_seq_cst);
  for (;;) {
    const std::uint32_t epoch = done_epoch_.load(std::memory_order_seq_cst);
    if (reached(kind, buffer, target)) break;
    done_epoch_.wait(epoch, std::memory_order_seq_cst);
  }
  frontend_waiters_.fetch_sub(1, std::memory_order_release);
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
  // At most half the ring, so that a record always fits once the ring is empty.
  if (words > kRingWords / 2) {
    throw std::length_error("AsyncEngine::push: too many buffers for one op");
  }

  note_frontend_cpu();
  const std::uint64_t seq = fe_.seq + 1;
  if (max_queued_ != 0 && seq - fe_.cached_completed > max_queued_) {
    fe_.cached_completed = completed_.load(std::memory_order_acquire);
    if (seq - fe_.cached_completed > max_queued_) {
      frontend_wait(WaitKind::kCompleted, 0, seq - max_queued_);
      fe_.cached_completed = completed_.load(std::memory_order_acquire);
    }
  }
  // The peak is sampled at pushes from an exact completed count. Re-reading completed_ is a
  // cross-core miss while the worker advances it, so when unbounded it is re-read at most every
  // kPeakSampleOps pushes (the peak then trails the truth by less than that).
  constexpr std::uint64_t kPeakSampleOps = 16;
  if (seq - fe_.cached_completed > fe_.peak && (max_queued_ != 0 || fe_.completed_read_seq == 0 ||
                                                seq - fe_.completed_read_seq >= kPeakSampleOps)) {
    fe_.cached_completed = completed_.load(std::memory_order_acquire);
    fe_.completed_read_seq = seq;
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
    fe_.cached_head = head_pub_.load(std::memory_order_acquire);
    if (end - fe_.cached_head > kRingWords) drain_ring(end);
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
  push_barrier();
  maybe_wake_worker();
}

void AsyncEngine::Impl::drain_ring(std::uint64_t end) {
  bool ready = false;
  std::uint64_t head = 0;
  do {
    sched_lock_.lock();
    ingest();
    publish_ready();
    ready |= ready_size_ != 0;
    sched_lock_.unlock();
    head = head_pub_.load(std::memory_order_acquire);
  } while (end - head > kRingWords || fe_.tail - head > kRingWords / 2);
  fe_.cached_head = head_pub_.load(std::memory_order_acquire);
  push_barrier();
  if (ready) maybe_wake_worker();
}

void AsyncEngine::Impl::wait_for(BufferId buffer) {
  check_buffer(buffer);
  // Writers of one buffer complete in enqueue order (WAW), so one monotonic seq per buffer says
  // whether all of them are done.
  const std::uint64_t target = chunk(buffer).last_write_seq[buffer & (kChunkSize - 1)];
  frontend_wait(WaitKind::kBufferWritten, buffer, target);
  rethrow_pending_error();
}

void AsyncEngine::Impl::wait_all() {
  frontend_wait(WaitKind::kCompleted, 0, fe_.seq);
  rethrow_pending_error();
}

// ---- worker side ----

void AsyncEngine::Impl::worker_main(int index) {
  constexpr std::int64_t kMinBackoffNs = 500;
  constexpr std::int64_t kMaxBackoffNs = 8'000;
  constexpr int kMaxDirectRuns = 64;
  int direct_runs = 0;
  Op* done = nullptr;
  bool searching = true;  // counted in searching_workers_ from construction
  std::int64_t backoff_ns = 0;
  for (;;) {
    if (!searching) {
      searching_add(1);
      searching = true;
    }
    sched_lock_.lock();
    const bool completed = done != nullptr;
    Op* next = completed ? complete(done) : nullptr;
    // Run the op our completion released (chain affinity: with two workers on two chains each
    // keeps its own), unless that has gone on for kMaxDirectRuns while others were queued.
    if (next != nullptr && ready_head_ != nullptr && ++direct_runs > kMaxDirectRuns) {
      push_ready(next);
      next = nullptr;
    }
    if (next == nullptr) {
      direct_runs = 0;
      next = pop_ready();
    }
    // Ingest only to find work or to keep a short lookahead: ops ingested far ahead of execution
    // only grow the op pool (cold memory) while the preallocated ring holds them just as well.
    bool ingested = false;
    if (next == nullptr || ingested_seq_ - completed_count_ < kLookaheadOps) {
      ingested = ingest();
      if (next == nullptr) next = pop_ready();
    }
    publish_ready();
    const bool more_ready = ready_size_ != 0;
    sched_lock_.unlock();
    done = nullptr;

    if (next != nullptr) {
      searching_add(-1);
      searching = false;
    }
    if (completed || ingested || next != nullptr) {
      // Pairs with the increments in frontend_wait() and idle_wait(): no lost wake-up.
      std::atomic_thread_fence(std::memory_order_seq_cst);
      if ((completed || ingested) && frontend_waiters_.load(std::memory_order_acquire) != 0 &&
          reached(wait_kind_.load(std::memory_order_relaxed),
                  wait_buffer_.load(std::memory_order_relaxed),
                  wait_target_.load(std::memory_order_relaxed))) {
        done_epoch_.fetch_add(1, std::memory_order_seq_cst);
        done_epoch_.notify_all();
      }
      // About to be busy: hand leftover work to a parked worker if nobody else is searching.
      // (sleeping_workers_ first: the tail is a cross-core miss while the frontend pushes.)
      if (next != nullptr && sleeping_workers_.load(std::memory_order_relaxed) != 0 &&
          (more_ready || tail_pub_.load(std::memory_order_relaxed) !=
                             head_pub_.load(std::memory_order_relaxed))) {
        maybe_wake_worker();
      }
    }
    if (next != nullptr) {
      backoff_ns = 0;
      run(next);
      done = next;
      continue;
    }
    backoff_ns = ingested ? std::clamp(backoff_ns * 2, kMinBackoffNs, kMaxBackoffNs) : 0;
    if (!idle_wait(index, backoff_ns)) return;
  }
}

bool AsyncEngine::Impl::idle_wait(int index, std::int64_t backoff_ns) {
  // How long a polite spinner leaves handed-off work to the worker it woke (futex wake-up
  // latency here is ~5-20 us).
  constexpr std::int64_t kHandOffWaitNs = 50'000;
  auto any_work = [&] { return has_work() || stop_.load(std::memory_order_relaxed); };
  auto ready_work = [&] {
    return ready_count_.load(std::memory_order_acquire) != 0 ||
           stop_.load(std::memory_order_relaxed);
  };
  // True if this worker shares the frontend's CPU and cannot leave it: it moves away instead
  // (at most once per idle spell) when there is a CPU for every worker besides the frontend's.
  bool moved = false;
  auto stuck_on_frontend_cpu = [&] {
    const int frontend_cpu = frontend_cpu_.load(std::memory_order_relaxed);
    if (frontend_cpu < 0 || current_cpu() != frontend_cpu) return false;
    if (moved || workers_ >= cpu_count_) return true;
    move_to_spread_cpu(frontend_cpu, index);
    moved = true;
    return false;
  };
  for (;;) {
    // One idle worker spins; a "polite" one (on the frontend's CPU) yields every round so the
    // frontend keeps its CPU, and gives the role up to an idle worker on another CPU.
    const bool polite = spin_ns_ > 0 && stuck_on_frontend_cpu();
    const std::uint32_t role = polite ? kPoliteSpinner : kSpinner;
    std::uint32_t holder = spinner_.load(std::memory_order_relaxed);
    if (spin_ns_ > 0 && (holder == kNoSpinner || (holder == kPoliteSpinner && !polite)) &&
        spinner_.compare_exchange_strong(holder, role, std::memory_order_acquire)) {
      bool found = false;
      bool in_backoff = backoff_ns > 0;
      const std::int64_t start = now_ns();
      for (std::uint32_t round = 1;; ++round) {
        if (in_backoff ? ready_work() : any_work()) {
          found = true;
          break;
        }
        if (polite) {
          if (spinner_.load(std::memory_order_relaxed) != kPoliteSpinner) break;  // taken over
        } else if (round % kCheckRounds != 0) {
          cpu_relax();
          continue;
        } else if (stuck_on_frontend_cpu()) {
          break;  // park, so that a worker elsewhere can take the role
        }
        const std::int64_t elapsed = now_ns() - start;
        if (elapsed >= spin_ns_) break;
        in_backoff = in_backoff && elapsed < backoff_ns;
        std::this_thread::yield();
      }
      std::uint32_t mine = role;
      spinner_.compare_exchange_strong(mine, kNoSpinner, std::memory_order_release);
      // A polite spinner hands work to a parked worker (which sits on another CPU) and yields
      // until that one has taken it, then parks; it runs the work itself only when no other
      // worker is parked, or the woken one is slow to take it.
      if (found && polite && !stop_.load(std::memory_order_relaxed) &&
          sleeping_workers_.load(std::memory_order_seq_cst) != 0) {
        work_epoch_.fetch_add(1, std::memory_order_seq_cst);
        work_epoch_.notify_one();
        const std::int64_t handed = now_ns();
        while (has_work() && !stop_.load(std::memory_order_relaxed) &&
               now_ns() - handed < kHandOffWaitNs) {
          std::this_thread::yield();
        }
      } else if (found) {
        return !stopping();
      }
    }
    // Stop searching before announcing the park: a pusher that sees this worker asleep must also
    // see that nobody searches, or it would skip the wake-up. The re-check after announcing is
    // what makes a wake-up impossible to lose.
    const std::uint32_t epoch = work_epoch_.load(std::memory_order_seq_cst);
    searching_add(-1);
    sleeping_workers_.fetch_add(1, std::memory_order_seq_cst);
    park_barrier();
    if (!any_work()) {
      worker_cpu_[index].store(-1, std::memory_order_relaxed);
      work_epoch_.wait(epoch, std::memory_order_seq_cst);
      settle_after_wake(index);
    }
    sleeping_workers_.fetch_sub(1, std::memory_order_seq_cst);
    searching_add(1);
    if (any_work()) return !stopping();
    backoff_ns = 0;
  }
}

void AsyncEngine::Impl::settle_after_wake(int index) {
  int cpu = current_cpu();
  if (cpu_count_ >= 2 && cpu >= 0 && cpu < 64) {
    std::uint64_t taken = 0;
    const int frontend_cpu = frontend_cpu_.load(std::memory_order_relaxed);
    if (frontend_cpu >= 0 && frontend_cpu < 64) taken |= std::uint64_t{1} << frontend_cpu;
    for (int i = 0; i < workers_; ++i) {
      const int c = i == index ? -1 : worker_cpu_[i].load(std::memory_order_relaxed);
      if (c >= 0 && c < 64) taken |= std::uint64_t{1} << c;
    }
    if ((taken & (std::uint64_t{1} << cpu)) != 0) {
      const int target = free_cpu(taken);
      if (target >= 0) {
        move_to_cpu(target);
        cpu = target;
      }
    }
  }
  worker_cpu_[index].store(cpu, std::memory_order_relaxed);
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

bool AsyncEngine::Impl::ingest() noexcept {
  if (head_ == cached_tail_) {
    cached_tail_ = tail_pub_.load(std::memory_order_acquire);
    if (head_ == cached_tail_) return false;
  }
  for (int n = 0; n < kIngestBatch && head_ != cached_tail_;) {
    const std::uint64_t pos = head_ & kRingMask;
    if (ring_[pos] == 0) {  // wrap marker
      head_ += kRingWords - pos;
      continue;
    }
    const std::uint64_t counts = ring_[pos + 2];
    const std::uint64_t ids = (counts >> 32) + (counts & 0xffffffffu);
    ingest_record(pos);
    head_ += kRecordHeaderWords + (ids + 1) / 2;
    ++n;
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

  // Distinct buffers; one both read and written (or listed twice) counts once, as a write if any.
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
    for (std::uint32_t k = 0; k < n; ++k) {
      dedup_scratch_.push_back(Entry{op, nullptr, id_at(k), k >= n_reads});
    }
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
    VarState& v = var(e.buffer);
    const bool granted = e.write ? (!v.active_write && v.active_reads == 0 && v.head == nullptr)
                                 : (!v.active_write && v.head == nullptr);
    if (granted) {
      if (e.write) {
        v.active_write = true;
      } else {
        ++v.active_reads;
      }
    } else {
      if (v.tail != nullptr) {
        v.tail->next = &e;
      } else {
        v.head = &e;
      }
      v.tail = &e;
      ++op->pending;
    }
  }
  if (op->pending == 0) push_ready(op);
}

void AsyncEngine::Impl::grant(VarState& v, Op*& first_ready) {
  while (Entry* h = v.head) {
    if (h->write ? (v.active_write || v.active_reads != 0) : v.active_write) return;
    v.head = h->next;
    if (v.head == nullptr) v.tail = nullptr;
    h->next = nullptr;
    if (h->write) {
      v.active_write = true;
      release(h->op, first_ready);
      return;
    }
    ++v.active_reads;
    release(h->op, first_ready);
  }
}

Op* AsyncEngine::Impl::complete(Op* op) {
  Op* first_ready = nullptr;
  for (std::uint32_t i = 0; i < op->count; ++i) {
    const Entry& e = op->entries[i];
    VarState& v = var(e.buffer);
    if (e.write) {
      v.active_write = false;
      done_write_seq(e.buffer).store(op->seq, std::memory_order_release);
      grant(v, first_ready);
    } else if (--v.active_reads == 0) {
      grant(v, first_ready);
    }
  }
  completed_.store(++completed_count_, std::memory_order_release);
  free_op(op);
  return first_ready;
}

void AsyncEngine::Impl::push_ready(Op* op) {
  op->next = nullptr;
  if (ready_tail_ != nullptr) {
    ready_tail_->next = op;
  } else {
    ready_head_ = op;
  }
  ready_tail_ = op;
  ++ready_size_;
}

Op* AsyncEngine::Impl::pop_ready() {
  Op* op = ready_head_;
  if (op == nullptr) return nullptr;
  ready_head_ = op->next;
  if (ready_head_ == nullptr) ready_tail_ = nullptr;
  --ready_size_;
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
  // completed_ first: completed <= pushed at every instant, so the difference never underflows.
  const std::uint64_t completed = impl_->completed_.load(std::memory_order_acquire);
  const std::uint64_t pushed = impl_->pushed_.load(std::memory_order_acquire);
  return static_cast<std::size_t>(pushed - completed);
}

std::size_t AsyncEngine::peak_outstanding_ops() const {
  return static_cast<std::size_t>(impl_->peak_pub_.load(std::memory_order_relaxed));
}

int AsyncEngine::workers() const { return impl_->workers_; }

}  // namespace pairbench::kernels
