// The loader: augmentation, batch slicing, the worker ring, the sequential reference, the checksum
// and the CPU consumer's linear layer.
#include "kernels/loader/pipeline.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>

namespace pairbench::kernels::loader {
namespace {

constexpr int kBlock = 8;  // consumer outputs per weight block (two SSE / one AVX register)

void* default_allocate(std::size_t bytes) { return ::operator new (bytes, std::align_val_t{64}); }
void default_deallocate(void* p) { ::operator delete (p, std::align_val_t{64}); }

}  // namespace

// ---- Augment ----
Augment::Augment(const DatasetSpec& data, int crop, std::vector<float> mean, std::vector<float> std)
    : channels_(data.channels),
      height_(data.height),
      width_(data.width),
      crop_(crop),
      mean_(std::move(mean)),
      std_(std::move(std)) {
  if (crop < 1 || crop > height_ || crop > width_) {
    throw std::invalid_argument("Augment: crop " + std::to_string(crop) + " does not fit the image");
  }
  if (static_cast<int>(mean_.size()) != channels_ || static_cast<int>(std_.size()) != channels_) {
    throw std::invalid_argument("Augment: one mean and one std per channel needed");
  }
  for (float s : std_) {
    if (!(s > 0)) throw std::invalid_argument("Augment: std must be > 0");
  }
  table_.resize(static_cast<std::size_t>(channels_) * 256);
  for (int c = 0; c < channels_; ++c) {
    for (int v = 0; v < 256; ++v) table_[c * 256 + v] = normalise(c, static_cast<std::uint8_t>(v));
  }
}

Augment Augment::imagenet(const DatasetSpec& data, int crop) {
  if (data.channels != 3) throw std::invalid_argument("Augment::imagenet: 3 channels needed");
  return Augment(data, crop, {0.485f, 0.456f, 0.406f}, {0.229f, 0.224f, 0.225f});
}

float Augment::normalise(int channel, std::uint8_t v) const {
  return (static_cast<float>(v) / 255.0f - mean_[channel]) / std_[channel];
}

CropFlip Augment::params(std::uint64_t seed, std::int64_t epoch, std::int64_t sample) const {
  const std::uint64_t h = splitmix64(seed ^ splitmix64(static_cast<std::uint64_t>(epoch) * 0x100000001B3ull ^
                                                       splitmix64(static_cast<std::uint64_t>(sample))));
  return {.y0 = static_cast<int>((h & 0xFFFF) % static_cast<std::uint64_t>(height_ - crop_ + 1)),
          .x0 = static_cast<int>(((h >> 16) & 0xFFFF) % static_cast<std::uint64_t>(width_ - crop_ + 1)),
          .flip = ((h >> 40) & 1) != 0};
}

void Augment::apply(std::span<const std::uint8_t> image, CropFlip p, float* out) const {
  for (int c = 0; c < channels_; ++c) {
    const float* table = table_.data() + c * 256;
    const std::uint8_t* plane = image.data() + static_cast<std::size_t>(c) * height_ * width_;
    for (int y = 0; y < crop_; ++y) {
      const std::uint8_t* src = plane + static_cast<std::size_t>(p.y0 + y) * width_ + p.x0;
      float* dst = out + (static_cast<std::size_t>(c) * crop_ + y) * crop_;
      if (p.flip) {
        for (int x = 0; x < crop_; ++x) dst[x] = table[src[crop_ - 1 - x]];
      } else {
        for (int x = 0; x < crop_; ++x) dst[x] = table[src[x]];
      }
    }
  }
}

void Augment::apply_reference(std::span<const std::uint8_t> image, CropFlip p, float* out) const {
  std::size_t i = 0;
  for (int c = 0; c < channels_; ++c) {
    for (int y = 0; y < crop_; ++y) {
      for (int x = 0; x < crop_; ++x) {
        const int sx = p.flip ? p.x0 + (crop_ - 1 - x) : p.x0 + x;
        const int sy = p.y0 + y;
        out[i++] = normalise(c, image[(static_cast<std::size_t>(c) * height_ + sy) * width_ + sx]);
      }
    }
  }
}

// ---- batches ----
std::int64_t batches_per_epoch(std::int64_t dataset_size, int batch_size, bool drop_last) {
  if (batch_size < 1) throw std::invalid_argument("batch_size must be >= 1");
  return drop_last ? dataset_size / batch_size : (dataset_size + batch_size - 1) / batch_size;
}

BatchSlice batch_slice(std::int64_t dataset_size, int batch_size, bool drop_last, std::int64_t index) {
  const std::int64_t per_epoch = batches_per_epoch(dataset_size, batch_size, drop_last);
  if (per_epoch == 0) throw std::invalid_argument("the dataset gives no batch at this batch size");
  if (index < 0) throw std::out_of_range("batch index < 0");
  const std::int64_t first = (index % per_epoch) * batch_size;
  return {.epoch = index / per_epoch,
          .first_sample = first,
          .samples = static_cast<int>(std::min<std::int64_t>(batch_size, dataset_size - first))};
}

// ---- DataLoader ----
DataLoader::DataLoader(const Dataset& data, const Augment& augment, LoaderOptions options)
    : data_(data), augment_(augment), options_(options) {
  if (options.workers < 0) throw std::invalid_argument("DataLoader: workers must be >= 0");
  if (options.prefetch_per_worker < 1) throw std::invalid_argument("DataLoader: prefetch_per_worker must be >= 1");
  if (loader::batches_per_epoch(data.size(), options.batch_size, options.drop_last) == 0) {
    throw std::invalid_argument("DataLoader: " + std::to_string(data.size()) + " samples give no batch of " +
                                std::to_string(options.batch_size));
  }
  if (options_.allocator.allocate == nullptr || options_.allocator.deallocate == nullptr) {
    options_.allocator = {default_allocate, default_deallocate};
  }
  batch_floats_ = static_cast<std::size_t>(options.batch_size) * augment.floats_per_sample();
  const std::size_t slots =
      options.workers == 0 ? 1 : static_cast<std::size_t>(options.workers) * options.prefetch_per_worker;
  slots_.resize(slots);
  try {
    for (Slot& s : slots_) {
      s.data = static_cast<float*>(options_.allocator.allocate(batch_floats_ * sizeof(float)));
      // First touch here, so page faults stay out of the stream; NaN, so an unwritten row shows.
      std::fill_n(s.data, batch_floats_, std::numeric_limits<float>::quiet_NaN());
      s.ids.assign(static_cast<std::size_t>(options.batch_size), -1);
    }
  } catch (...) {
    for (Slot& s : slots_) {
      if (s.data) options_.allocator.deallocate(s.data);
    }
    throw;
  }
  image_.resize(data.sample_bytes());
}

DataLoader::~DataLoader() {
  stop();
  for (Slot& s : slots_) options_.allocator.deallocate(s.data);
}

std::int64_t DataLoader::batches_per_epoch() const {
  return loader::batches_per_epoch(data_.size(), options_.batch_size, options_.drop_last);
}

void DataLoader::start(std::uint64_t seed, std::int64_t batches) {
  stop();
  if (batches < 0) throw std::invalid_argument("DataLoader::start: batches must be >= 0");
  seed_ = seed;
  total_ = batches;
  next_ = 0;
  outstanding_ = -1;
  for (std::size_t s = 0; s < slots_.size(); ++s) {
    slots_[s].ready = -1;
    slots_[s].allowed = static_cast<std::int64_t>(s);
    slots_[s].error = nullptr;
  }
  stopping_ = false;
  started_ = true;
  try {
    for (int w = 0; w < options_.workers; ++w) threads_.emplace_back(&DataLoader::worker_main, this, w);
  } catch (...) {
    stop();
    throw;
  }
}

void DataLoader::stop() {
  if (!started_) return;
  {
    std::lock_guard lock(mutex_);  // under the lock, so no worker misses the wake-up
    stopping_ = true;
  }
  slot_freed_.notify_all();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  started_ = false;
  outstanding_ = -1;
}

void DataLoader::produce(std::int64_t index, Slot& slot, std::vector<std::uint8_t>& image,
                         std::vector<std::uint8_t>& packed) {
  const BatchSlice slice = batch_slice(data_.size(), options_.batch_size, options_.drop_last, index);
  const std::size_t per_sample = augment_.floats_per_sample();
  for (int j = 0; j < slice.samples; ++j) {
    if (stopping_.load(std::memory_order_relaxed)) return;
    const std::int64_t sample = slice.first_sample + j;
    data_.read_sample(sample, image, packed);
    augment_.apply(image, augment_.params(seed_, slice.epoch, sample), slot.data + j * per_sample);
    slot.ids[j] = sample;
  }
}

void DataLoader::worker_main(int worker) {
  std::vector<std::uint8_t> image(data_.sample_bytes()), packed;
  const auto ring = static_cast<std::int64_t>(slots_.size());
  const std::int64_t step = options_.workers;
  for (std::int64_t g = worker; g < total_; g = (total_ - g > step) ? g + step : total_) {
    Slot& slot = slots_[g % ring];
    {
      std::unique_lock lock(mutex_);
      slot_freed_.wait(lock, [&] { return stopping_.load() || slot.allowed == g; });
      if (stopping_) return;
    }
    std::exception_ptr error;
    try {
      produce(g, slot, image, packed);
    } catch (...) {
      error = std::current_exception();
    }
    {
      std::lock_guard lock(mutex_);
      if (stopping_) return;  // possibly a half-written batch: nobody will read it
      slot.error = error;
      slot.ready = g;
    }
    slot_filled_.notify_one();  // only the consumer waits on it
  }
}

BatchView DataLoader::next() {
  if (!started_) throw std::logic_error("DataLoader::next: start() first (or the stream was stopped by an error)");
  const auto ring = static_cast<std::int64_t>(slots_.size());
  const auto t0 = std::chrono::steady_clock::now();
  if (outstanding_ >= 0 && options_.workers > 0) {  // the consumer is done with the previous batch
    {
      std::lock_guard lock(mutex_);
      slots_[outstanding_ % ring].allowed = outstanding_ + ring;
    }
    slot_freed_.notify_all();
  }
  outstanding_ = -1;
  if (next_ >= total_) return {};
  const std::int64_t g = next_;
  Slot& slot = slots_[g % ring];
  if (options_.workers == 0) {
    try {
      produce(g, slot, image_, packed_);
    } catch (...) {
      stop();
      throw;
    }
  } else {
    std::exception_ptr error;
    {
      std::unique_lock lock(mutex_);
      slot_filled_.wait(lock, [&] { return slot.ready == g; });
      error = slot.error;
    }
    if (error) {
      stop();
      std::rethrow_exception(error);
    }
  }
  stats_.idle_ns += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  const BatchSlice slice = batch_slice(data_.size(), options_.batch_size, options_.drop_last, g);
  outstanding_ = g;
  ++next_;
  ++stats_.batches;
  stats_.samples += slice.samples;
  for (int j = 0; j < slice.samples; ++j) stats_.compressed_bytes += data_.compressed_bytes(slot.ids[j]);
  return {.index = g,
          .slice = slice,
          .data = slot.data,
          .sample_ids = slot.ids.data(),
          .floats_per_sample = augment_.floats_per_sample()};
}

// ---- reference and checksum ----
BatchSlice reference_batch(const Dataset& data, const Augment& augment, int batch_size, bool drop_last,
                           std::uint64_t seed, std::int64_t index, std::vector<float>& out,
                           std::vector<std::int64_t>& ids) {
  const BatchSlice slice = batch_slice(data.size(), batch_size, drop_last, index);
  const std::size_t per_sample = augment.floats_per_sample();
  out.assign(slice.samples * per_sample, std::numeric_limits<float>::quiet_NaN());
  ids.assign(static_cast<std::size_t>(slice.samples), -1);
  std::vector<std::uint8_t> image(data.sample_bytes()), packed;
  for (int j = 0; j < slice.samples; ++j) {
    const std::int64_t sample = slice.first_sample + j;
    data.read_sample(sample, image, packed);
    augment.apply_reference(image, augment.params(seed, slice.epoch, sample), out.data() + j * per_sample);
    ids[j] = sample;
  }
  return slice;
}

std::uint64_t batch_checksum(std::span<const float> values) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    sum += splitmix64(static_cast<std::uint64_t>(std::bit_cast<std::uint32_t>(values[i])) ^
                      (static_cast<std::uint64_t>(i) << 32));
  }
  return sum;
}

