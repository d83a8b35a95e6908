// The loader's GPU consumer against the host: the checksum of the batch the device received equals
// batch_checksum on the host exactly, and the linear layer's outputs equal CpuConsumer's within
// rounding; batches collated into pinned memory by the loader. Skipped where there is no device.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kernels/common/device.h"
#include "kernels/loader/cuda_consumer.h"
#include "kernels/loader/dataset.h"
#include "kernels/loader/pipeline.h"

namespace pairbench::kernels::loader::cuda {
namespace {

class LoaderCudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string why = kernels::cuda::device_unavailable_reason(); !why.empty())
      GTEST_SKIP() << "skipped: " << why;
  }
};

TEST_F(LoaderCudaTest, GpuConsumerMatchesCpuOnLoaderBatches) {
  const DatasetSpec spec{.samples = 23, .seed = fresh_seed()};
  Dataset data(spec);
  const Augment augment = Augment::imagenet(spec, 56);
  const int outputs = 24, batch = 8;
  CpuConsumer cpu(augment.floats_per_sample(), outputs, 11);
  CudaConsumer gpu(cpu.weights(), augment.floats_per_sample(), outputs, batch);
  DataLoader loader(data, augment, {.workers = 2, .batch_size = batch, .allocator = {pinned_allocate, pinned_free}});
  loader.start(fresh_seed(), 4);  // 8 + 8 + 7 (partial) + 8 of the next epoch
  while (const BatchView b = loader.next()) {
    SCOPED_TRACE(::testing::Message() << "batch " << b.index);
    const GpuConsumeResult got = gpu.consume(b.data, b.slice.samples);
    EXPECT_EQ(got.checksum, batch_checksum(b.values()));
    const double cpu_sum = cpu.consume(b.data, b.slice.samples);
    const std::span<const float> want = cpu.last_outputs();
    const std::vector<float>& y = gpu.last_outputs();
    ASSERT_EQ(y.size(), want.size());
    const std::size_t features = augment.floats_per_sample();
    const std::vector<float>& w = cpu.weights();
    double total_scale = 0;
    for (int smp = 0; smp < b.slice.samples; ++smp) {
      for (int r = 0; r < outputs; ++r) {
        // Both sides round 9408 fp32 products and sums in different orders: the error is a small
        // multiple of eps * sqrt(n) of sum |w x| (5e-5 of it leaves a 8x margin over that).
        double scale = 0;
        for (std::size_t k = 0; k < features; ++k) {
          scale +=
              std::abs(static_cast<double>(w[(r / 8) * features * 8 + k * 8 + r % 8]) * b.data[smp * features + k]);
        }
        total_scale += scale;
        const std::size_t i = static_cast<std::size_t>(smp) * outputs + r;
        EXPECT_NEAR(y[i], want[i], 5e-5 * scale + 1e-6) << "sample " << smp << " output " << r;
      }
    }
    EXPECT_NEAR(got.output_sum, cpu_sum, 5e-5 * total_scale + 1e-6);
  }
  EXPECT_GT(gpu.kernel_busy_s(), 0.0);
}

TEST_F(LoaderCudaTest, ChecksumSeesACorruptedValue) {
  const std::size_t features = 300;
  CudaConsumer gpu(consumer_weights(features, 8, 1), features, 8, 2);
  float* pinned = static_cast<float*>(pinned_allocate(2 * features * sizeof(float)));
  for (std::size_t i = 0; i < 2 * features; ++i) pinned[i] = static_cast<float>(i % 13) * 0.25f;
  const std::uint64_t host = batch_checksum({pinned, 2 * features});
  EXPECT_EQ(gpu.consume(pinned, 2).checksum, host);
  pinned[features + 7] += 1.0f;
  EXPECT_NE(gpu.consume(pinned, 2).checksum, host);
  EXPECT_EQ(gpu.consume(pinned, 0).checksum, 0u);
  EXPECT_THROW(gpu.consume(pinned, 3), std::invalid_argument);
  pinned_free(pinned);
  EXPECT_THROW(CudaConsumer(consumer_weights(features, 8, 1), features, 12, 2), std::invalid_argument);
}

}  // namespace
}  // namespace pairbench::kernels::loader::cuda
