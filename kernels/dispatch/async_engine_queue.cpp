// AsyncEngine frontend, the queue side: buffer tags, and push, which writes one record into the
// single-producer ring (draining it into the scheduler itself when full) and wakes a worker.
#include "kernels/dispatch/async_engine_impl.h"

namespace pairbench::kernels {

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

void AsyncEngine::Impl::push(OpFn fn, void* ctx, std::span<const BufferId> reads, std::span<const BufferId> writes) {
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
  if (seq - fe_.cached_completed > fe_.peak &&
      (max_queued_ != 0 || fe_.completed_read_seq == 0 || seq - fe_.completed_read_seq >= kPeakSampleOps)) {
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

// ---- public API ----

BufferId AsyncEngine::new_buffer() { return impl_->new_buffer(); }

void AsyncEngine::push(OpFn fn, void* ctx, std::span<const BufferId> reads, std::span<const BufferId> writes) {
  impl_->push(fn, ctx, reads, writes);
}

std::size_t AsyncEngine::outstanding_ops() const {
  // completed_ first: completed <= pushed at every instant, so the difference never underflows.
  // Read from a worker, completed_ may advance and the frontend push again between the two loads,
  // which over-counts (above max_queued_ops); completed_ read again unchanged means the pushed_
  // read between saw it too, so the difference is one instant's count. Bounded retries: a worker
  // completing ops without pause keeps the last, upper-bound value.
  std::uint64_t completed = impl_->completed_.load(std::memory_order_acquire);
  std::uint64_t pushed = impl_->pushed_.load(std::memory_order_acquire);
  for (int tries = 0; tries < 64; ++tries) {
    const std::uint64_t again = impl_->completed_.load(std::memory_order_acquire);
    if (again == completed) break;
    completed = again;
    pushed = impl_->pushed_.load(std::memory_order_acquire);
  }
  return static_cast<std::size_t>(pushed - completed);
}

std::size_t AsyncEngine::peak_outstanding_ops() const {
  return static_cast<std::size_t>(impl_->peak_pub_.load(std::memory_order_relaxed));
}

}  // namespace pairbench::kernels
