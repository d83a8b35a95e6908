// The loader experiment's kernels (C5): the on-disk dataset round trip and corruption, the
// augmentation against its per-pixel reference, batch slicing, the DataLoader against the
// sequential reference for every worker count and batch size (order, exactly-once, partial last
// batches), idle accounting, errors, shutdown mid-epoch, the checksum and the CPU consumer.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "kernels/loader/dataset.h"
#include "kernels/loader/pipeline.h"

namespace pairbench::kernels::loader {
namespace {

// Small and non-square, so crop offsets in y and x differ; 37 samples: no batch size divides it.
DatasetSpec small_spec() { return {.samples = 37, .channels = 3, .height = 12, .width = 16, .seed = fresh_seed()}; }

bool same_bits(std::span<const float> a, std::span<const float> b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (std::bit_cast<std::uint32_t>(a[i]) != std::bit_cast<std::uint32_t>(b[i])) return false;
  }
  return true;
}

void corrupt(const Dataset& data, std::int64_t sample) {
  const int fd = ::open(data.data_path().c_str(), O_WRONLY);
  ASSERT_GE(fd, 0);
  const std::size_t n = data.compressed_bytes(sample);
  std::vector<std::uint8_t> junk(n / 2, 0x5A);  // the middle half of the deflate stream
  ASSERT_EQ(::pwrite(fd, junk.data(), junk.size(), static_cast<off_t>(data.offset(sample) + n / 4)),
            static_cast<ssize_t>(junk.size()));
  ::close(fd);
}

TEST(LoaderDataset, RoundTripsEverySample) {
  const DatasetSpec spec = small_spec();
  Dataset data(spec);
  std::vector<std::uint8_t> expected(spec.sample_bytes()), got(spec.sample_bytes()), scratch;
  for (std::int64_t i = 0; i < spec.samples; ++i) {
    generate_image(spec, i, expected);
    std::fill(got.begin(), got.end(), 0xA5);
    data.read_sample(i, got, scratch);
    ASSERT_EQ(got, expected) << "sample " << i;
  }
  // Samples differ from one another, and another seed gives other images.
  std::vector<std::uint8_t> other(spec.sample_bytes());
  generate_image(spec, 1, other);
  generate_image(spec, 0, expected);
  EXPECT_NE(other, expected);
  DatasetSpec reseeded = spec;
  reseeded.seed = spec.seed + 1;
  generate_image(reseeded, 0, other);
  EXPECT_NE(other, expected);
  EXPECT_EQ(std::filesystem::file_size(data.data_path()), data.total_compressed_bytes());
  EXPECT_EQ(std::filesystem::file_size(data.index_path()),
            static_cast<std::uintmax_t>(spec.samples + 1) * sizeof(std::uint64_t));
}

TEST(LoaderDataset, ImagesCompressButAreNotConstant) {
  const DatasetSpec spec{.samples = 16, .seed = fresh_seed()};  // the experiment's 3x64x64
  Dataset data(spec);
  const double ratio = static_cast<double>(spec.sample_bytes() * spec.samples) / data.total_compressed_bytes();
  EXPECT_GT(ratio, 1.5) << "structured images should deflate";
  EXPECT_LT(ratio, 20.0) << "images should not be nearly constant";
}

TEST(LoaderDataset, EmptyDatasetAndBadIndexes) {
  DatasetSpec spec = small_spec();
  spec.samples = 0;
  Dataset empty(spec);
  EXPECT_EQ(empty.size(), 0);
  EXPECT_EQ(empty.total_compressed_bytes(), 0u);
  std::vector<std::uint8_t> out(spec.sample_bytes()), scratch;
  EXPECT_THROW(empty.read_sample(0, out, scratch), std::out_of_range);
  spec.samples = 3;
  Dataset data(spec);
  EXPECT_THROW(data.read_sample(3, out, scratch), std::out_of_range);
  EXPECT_THROW(data.read_sample(-1, out, scratch), std::out_of_range);
  std::vector<std::uint8_t> small(spec.sample_bytes() - 1);
  EXPECT_THROW(data.read_sample(0, small, scratch), std::invalid_argument);
  spec.height = 0;
  EXPECT_THROW(Dataset{spec}, std::invalid_argument);
}

TEST(LoaderDataset, TempDirIsRemoved) {
  std::filesystem::path dir;
  {
    Dataset data(small_spec());
    dir = data.data_path().parent_path();
    EXPECT_TRUE(std::filesystem::exists(data.data_path()));
  }
  EXPECT_FALSE(std::filesystem::exists(dir));
}

TEST(LoaderDataset, CorruptSampleNamesTheSample) {
  const DatasetSpec spec = small_spec();
  Dataset data(spec);
  corrupt(data, 5);
  std::vector<std::uint8_t> out(spec.sample_bytes()), scratch;
  data.read_sample(4, out, scratch);  // neighbours are intact
  data.read_sample(6, out, scratch);
  try {
    data.read_sample(5, out, scratch);
    FAIL() << "a corrupted sample decoded";
  } catch (const CorruptSample& e) {
    EXPECT_NE(std::string(e.what()).find("sample 5"), std::string::npos) << e.what();
  }
}

TEST(LoaderAugment, FastPathEqualsReferenceBitForBit) {
  const DatasetSpec spec = small_spec();
  std::vector<std::uint8_t> image(spec.sample_bytes());
  generate_image(spec, 3, image);
  for (int crop : {1, 7, 12}) {
    const Augment a = Augment::imagenet(spec, crop);
    std::vector<float> fast(a.floats_per_sample()), ref(a.floats_per_sample());
    for (int y0 : {0, spec.height - crop}) {
      for (int x0 : {0, 1, spec.width - crop}) {
        for (bool flip : {false, true}) {
          const CropFlip p{.y0 = y0, .x0 = x0, .flip = flip};
          std::fill(fast.begin(), fast.end(), NAN);
          a.apply(image, p, fast.data());
          a.apply_reference(image, p, ref.data());
          EXPECT_TRUE(same_bits(fast, ref)) << "crop " << crop << " y0 " << y0 << " x0 " << x0 << " flip " << flip;
        }
      }
    }
  }
}

TEST(LoaderAugment, CropFlipAndNormaliseByHand) {
  const DatasetSpec spec{.samples = 1, .channels = 3, .height = 4, .width = 5};
  std::vector<std::uint8_t> image(spec.sample_bytes());
  for (std::size_t i = 0; i < image.size(); ++i) image[i] = static_cast<std::uint8_t>(i * 3);
  const Augment a = Augment::imagenet(spec, 2);
  std::vector<float> out(a.floats_per_sample());
  a.apply(image, {.y0 = 1, .x0 = 2, .flip = true}, out.data());
  const double mean[3] = {0.485, 0.456, 0.406}, stdv[3] = {0.229, 0.224, 0.225};
  for (int c = 0; c < 3; ++c) {
    for (int y = 0; y < 2; ++y) {
      for (int x = 0; x < 2; ++x) {
        const int v = image[(c * 4 + 1 + y) * 5 + 2 + (1 - x)];
        EXPECT_NEAR(out[(c * 2 + y) * 2 + x], (v / 255.0 - mean[c]) / stdv[c], 1e-5) << c << y << x;
      }
    }
  }
  EXPECT_THROW(Augment::imagenet(spec, 5), std::invalid_argument);  // crop taller than the image
  EXPECT_THROW(Augment(spec, 2, {0.5f}, {0.5f, 0.5f, 0.5f}), std::invalid_argument);
  EXPECT_THROW(Augment(spec, 2, {0, 0, 0}, {1, 0, 1}), std::invalid_argument);
}

TEST(LoaderAugment, ParamsStayInRangeAndVary) {
  const DatasetSpec spec = small_spec();
  const Augment a = Augment::imagenet(spec, 9);
  int flips = 0, distinct = 0;
  CropFlip prev = a.params(1, 0, 0);
  for (std::int64_t s = 0; s < 200; ++s) {
    const CropFlip p = a.params(1, 0, s);
    EXPECT_GE(p.y0, 0);
    EXPECT_LE(p.y0, spec.height - 9);
    EXPECT_GE(p.x0, 0);
    EXPECT_LE(p.x0, spec.width - 9);
    flips += p.flip;
    distinct += (p.y0 != prev.y0 || p.x0 != prev.x0);
    prev = p;
    const CropFlip again = a.params(1, 0, s);
    EXPECT_TRUE(again.y0 == p.y0 && again.x0 == p.x0 && again.flip == p.flip);
  }
  EXPECT_GT(flips, 50);
  EXPECT_LT(flips, 150);
  EXPECT_GT(distinct, 100);
  int differ = 0;  // another epoch or seed draws other crops
  for (std::int64_t s = 0; s < 50; ++s) {
    const CropFlip p = a.params(1, 0, s), q = a.params(1, 1, s), r = a.params(2, 0, s);
    differ += (p.y0 != q.y0 || p.x0 != q.x0 || p.flip != q.flip) + (p.y0 != r.y0 || p.x0 != r.x0 || p.flip != r.flip);
  }
  EXPECT_GT(differ, 60);
}

TEST(LoaderBatches, SlicesCoverEachEpoch) {
  EXPECT_EQ(batches_per_epoch(10, 4, false), 3);
  EXPECT_EQ(batches_per_epoch(10, 4, true), 2);
  EXPECT_EQ(batches_per_epoch(8, 4, false), 2);
  EXPECT_EQ(batches_per_epoch(3, 4, true), 0);
  const BatchSlice last = batch_slice(10, 4, false, 2);
  EXPECT_EQ(last.first_sample, 8);
  EXPECT_EQ(last.samples, 2);
  const BatchSlice next = batch_slice(10, 4, false, 3);
  EXPECT_EQ(next.epoch, 1);
  EXPECT_EQ(next.first_sample, 0);
  EXPECT_EQ(next.samples, 4);
  EXPECT_EQ(batch_slice(10, 4, true, 2).epoch, 1);
  EXPECT_THROW(batch_slice(3, 4, true, 0), std::invalid_argument);
  EXPECT_THROW(batches_per_epoch(10, 0, false), std::invalid_argument);
}

// Every worker count delivers, in order, exactly the sequential reference's batches.
TEST(LoaderPipeline, MatchesSequentialReferenceForEveryWorkerCount) {
  const DatasetSpec spec = small_spec();
  Dataset data(spec);
  const Augment augment = Augment::imagenet(spec, 10);
  const std::uint64_t seed = fresh_seed();
  std::vector<float> ref;
  std::vector<std::int64_t> ref_ids;
  for (bool drop_last : {false, true}) {
    for (int batch : {1, 4, 7, 16, 37, 50}) {
      if (drop_last && batch > spec.samples) continue;
      std::vector<std::uint64_t> checksums_by_workers;
      for (int workers : {0, 1, 2, 4}) {
        SCOPED_TRACE(::testing::Message() << "workers " << workers << " batch " << batch << " drop_last " << drop_last);
        DataLoader loader(data, augment, {.workers = workers, .batch_size = batch, .drop_last = drop_last});
        const std::int64_t per_epoch = loader.batches_per_epoch();
        const std::int64_t batches = 2 * per_epoch + 1;  // two whole epochs and into the third
        loader.start(seed, batches);
        std::vector<std::vector<int>> seen(3, std::vector<int>(spec.samples, 0));
        std::uint64_t checksum = 0;
        for (std::int64_t g = 0; g < batches; ++g) {
          const BatchView b = loader.next();
          ASSERT_TRUE(b) << "batch " << g;
          ASSERT_EQ(b.index, g);
          const BatchSlice slice = reference_batch(data, augment, batch, drop_last, seed, g, ref, ref_ids);
          ASSERT_EQ(b.slice.samples, slice.samples);
          ASSERT_EQ(b.slice.epoch, g / per_epoch);
          for (int j = 0; j < slice.samples; ++j) {
            ASSERT_EQ(b.sample_ids[j], ref_ids[j]);
            ASSERT_EQ(b.sample_ids[j], slice.first_sample + j) << "rows out of order";
            ++seen[slice.epoch][b.sample_ids[j]];
          }
          ASSERT_TRUE(same_bits(b.values(), ref)) << "batch " << g;
          checksum += batch_checksum(b.values()) * (g + 1);
        }
        EXPECT_FALSE(loader.next()) << "more batches than asked for";
        EXPECT_FALSE(loader.next());
        const std::int64_t kept = drop_last ? per_epoch * batch : spec.samples;
        for (int e = 0; e < 2; ++e) {
          for (std::int64_t s = 0; s < spec.samples; ++s) {
            EXPECT_EQ(seen[e][s], s < kept ? 1 : 0) << "epoch " << e << " sample " << s;
          }
        }
        checksums_by_workers.push_back(checksum);
        const LoaderStats& st = loader.stats();
        EXPECT_EQ(st.batches, batches);
      }
      for (std::uint64_t c : checksums_by_workers) EXPECT_EQ(c, checksums_by_workers[0]);
    }
  }
}

TEST(LoaderPipeline, EpochsDrawNewAugmentations) {
  const DatasetSpec spec = small_spec();
  Dataset data(spec);
  const Augment augment = Augment::imagenet(spec, 8);
  DataLoader loader(data, augment, {.workers = 2, .batch_size = static_cast<int>(spec.samples)});
  loader.start(fresh_seed(), 2);
  const BatchView first_view = loader.next();
  ASSERT_TRUE(first_view);
  const std::vector<float> first(first_view.values().begin(), first_view.values().end());
  const BatchView second = loader.next();
  ASSERT_TRUE(second);
  EXPECT_EQ(second.slice.epoch, 1);
  EXPECT_FALSE(same_bits(first, second.values()));
}

TEST(LoaderPipeline, IdleAccountingIsSane) {
  const DatasetSpec spec = small_spec();
  Dataset data(spec);
  const Augment augment = Augment::imagenet(spec, 10);
  CpuConsumer consumer(augment.floats_per_sample(), 16, 3);
  for (int workers : {0, 1, 2}) {
    DataLoader loader(data, augment, {.workers = workers, .batch_size = 5});
    loader.start(fresh_seed(), 20);
    const auto t0 = std::chrono::steady_clock::now();
    std::int64_t samples = 0;
    std::uint64_t bytes = 0;
    while (const BatchView b = loader.next()) {
      consumer.consume(b.data, b.slice.samples);
      samples += b.slice.samples;
      for (int j = 0; j < b.slice.samples; ++j) bytes += data.compressed_bytes(b.sample_ids[j]);
    }
    const double total_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
    const LoaderStats& st = loader.stats();
    EXPECT_GE(st.idle_ns, 0) << "workers " << workers;
    EXPECT_LE(st.idle_ns, total_ns) << "workers " << workers;
    if (workers == 0) {
      EXPECT_GT(st.idle_ns, 0) << "loading in the consumer's thread is idle time";
    }
    EXPECT_EQ(st.batches, 20);
    EXPECT_EQ(st.samples, samples);
    EXPECT_EQ(st.compressed_bytes, bytes);
  }
}

TEST(LoaderPipeline, CorruptSampleSurfacesInOrderAndNamesIt) {
  const DatasetSpec spec = small_spec();
  Dataset data(spec);
  corrupt(data, 13);
  const Augment augment = Augment::imagenet(spec, 10);
  for (int workers : {0, 1, 2, 4}) {
    SCOPED_TRACE(::testing::Message() << "workers " << workers);
    DataLoader loader(data, augment, {.workers = workers, .batch_size = 4});
    loader.start(fresh_seed(), DataLoader::kEndless);
    for (int g = 0; g < 3; ++g) ASSERT_TRUE(loader.next()) << "batches before the bad one arrive";
    try {
      loader.next();  // batch 3 holds samples 12..15
      FAIL() << "the corrupted sample was delivered";
    } catch (const CorruptSample& e) {
      EXPECT_NE(std::string(e.what()).find("sample 13"), std::string::npos) << e.what();
    }
    EXPECT_THROW(loader.next(), std::logic_error) << "the stream stops after an error";
    loader.start(fresh_seed(), 2);  // and can be started again
    EXPECT_TRUE(loader.next());
  }
}

TEST(LoaderPipeline, StopsMidEpochWithoutHanging) {
  const DatasetSpec spec = small_spec();
  Dataset data(spec);
  const Augment augment = Augment::imagenet(spec, 10);
  const std::uint64_t seed = fresh_seed();
  for (int workers : {1, 2, 4}) {
    {
      DataLoader loader(data, augment, {.workers = workers, .batch_size = 3});
      loader.start(seed, DataLoader::kEndless);
      ASSERT_TRUE(loader.next());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // every worker now blocks on a full ring
    }                                                              // destroyed mid-epoch with workers blocked
    {
      DataLoader loader(data, augment, {.workers = workers, .batch_size = 3});
      loader.start(seed, DataLoader::kEndless);  // destroyed while the workers are busy
    }
    DataLoader loader(data, augment, {.workers = workers, .batch_size = 3});
    loader.start(seed, DataLoader::kEndless);
    for (int g = 0; g < 5; ++g) ASSERT_TRUE(loader.next());
    loader.stop();
    EXPECT_THROW(loader.next(), std::logic_error);
    loader.start(seed, 3);  // restarting replays the stream from batch 0
    std::vector<float> ref;
    std::vector<std::int64_t> ids;
    for (int g = 0; g < 3; ++g) {
      const BatchView b = loader.next();
      ASSERT_TRUE(b);
      reference_batch(data, augment, 3, false, seed, g, ref, ids);
      EXPECT_TRUE(same_bits(b.values(), ref)) << "workers " << workers << " batch " << g;
    }
  }
}

TEST(LoaderPipeline, RejectsBadOptions) {
  const DatasetSpec spec = small_spec();
  Dataset data(spec);
  const Augment augment = Augment::imagenet(spec, 10);
  EXPECT_THROW(DataLoader(data, augment, {.workers = -1}), std::invalid_argument);
  EXPECT_THROW(DataLoader(data, augment, {.batch_size = 0}), std::invalid_argument);
  EXPECT_THROW(DataLoader(data, augment, {.workers = 1, .prefetch_per_worker = 0}), std::invalid_argument);
  EXPECT_THROW(DataLoader(data, augment, {.batch_size = 38, .drop_last = true}), std::invalid_argument);
  DataLoader loader(data, augment, {.workers = 1});
  EXPECT_THROW(loader.next(), std::logic_error) << "next() before start()";
  loader.start(1, 0);
  EXPECT_FALSE(loader.next()) << "an empty stream ends at once";
}

int g_allocations = 0, g_frees = 0;
void* counting_allocate(std::size_t bytes) {
  ++g_allocations;
  return ::operator new(bytes);
}
void counting_free(void* p) {
  ++g_frees;
  ::operator delete(p);
}

TEST(LoaderPipeline, BatchBuffersComeFromTheGivenAllocator) {
  const DatasetSpec spec = small_spec();
  Dataset data(spec);
  const Augment augment = Augment::imagenet(spec, 10);
  g_allocations = g_frees = 0;
  {
    DataLoader loader(
        data, augment,
        {.workers = 3, .batch_size = 4, .prefetch_per_worker = 2, .allocator = {counting_allocate, counting_free}});
    loader.start(2, 4);
    while (loader.next()) {
    }
    EXPECT_EQ(g_allocations, 6) << "workers * prefetch_per_worker batch buffers";
  }
  EXPECT_EQ(g_frees, 6);
}

TEST(LoaderChecksum, ExactAndPositionSensitive) {
  std::vector<float> v(1000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 7) - 3.0f;
  const std::uint64_t base = batch_checksum(v);
  EXPECT_EQ(batch_checksum(v), base);
  std::vector<float> swapped = v;
  std::swap(swapped[1], swapped[2]);  // different values at two positions
  EXPECT_NE(batch_checksum(swapped), base);
  std::vector<float> flipped = v;
  flipped[500] = std::bit_cast<float>(std::bit_cast<std::uint32_t>(flipped[500]) ^ 1u);
  EXPECT_NE(batch_checksum(flipped), base);
  std::vector<float> zero_sign = v;
  zero_sign[3] = -0.0f;  // v[3] is +0: bits, not values, are summed
  EXPECT_NE(batch_checksum(zero_sign), base);
  EXPECT_EQ(batch_checksum({}), 0u);
}

TEST(LoaderConsumer, LinearLayerMatchesDoubleReference) {
  const std::size_t features = 301;  // odd, not a multiple of any vector width
  const int outputs = 24, samples = 3;
  CpuConsumer consumer(features, outputs, 9);
  const std::vector<float>& w = consumer.weights();
  for (float v : w) {
    ASSERT_GE(v, -1.0f);
    ASSERT_LT(v, 1.0f);
    ASSERT_EQ(v * 1024.0f, std::round(v * 1024.0f));
  }
  std::vector<float> x(samples * features);
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(splitmix64(i + fresh_seed()) % 1000) / 500.0f - 1.0f;
  const double sum = consumer.consume(x.data(), samples);
  const std::span<const float> y = consumer.last_outputs();
  ASSERT_EQ(y.size(), static_cast<std::size_t>(samples * outputs));
  double ref_sum = 0;
  for (int s = 0; s < samples; ++s) {
    for (int r = 0; r < outputs; ++r) {
      double ref = 0, scale = 0;
      for (std::size_t k = 0; k < features; ++k) {
        const double wk = w[(r / 8) * features * 8 + k * 8 + r % 8];
        ref += wk * x[s * features + k];
        scale += std::abs(wk * x[s * features + k]);
      }
      EXPECT_NEAR(y[s * outputs + r], ref, 1e-5 * scale + 1e-6) << "sample " << s << " output " << r;
      ref_sum += ref;
    }
  }
  EXPECT_NEAR(sum, ref_sum, 1e-3);
  EXPECT_EQ(consumer.consume(x.data(), 0), 0.0);
  EXPECT_THROW(CpuConsumer(features, 12, 1), std::invalid_argument);
  EXPECT_THROW(CpuConsumer(features, 0, 1), std::invalid_argument);
}

}  // namespace
}  // namespace pairbench::kernels::loader
