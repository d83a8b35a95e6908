// CPU allocator workloads typical of a training host: tensor-sized buffers, the data-loader
// hand-off (workers allocate, the main thread frees), small-object churn and a fragmentation
// trace with interleaved lifetimes. Each checks itself: every object's pages are written and read
// back before it is freed, and every allocation is counted against its free. No timing here.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace pairbench::kernels::alloc {

// splitmix64: the value written at word `j` of object `id` under `seed`.
std::uint64_t pattern_word(std::uint64_t seed, std::uint64_t id, std::uint64_t j);

// ---- Tensor-sized buffers ----------------------------------------------------------------------
// One step: malloc(bytes) (bytes >= 8), write one 64-bit word into every page the buffer spans,
// read them all back, free. Returns the sum of the words read. Throws std::bad_alloc.
std::uint64_t tensor_buffer_step(std::size_t bytes, std::uint64_t seed);
// What tensor_buffer_step returns when every page kept its word.
std::uint64_t tensor_buffer_expected(std::size_t bytes, std::uint64_t seed);

// ---- Data loader -------------------------------------------------------------------------------
struct LoaderOptions {
  int workers = 2;
  int samples_per_batch = 32;
  std::size_t sample_bytes = 150528;  // one 224x224x3 uint8 image
  int queue_batches = 4;              // bounded hand-off queue, as a prefetch depth
};

struct LoaderStats {
  std::int64_t batches = 0;      // received, checked and freed by the calling thread
  std::int64_t allocations = 0;  // all by the workers
  std::int64_t frees = 0;        // samples by the workers, batches by the calling thread
  std::int64_t bad_batches = 0;  // batches whose contents did not match their index
};

// A pool of persistent worker threads. Per batch a worker allocates `samples_per_batch` samples
// and writes every page of each, allocates the collated batch and copies the samples' words into
// it, frees the samples and queues the batch; the calling thread checks every page of the batch
// and frees it (a cross-thread free).
class DataLoader {
 public:
  explicit DataLoader(const LoaderOptions& options);  // starts the workers
  ~DataLoader();                                      // stops and joins them; frees queued batches
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Blocks until `batches` batches have been produced, checked and freed. One caller at a time.
  LoaderStats run(std::int64_t batches, std::uint64_t seed);

 private:
  struct Batch {
    void* data;
    std::int64_t index;
    std::uint64_t seed;
  };
  void worker_loop();
  Batch produce(std::int64_t index, std::uint64_t seed);
  bool check_and_free(const Batch& batch);

  LoaderOptions options_;
  std::size_t words_per_sample_;  // one per page, plus the last word
  std::mutex mutex_;
  std::condition_variable work_cv_, ready_cv_, space_cv_;
  std::deque<Batch> queue_;
  std::int64_t next_index_ = 0;
  std::int64_t target_index_ = 0;
  std::uint64_t seed_ = 0;
  bool stop_ = false;
  std::atomic<std::int64_t> allocations_{0};
  std::atomic<std::int64_t> frees_{0};
  std::vector<std::thread> threads_;
};

// ---- Small-object churn ------------------------------------------------------------------------
struct ChurnOptions {
  int threads = 1;
  int live_objects_per_thread = 4096;  // slots per thread; each op replaces the object in one
  std::size_t min_bytes = 16;          // >= 16
  std::size_t max_bytes = 512;
  std::uint64_t seed = 1;
};

struct ChurnStats {
  std::int64_t allocations = 0;
  std::int64_t frees = 0;
  std::int64_t bad_objects = 0;  // objects whose tags changed while they were live
};

// Per thread a fixed pseudo-random sequence of (slot, size); one op frees the object in the slot
// (after checking the tags at both of its ends) and operator-new's a fresh one, tagged at both
// ends. Thread 0 is the calling thread; the others are persistent helpers.
class SmallObjectChurn {
 public:
  explicit SmallObjectChurn(const ChurnOptions& options);
  ~SmallObjectChurn();  // drains and joins
  SmallObjectChurn(const SmallObjectChurn&) = delete;
  SmallObjectChurn& operator=(const SmallObjectChurn&) = delete;

  // Blocks until every thread has done `ops_per_thread` ops. Returns the totals so far.
  ChurnStats run(std::int64_t ops_per_thread);
  // Frees (and checks) every live object; afterwards allocations == frees. Returns the totals.
  ChurnStats drain();
  int threads() const { return options_.threads; }

 private:
  struct Op {
    std::uint32_t slot;
    std::uint32_t bytes;
  };
  struct Object {
    void* p = nullptr;
    std::uint32_t bytes = 0;
    std::uint64_t tag = 0;
  };
  struct alignas(64) Thread {
    std::vector<Op> ops;
    std::vector<Object> slots;
    std::size_t cursor = 0;
    std::uint64_t next_tag = 0;
    ChurnStats stats;
  };
  void run_thread(Thread& t, std::int64_t ops);
  void helper_loop(int index);

  ChurnOptions options_;
  std::vector<std::unique_ptr<Thread>> state_;
  std::mutex mutex_;
  std::condition_variable start_cv_, done_cv_;
  std::uint64_t generation_ = 0;
  std::int64_t ops_per_thread_ = 0;
  int running_ = 0;
  bool stop_ = false;
  std::vector<std::thread> helpers_;
};

// ---- Fragmentation -----------------------------------------------------------------------------
struct FragmentationOptions {
  std::size_t phase_bytes = std::size_t{64} << 20;  // bytes requested in each phase
  int phases = 4;                                   // phase k: sizes log-uniform in [64*4^k, 64*4^(k+1)) bytes
  double survivor_fraction = 0.25;                  // objects that live until the end of the next phase
  int short_lifetime_max = 1000;                    // the others die within this many allocations
  std::uint64_t seed = 1;
};

struct FragmentationStats {
  std::int64_t allocations = 0;
  std::int64_t frees = 0;
  std::int64_t bad_objects = 0;
  std::size_t peak_live_bytes = 0;  // requested bytes live at once, as replayed
};

// A fixed allocation trace: sizes grow phase by phase while survivors of each phase stay live
// across the next, so freed small blocks sit between live ones when larger requests arrive.
class FragmentationTrace {
 public:
  explicit FragmentationTrace(const FragmentationOptions& options);
  std::size_t allocations() const { return sizes_.size(); }
  std::size_t peak_live_bytes() const { return peak_live_bytes_; }  // requested bytes
  std::size_t total_bytes() const { return total_bytes_; }
  // malloc's every object in order, writes one word per page, frees each at its death (checking
  // its words); everything is freed by the end. Blocks.
  FragmentationStats replay();

 private:
  std::uint64_t seed_;
  std::vector<std::uint32_t> sizes_;
  std::vector<std::uint32_t> free_order_;    // ids in the order they are freed
  std::vector<std::uint32_t> free_offsets_;  // before allocation i: free_order_[off[i], off[i+1]); i == n: at the end
  std::vector<void*> pointers_;              // scratch, allocated once here so replay() allocates only objects
  std::size_t peak_live_bytes_ = 0;
  std::size_t total_bytes_ = 0;
};

}  // namespace pairbench::kernels::alloc
