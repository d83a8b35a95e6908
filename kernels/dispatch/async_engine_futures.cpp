// AsyncEngine frontend, the waiting side: wait_for (a buffer's writers done) and wait_all, each
// spinning then parking until the workers' progress reaches its target, then rethrowing the
// first exception an op threw.
#include "kernels/dispatch/async_engine_impl.h"

namespace pairbench::kernels {

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

// ---- public API ----

void AsyncEngine::wait_for(BufferId buffer) { impl_->wait_for(buffer); }

void AsyncEngine::wait_all() { impl_->wait_all(); }

}  // namespace pairbench::kernels
