// CUDA axpb and layer-norm in fp32 / bf16 / fp16 storage against the fp64 references at odd sizes,
// with poisoned outputs; skipped without a CUDA device.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <vector>

#include "kernels/common/device.h"
#include "kernels/dispatch/cuda_stream_ops.h"
#include "kernels/elementwise/cuda_elementwise.h"

namespace ew = pairbench::kernels::elementwise;
namespace kc = pairbench::kernels::cuda;

TEST(elementwise_cuda, OpsMatchTheFp64ReferencesWithinEachStoragesBound) {
  const kc::DeviceInfo info = kc::query_device();
  if (!info.available) GTEST_SKIP() << "skipped: " << info.reason;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (ew::Storage s : {ew::Storage::kFp32, ew::Storage::kBf16, ew::Storage::kFp16}) {
    for (std::int64_t n : {std::int64_t{1}, std::int64_t{7}, std::int64_t{4101}, std::int64_t{1} << 20}) {
      SCOPED_TRACE(std::string(ew::storage_name(s)) + " n=" + std::to_string(n));
      std::vector<float> x(static_cast<std::size_t>(n));
      for (float& v : x) v = dist(rng);
      kc::DeviceBandwidthOps dev(s, n);
      dev.upload(x);
      const double bound = ew::elementwise_error_bound(ew::precision_of(s));
      // axpb at every size (vector body and tail); layer-norm where n is a multiple of its rows.
      for (std::int64_t cols : {std::int64_t{0}, std::int64_t{1024}, std::int64_t{97}}) {
        kc::ElementwiseOp op;
        if (cols == 0) {
          op = {.kind = kc::ElementwiseOp::Kind::kAxpb, .a = 1.5f, .b = 0.25f};
        } else {
          if (n % cols != 0) continue;
          op = {.kind = kc::ElementwiseOp::Kind::kLayerNorm, .cols = cols, .eps = 1e-5f};
        }
        dev.poison_output();
        dev.enqueue(op);
        std::vector<float> y(x.size(), std::numeric_limits<float>::quiet_NaN());
        dev.download(y);
        std::vector<double> ref(x.size());
        if (cols == 0)
          ew::axpb_reference(op.a, op.b, x, ref);
        else
          ew::layer_norm_reference(x, static_cast<std::size_t>(cols), op.eps, ref);
        EXPECT_LE(ew::rel_error(ref, y), bound) << "cols " << cols;
      }
    }
  }
}
