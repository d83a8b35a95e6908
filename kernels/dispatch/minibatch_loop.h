// The workload of d2l §13.2.4 ("an unbounded queue costs memory"): a training loop whose
// frontend makes one input tensor per minibatch and enqueues a step that consumes it. The
// tensor stays alive until its step has run, so the memory held is the queue depth times the
// tensor size: with no bound the frontend runs ahead of the backend and memory grows with the
// number of batches; a bounded queue (or a wait per minibatch) caps it.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "kernels/dispatch/async_engine.h"

namespace pairbench::kernels {

struct MinibatchLoopOptions {
  std::int64_t batches = 256;
  std::size_t tensor_bytes = 65536;  // one minibatch's input, a multiple of 8
  std::int64_t step_ns = 500'000;    // the step's duration on the backend (reads the tensor, then works)
  bool wait_each_batch = false;      // d2l's advice: synchronise once per minibatch
};

struct MinibatchLoopStats {
  std::int64_t steps_run = 0;            // steps that ran (must equal batches)
  std::int64_t bad_tensors = 0;          // steps whose input tensor did not hold what the frontend wrote
  std::int64_t peak_live_bytes = 0;      // most input-tensor bytes alive at once (exact: counted at allocation)
  std::int64_t live_bytes_after = 0;     // bytes still alive after the final wait (must be 0)
  std::size_t peak_outstanding_ops = 0;  // the engine's own count (sampled; exact when bounded)
};

// Runs one pass of the loop on `engine` (whose max_queued_ops sets the bound) and waits for it
// to finish. `seed` varies the tensors' contents. Frontend-thread only, like AsyncEngine::push.
// Throws std::invalid_argument for batches < 0, tensor_bytes not a positive multiple of 8, or
// step_ns < 0.
MinibatchLoopStats run_minibatch_loop(AsyncEngine& engine, const MinibatchLoopOptions& options, std::uint64_t seed);

}  // namespace pairbench::kernels
