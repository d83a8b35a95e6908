// AsyncEngine's shared state (async_engine.h): the submission ring and the dependency scheduler's
// nodes and per-buffer queues, and the Impl every part works on. Split by role into
// async_engine_queue.cpp (frontend: buffers, push, ring), async_engine_workers.cpp (threads and
// the scheduler they run), async_engine_futures.cpp (waits and rethrown errors). Design: NOTES.md.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "kernels/dispatch/async_engine.h"
#include "kernels/dispatch/async_engine_barriers.h"

namespace pairbench::kernels {
namespace engine {

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

}  // namespace engine

using namespace engine;  // a private header: only the AsyncEngine parts include it

struct AsyncEngine::Impl {
  explicit Impl(AsyncEngineOptions options);
  ~Impl();

  BufferId new_buffer();
  void push(OpFn fn, void* ctx, std::span<const BufferId> reads, std::span<const BufferId> writes);
  void wait_for(BufferId buffer);
  void wait_all();
  // Blocks until all pushed ops completed, then joins the workers. Never throws op exceptions.
  void shutdown();

  BufferChunk& chunk(BufferId id) { return *chunk_dir_[id >> kChunkBits].load(std::memory_order_acquire); }
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
    if (workers_ > 1) searching_workers_.fetch_add(static_cast<std::uint32_t>(delta), std::memory_order_seq_cst);
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
  // Scheduler, all under sched_lock_. run, complete and the ready queue are
  // defined inline in async_engine_workers.cpp, the only file that calls them.
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

}  // namespace pairbench::kernels
