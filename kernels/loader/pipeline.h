// A DataLoader in PyTorch's model for the loader experiment (C5): workers = 0 loads each batch in
// the consumer's thread; workers = k >= 1 runs k threads that each read + decode + augment + collate
// whole batches (batch g goes to worker g % k), delivered in order through a bounded ring of batch
// buffers (prefetch_per_worker per worker). Also the sequential reference and the CPU consumer.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <limits>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "kernels/loader/dataset.h"

namespace pairbench::kernels::loader {

// Random crop + horizontal flip + per-channel normalisation to float32, (v/255 - mean[c]) / std[c].
struct CropFlip {
  int y0 = 0, x0 = 0;
  bool flip = false;
};

class Augment {
 public:
  // mean/std: one value per channel (throws std::invalid_argument otherwise, or for crop > image).
  Augment(const DatasetSpec& data, int crop, std::vector<float> mean, std::vector<float> std);
  // ImageNet's mean and std, 3 channels.
  static Augment imagenet(const DatasetSpec& data, int crop);

  int crop() const { return crop_; }
  std::size_t floats_per_sample() const { return static_cast<std::size_t>(channels_) * crop_ * crop_; }
  // The crop and flip of one sample, a function of (stream seed, epoch, sample) only: the same for
  // any worker count, as with a per-sample seeded transform.
  CropFlip params(std::uint64_t seed, std::int64_t epoch, std::int64_t sample) const;
  // The fast path the workers use: row loops, normalisation through a 256-entry table per channel.
  void apply(std::span<const std::uint8_t> image, CropFlip p, float* out) const;
  // The reference: per-pixel index arithmetic and the normalisation formula itself. Bit-identical
  // to apply() (the table is built from the same formula).
  void apply_reference(std::span<const std::uint8_t> image, CropFlip p, float* out) const;
  float normalise(int channel, std::uint8_t v) const;

 private:
  int channels_, height_, width_, crop_;
  std::vector<float> mean_, std_;
  std::vector<float> table_;  // [channels][256]
};

// Which samples batch `index` of a stream holds: sequential sampler (shuffle=False), epochs back
// to back; with drop_last = false the last batch of an epoch may be partial.
struct BatchSlice {
  std::int64_t epoch = 0;
  std::int64_t first_sample = 0;
  int samples = 0;
};
std::int64_t batches_per_epoch(std::int64_t dataset_size, int batch_size, bool drop_last);
BatchSlice batch_slice(std::int64_t dataset_size, int batch_size, bool drop_last, std::int64_t index);

// One delivered batch. Valid until the next call to next(), start(), stop() or the loader's end.
struct BatchView {
  std::int64_t index = -1;  // position in the stream: 0, 1, 2, ...
  BatchSlice slice;
  const float* data = nullptr;               // [slice.samples, channels, crop, crop]
  const std::int64_t* sample_ids = nullptr;  // the dataset index each row was loaded from
  std::size_t floats_per_sample = 0;
  explicit operator bool() const { return slice.samples > 0; }
  std::span<const float> values() const { return {data, slice.samples * floats_per_sample}; }
};

// Where batch buffers come from: nullptr = 64-byte aligned operator new. The CUDA consumer passes
// cudaHostAlloc'ed (pinned) memory so its H2D copies can be DMA'd directly.
struct HostAllocator {
  void* (*allocate)(std::size_t bytes) = nullptr;
  void (*deallocate)(void* p) = nullptr;
};

struct LoaderOptions {
  int workers = 0;  // 0: the consumer loads each batch itself
  int batch_size = 64;
  int prefetch_per_worker = 2;  // PyTorch's prefetch_factor
  bool drop_last = false;
  HostAllocator allocator;
};

// Accumulated over the loader's life, read by the consumer thread.
struct LoaderStats {
  std::int64_t batches = 0;  // delivered
  std::int64_t samples = 0;
  std::uint64_t compressed_bytes = 0;  // read from disk for the delivered samples
  // Consumer time inside next(): waiting for a worker (workers >= 1), or loading the batch itself
  // (workers = 0): time the consumer is not computing.
  double idle_ns = 0;
};

class DataLoader {
 public:
  static constexpr std::int64_t kEndless = std::numeric_limits<std::int64_t>::max();