// ---- the CPU consumer ----
std::vector<float> consumer_weights(std::size_t features, int outputs, std::uint64_t seed) {
  if (outputs < kBlock || outputs % kBlock != 0)
    throw std::invalid_argument("consumer outputs must be a multiple of 8");
  std::vector<float> w(features * static_cast<std::size_t>(outputs));
  for (std::size_t i = 0; i < w.size(); ++i) {
    w[i] = static_cast<float>(static_cast<int>(splitmix64(seed ^ splitmix64(i)) % 2048) - 1024) / 1024.0f;
  }
  return w;
}

CpuConsumer::CpuConsumer(std::size_t features, int outputs, std::uint64_t seed)
    : features_(features), outputs_(outputs), w_(consumer_weights(features, outputs, seed)) {}

double CpuConsumer::consume(const float* batch, int samples) {
  if (samples < 0) throw std::invalid_argument("CpuConsumer::consume: samples < 0");
  y_.resize(static_cast<std::size_t>(samples) * outputs_);
  last_samples_ = static_cast<std::size_t>(samples);
  double total = 0;
  for (int s = 0; s < samples; ++s) {
    const float* x = batch + static_cast<std::size_t>(s) * features_;
    for (int b = 0; b < outputs_ / kBlock; ++b) {
      const float* w = w_.data() + static_cast<std::size_t>(b) * features_ * kBlock;
      float acc[kBlock] = {};
      for (std::size_t k = 0; k < features_; ++k) {
        const float xk = x[k];
        for (int i = 0; i < kBlock; ++i) acc[i] += w[k * kBlock + i] * xk;
      }
      for (int i = 0; i < kBlock; ++i) {
        y_[static_cast<std::size_t>(s) * outputs_ + b * kBlock + i] = acc[i];
        total += acc[i];
      }
    }
  }
  return total;
}

}  // namespace pairbench::kernels::loader
