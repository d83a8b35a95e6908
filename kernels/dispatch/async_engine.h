// CPU asynchronous execution engine of the kind d2l §13.2 describes (MXNet's engine):
// a frontend that enqueues ops and returns at once, a backend of worker threads that runs
// them. Ops declare the buffers they read and write; the engine orders dependent ops
// (read-after-write, write-after-read, write-after-write) and runs independent ones in parallel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>

namespace pairbench::kernels {

// A buffer tag: the engine tracks dependencies per tag, never touches the data itself.
using BufferId = std::uint32_t;

// An op is a plain function pointer plus a context pointer: no allocation per op.
// The context must outlive the op (until a wait covering it returns).
using OpFn = void (*)(void* ctx);

struct AsyncEngineOptions {
  int workers = 1;                 // backend threads (>= 1)
  std::size_t max_queued_ops = 0;  // back-pressure bound on not-yet-completed ops; 0 = unbounded
  // How long an idle worker or a waiting frontend spins before it parks (futex), in ns.
  // Spinning is what keeps a synchronous round trip in the microseconds; parking frees the core.
  std::int64_t spin_ns = 50'000;
};

class AsyncEngine {
 public:
  explicit AsyncEngine(AsyncEngineOptions options = {});
  // Runs every op already enqueued, then joins the workers (shutdown with work queued loses nothing).
  ~AsyncEngine();
  AsyncEngine(const AsyncEngine&) = delete;
  AsyncEngine& operator=(const AsyncEngine&) = delete;

  // A fresh buffer tag. Thread-safe.
  BufferId new_buffer();

  // Enqueues fn(ctx); returns at once, or blocks while max_queued_ops ops are outstanding.
  // Called from one frontend thread at a time.
  void push(OpFn fn, void* ctx, std::span<const BufferId> reads, std::span<const BufferId> writes);
  void push(OpFn fn, void* ctx, std::initializer_list<BufferId> reads,
            std::initializer_list<BufferId> writes) {
    push(fn, ctx, std::span<const BufferId>(reads.begin(), reads.size()),
         std::span<const BufferId>(writes.begin(), writes.size()));
  }

  // Blocks until every op enqueued so far that writes `buffer` has completed (MXNet wait_to_read).
  void wait_for(BufferId buffer);
  // Blocks until every op enqueued so far has completed (MXNet waitall).
  void wait_all();

  // Ops enqueued but not yet completed, now and at most since construction (for C4).
  std::size_t outstanding_ops() const;
  std::size_t peak_outstanding_ops() const;
  int workers() const;

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace pairbench::kernels