  // Throws std::invalid_argument for workers < 0, batch_size < 1, prefetch < 1, or a dataset that
  // gives no batch. The dataset and augment must outlive the loader.
  DataLoader(const Dataset& data, const Augment& augment, LoaderOptions options);
  ~DataLoader();  // stop(): safe mid-epoch
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Begins the stream of `batches` batches (kEndless: until stop) with augmentations seeded by
  // `seed`; workers start producing at once. Stops a stream in flight first.
  void start(std::uint64_t seed, std::int64_t batches);
  // The next batch in order; blocks until it is ready. An empty view once the stream has ended.
  // A sample that fails to load rethrows its exception (CorruptSample names the sample) when its
  // batch is reached, after stopping the workers. Throws std::logic_error when not started.
  BatchView next();
  // Abandons the stream: workers finish the sample in hand, drop their batch and are joined.
  void stop();

  const LoaderStats& stats() const { return stats_; }
  const LoaderOptions& options() const { return options_; }
  std::int64_t batches_per_epoch() const;
  std::size_t batch_floats() const { return batch_floats_; }

 private:
  struct Slot {
    float* data = nullptr;
    std::vector<std::int64_t> ids;
    std::int64_t ready = -1;    // the batch the slot holds, once written
    std::int64_t allowed = -1;  // the batch that may be written into it next
    std::exception_ptr error;
  };
  void produce(std::int64_t index, Slot& slot, std::vector<std::uint8_t>& image, std::vector<std::uint8_t>& packed);
  void worker_main(int worker);

  const Dataset& data_;
  const Augment& augment_;
  LoaderOptions options_;
  std::size_t batch_floats_ = 0;
  std::vector<Slot> slots_;
  std::vector<std::thread> threads_;
  std::mutex mutex_;
  std::condition_variable slot_freed_, slot_filled_;
  std::atomic<bool> stopping_{false};
  bool started_ = false;
  std::uint64_t seed_ = 0;
  std::int64_t total_ = 0, next_ = 0, outstanding_ = -1;
  std::vector<std::uint8_t> image_, packed_;  // workers = 0: the consumer's own scratch
  LoaderStats stats_;
};

// The sequential reference of batch `index` of the stream `seed`: each sample read, decoded and
// transformed by Augment::apply_reference, one after another. `out` is resized to the batch's
// samples * floats_per_sample; `ids` to its samples. Returns the slice.
BatchSlice reference_batch(const Dataset& data, const Augment& augment, int batch_size, bool drop_last,
                           std::uint64_t seed, std::int64_t index, std::vector<float>& out,
                           std::vector<std::int64_t>& ids);

// Exact, order-independent and position-sensitive: sum over i of splitmix64(bits(x[i]) ^ (i << 32)),
// modulo 2^64. The CUDA consumer computes the same sum on the device.
std::uint64_t batch_checksum(std::span<const float> values);

// The consumer's fixed work: a linear layer y[s] = W x[s] with `outputs` outputs (a multiple of 8)
// per sample, W's entries multiples of 1/1024 in [-1, 1). Weights are stored in blocks of 8
// outputs, [outputs / 8][features][8], so each block streams contiguously.
std::vector<float> consumer_weights(std::size_t features, int outputs, std::uint64_t seed);

class CpuConsumer {
 public:
  CpuConsumer(std::size_t features, int outputs, std::uint64_t seed);
  // Computes y for every sample of the batch and returns the sum of all y (in double), so the
  // work cannot be optimised away. Outputs of the last batch stay in last_outputs() ([samples][outputs]).
  double consume(const float* batch, int samples);
  std::span<const float> last_outputs() const {
    return {y_.data(), last_samples_ * static_cast<std::size_t>(outputs_)};
  }
  const std::vector<float>& weights() const { return w_; }
  int outputs() const { return outputs_; }
  std::size_t features() const { return features_; }

 private:
  std::size_t features_;
  int outputs_;
  std::vector<float> w_, y_;
  std::size_t last_samples_ = 0;
};

}  // namespace pairbench::kernels::loader
