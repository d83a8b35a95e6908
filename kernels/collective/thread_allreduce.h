// comm.allreduce (C9), threads analogue: P participant threads, each owning a float buffer of N
// "gradients", sum-all-reduced in place either through participant 0 (DataParallel's shape:
// gather to one, reduce there, broadcast back) or as a ring (DistributedDataParallel's NCCL
// all-reduce: reduce-scatter then all-gather, every participant reducing 1/P of the buffer).
#pragma once

#include <barrier>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "kernels/common/pages.h"
#include "kernels/common/rng.h"

namespace pairbench::kernels::collective {

enum class Algorithm {
  kGatherBroadcast,  // participant 0 sums every buffer into its own; then every other participant
                     // copies participant 0's buffer: all reduction work on one thread
  kRing,             // P-1 reduce-scatter steps then P-1 all-gather steps over P chunks, a barrier
                     // after each: every participant adds and copies 2(P-1)/P of a buffer
};

Algorithm algorithm_from_name(const std::string& name);  // "gather_broadcast" | "ring"; throws std::invalid_argument
const char* algorithm_name(Algorithm a);

// [begin, end) of chunk c of n elements split into `chunks` nearly equal parts (some empty when
// n < chunks), rounded to whole 64-byte lines where n allows.
std::pair<std::size_t, std::size_t> chunk_range(std::size_t n, int c, int chunks);

// Test and bench inputs ("gradients"): participant q's element i is a small integer in
// [-1000, 1000] drawn from the counter-based stream named by seed, so any order of summation gives
// the exact sum (|sum| <= 1000 P stays far below 2^24), and the reference needs no copies.
void fill_gradients(std::span<float> out, std::uint64_t seed, int participant);
// out[i] = the sum over participants 0..participants-1 of their element i (exact).
void reference_sum(std::span<float> out, std::uint64_t seed, int participants);
// Index of the first element where a and b differ bitwise, or a.size() (sizes must match).
std::size_t first_difference(std::span<const float> a, std::span<const float> b);
using ::pairbench::kernels::fresh_seed;  // kernels/common/rng.h

// A persistent team of P threads (the caller of run() is participant 0, P-1 threads are started
// once) and P buffers of N floats, each first-touched by its owner (on a NUMA host, its own node).
class ThreadAllReduce {
 public:
  ThreadAllReduce(int participants, std::size_t elements);  // participants >= 1; throws std::invalid_argument
  ~ThreadAllReduce();
  ThreadAllReduce(const ThreadAllReduce&) = delete;
  ThreadAllReduce& operator=(const ThreadAllReduce&) = delete;

  int participants() const { return participants_; }
  std::size_t elements() const { return elements_; }
  std::span<float> buffer(int participant);  // valid until destruction; not to be used during run()

  // Leaves the element-wise sum of all P buffers in every buffer. Blocks until every participant
  // has finished. Not reentrant: one run at a time, from one thread.
  void run(Algorithm algorithm);

 private:
  void work(int me);
  void gather_broadcast(int me);
  void ring(int me);

  int participants_;
  std::size_t elements_;
  // Each participant's buffer: past malloc's mapping threshold on one NUMA node a PageBuffer
  // (kernels/common/pages.h: reused in a shared process), else from the heap.
  std::vector<std::unique_ptr<float[]>> heap_;
  std::vector<PageBuffer> pages_;
  std::vector<float*> buffers_;
  std::barrier<> step_;               // every phase boundary: start, each ring step, done
  Algorithm job_ = Algorithm::kRing;  // written before the start barrier, read after it
  bool first_touch_ = false;          // the constructor's job: owners write their own pages
  bool stop_ = false;
  std::vector<std::thread> helpers_;
};

}  // namespace pairbench::kernels::collective
