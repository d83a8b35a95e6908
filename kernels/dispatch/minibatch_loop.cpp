#include "kernels/dispatch/minibatch_loop.h"

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>

namespace pairbench::kernels {
namespace {

// Word i of batch b's tensor. Cheap to write and to check; differs between batches and seeds.
inline std::uint64_t word(std::uint64_t seed, std::int64_t batch, std::size_t i) {
  return (seed ^ (static_cast<std::uint64_t>(batch) * 0x9E3779B97F4A7C15ull)) + i;
}

struct LoopState {
  std::atomic<std::int64_t> live_bytes{0};
  std::atomic<std::int64_t> steps_run{0};
  std::atomic<std::int64_t> bad_tensors{0};
};

struct Step {
  LoopState* loop = nullptr;
  std::uint64_t* tensor = nullptr;  // owned by the step from push until it runs
  std::size_t words = 0;
  std::uint64_t seed = 0;
  std::int64_t batch = 0;
  std::int64_t step_ns = 0;
};

// The backend's step: read every word of the input (and check it), work until step_ns has
// passed, then free the input, as a framework frees a temporary once its last reader has run.
void step_op(void* ctx) {
  auto* s = static_cast<Step*>(ctx);
  const auto start = std::chrono::steady_clock::now();
  bool good = true;
  for (std::size_t i = 0; i < s->words; ++i) good &= s->tensor[i] == word(s->seed, s->batch, i);
  if (!good) s->loop->bad_tensors.fetch_add(1, std::memory_order_relaxed);
  const auto until = start + std::chrono::nanoseconds(s->step_ns);
  while (std::chrono::steady_clock::now() < until) {
  }
  std::free(s->tensor);
  s->tensor = nullptr;
  s->loop->live_bytes.fetch_sub(static_cast<std::int64_t>(s->words * 8), std::memory_order_relaxed);
  s->loop->steps_run.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

MinibatchLoopStats run_minibatch_loop(AsyncEngine& engine, const MinibatchLoopOptions& o, std::uint64_t seed) {
  if (o.batches < 0) throw std::invalid_argument("minibatch loop: batches must be >= 0");
  if (o.tensor_bytes == 0 || o.tensor_bytes % 8 != 0) {
    throw std::invalid_argument("minibatch loop: tensor_bytes must be a positive multiple of 8");
  }
  if (o.step_ns < 0) throw std::invalid_argument("minibatch loop: step_ns must be >= 0");
  LoopState loop;
  std::vector<Step> steps(static_cast<std::size_t>(o.batches));  // contexts outlive their ops
  const BufferId model = engine.new_buffer();                    // every step updates the model: steps run in order
  const std::size_t words = o.tensor_bytes / 8;
  std::int64_t peak = 0;
  for (std::int64_t b = 0; b < o.batches; ++b) {
    // The frontend makes the minibatch: a fresh tensor, written in full (a loader's output).
    auto* tensor = static_cast<std::uint64_t*>(std::malloc(o.tensor_bytes));
    if (tensor == nullptr) {
      engine.wait_all();
      throw std::bad_alloc();
    }
    for (std::size_t i = 0; i < words; ++i) tensor[i] = word(seed, b, i);
    // Only the frontend adds, so its own running maximum is the exact peak.
    const std::int64_t live =
        loop.live_bytes.fetch_add(static_cast<std::int64_t>(o.tensor_bytes), std::memory_order_relaxed) +
        static_cast<std::int64_t>(o.tensor_bytes);
    if (live > peak) peak = live;
    Step& s = steps[static_cast<std::size_t>(b)];
    s = Step{.loop = &loop, .tensor = tensor, .words = words, .seed = seed, .batch = b, .step_ns = o.step_ns};
    engine.push(step_op, &s, {}, {model});
    if (o.wait_each_batch) engine.wait_for(model);
  }
  engine.wait_all();
  return MinibatchLoopStats{.steps_run = loop.steps_run.load(),
                            .bad_tensors = loop.bad_tensors.load(),
                            .peak_live_bytes = peak,
                            .live_bytes_after = loop.live_bytes.load(),
                            .peak_outstanding_ops = engine.peak_outstanding_ops()};
}

}  // namespace pairbench::kernels
