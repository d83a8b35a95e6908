// AsyncEngine backend: the worker threads (start, placement on CPUs, spin-then-park idling,
// shutdown) and the dependency scheduler they run under its lock (ingest ring records, grant
// buffers, complete ops, the ready queue and op pool), in one file so the per-op pass inlines:
// the helpers marked inline are used only here, and inline lets GCC fold them into worker_main
// as it did when the engine was one file and they had internal linkage.
#include "kernels/dispatch/async_engine_impl.h"

#include "kernels/common/cpus.h"

namespace pairbench::kernels {
namespace {

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

}  // namespace

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
  for (std::uint32_t i = 0; i < kMaxChunks; ++i) chunk_dir_[i].store(nullptr, std::memory_order_relaxed);
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
        // A worker inherits its creator's mask: one CPU if the frontend is pinned, which would
        // leave the spreading below nowhere to go and every worker spinning on the frontend's CPU.
        allow_all_usable_cpus();
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
  for (std::uint32_t i = 0; i < kMaxChunks; ++i) delete chunk_dir_[i].load(std::memory_order_relaxed);
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
          reached(wait_kind_.load(std::memory_order_relaxed), wait_buffer_.load(std::memory_order_relaxed),
                  wait_target_.load(std::memory_order_relaxed))) {
        done_epoch_.fetch_add(1, std::memory_order_seq_cst);
        done_epoch_.notify_all();
      }
      // About to be busy: hand leftover work to a parked worker if nobody else is searching.
      // (sleeping_workers_ first: the tail is a cross-core miss while the frontend pushes.)
      if (next != nullptr && sleeping_workers_.load(std::memory_order_relaxed) != 0 &&
          (more_ready || tail_pub_.load(std::memory_order_relaxed) != head_pub_.load(std::memory_order_relaxed))) {
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
    return ready_count_.load(std::memory_order_acquire) != 0 || stop_.load(std::memory_order_relaxed);
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
        while (has_work() && !stop_.load(std::memory_order_relaxed) && now_ns() - handed < kHandOffWaitNs) {
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

inline void AsyncEngine::Impl::run(Op* op) {
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
  auto id_at = [&](std::uint32_t k) { return static_cast<BufferId>(id_words[k >> 1] >> ((k & 1) * 32)); };

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

inline Op* AsyncEngine::Impl::complete(Op* op) {
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

inline void AsyncEngine::Impl::push_ready(Op* op) {
  op->next = nullptr;
  if (ready_tail_ != nullptr) {
    ready_tail_->next = op;
  } else {
    ready_head_ = op;
  }
  ready_tail_ = op;
  ++ready_size_;
}

inline Op* AsyncEngine::Impl::pop_ready() {
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

int AsyncEngine::workers() const { return impl_->workers_; }

}  // namespace pairbench::kernels
