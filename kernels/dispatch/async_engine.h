// CPU asynchronous execution engine of the kind d2l §13.2 describes (MXNet's engine):
// a frontend that enqueues ops and returns at once, a backend of worker threads that runs
// them. Ops declare the buffers they read and write; the engine orders dependent ops
// (read-after-write, write-after-read, write-after-write) and runs independent ones in parallel.
//
// Threading: push, wait_for and wait_all are frontend calls, made from one thread at a time
// (that thread may change if the caller synchronises the hand-over). new_buffer and the
// counters may be called from any thread, ops included. An op must not call push or wait_*
// on its own engine.
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
  // Starts the workers; throws std::invalid_argument if options.workers < 1.
  explicit AsyncEngine(AsyncEngineOptions options = {});
  // Blocks until every op already enqueued has run, then joins the workers (shutdown with work
  // queued loses nothing). An exception not yet rethrown is dropped.
  ~AsyncEngine();
  AsyncEngine(const AsyncEngine&) = delete;
  AsyncEngine& operator=(const AsyncEngine&) = delete;

  // A fresh buffer tag. Thread-safe.
  BufferId new_buffer();

  // Enqueues fn(ctx); returns at once, or blocks while max_queued_ops ops are outstanding.
  // A buffer may appear in both lists or more than once; it then counts once, as a write if
  // listed as one. Throws std::out_of_range for a tag not made by new_buffer(),
  // std::invalid_argument for a null fn, std::length_error for more than ~64k tags in one op.
  // No allocation in steady state.
  void push(OpFn fn, void* ctx, std::span<const BufferId> reads, std::span<const BufferId> writes);
  void push(OpFn fn, void* ctx, std::initializer_list<BufferId> reads, std::initializer_list<BufferId> writes) {
    push(fn, ctx, std::span<const BufferId>(reads.begin(), reads.size()),
         std::span<const BufferId>(writes.begin(), writes.size()));
  }

  // Blocks until every op enqueued so far that writes `buffer` has completed (MXNet wait_to_read);
  // their writes are then visible to the caller. Does not wait for readers of `buffer`.
  // Errors: an op that throws still completes (its dependents run). The first exception
  // captured since the last rethrow is rethrown by the next wait_for or wait_all, after that
  // wait is satisfied, whichever buffer it names; later exceptions meanwhile are dropped.
  void wait_for(BufferId buffer);
  // Blocks until every op enqueued so far has completed (MXNet waitall). Rethrows as wait_for.
  void wait_all();

  // Ops enqueued but not yet completed, now and at most since construction (for C4). The peak
  // is sampled at pushes: with max_queued_ops > 0 it is exact (and <= max_queued_ops);
  // unbounded, it may trail the true peak by up to 15 ops (sampling every 16th push).
  std::size_t outstanding_ops() const;
  std::size_t peak_outstanding_ops() const;
  int workers() const;

 private:
  struct Impl;
  Impl* impl_;
};

}  // namespace pairbench::kernels
