// cuBLASLt GEMM in every precision against the fp64 reference on odd non-square shapes, with a
// poisoned output; skipped without a CUDA device.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "kernels/common/device.h"
#include "kernels/dispatch/cuda_stream_ops.h"
#include "kernels/gemm/cublas_gemm.h"

namespace eg = pairbench::kernels::gemm;
namespace ew = pairbench::kernels::elementwise;
namespace kc = pairbench::kernels::cuda;

namespace {

bool no_device(std::string& why) {
  const kc::DeviceInfo info = kc::query_device();
  why = info.reason;
  return !info.available;
}

}  // namespace

TEST(gemm_cublas, EveryPrecisionMatchesTheFp64ReferenceWithinItsBound) {
  std::string why;
  if (no_device(why)) GTEST_SKIP() << "skipped: " << why;
  for (ew::Precision p : {ew::Precision::kFp32, ew::Precision::kTf32, ew::Precision::kFp16, ew::Precision::kBf16}) {
    if (const std::string reason = kc::gemm_unsupported_reason(p); !reason.empty()) {
      EXPECT_NE(reason.find("compute capability"), std::string::npos) << reason;
      continue;
    }
    for (const eg::GemmShape& s : {eg::GemmShape{1, 1, 1}, eg::GemmShape{17, 129, 65}, eg::GemmShape{129, 17, 257},
                                   eg::GemmShape{600, 300, 700}}) {
      SCOPED_TRACE(std::string(ew::precision_name(p)) + " " + s.text());
      std::vector<float> a(static_cast<std::size_t>(s.m * s.k)), b(static_cast<std::size_t>(s.k * s.n));
      eg::fill_random(a, eg::fresh_seed());
      eg::fill_random(b, eg::fresh_seed());
      kc::LtGemm gemm(p, s);
      gemm.upload(a, b);
      const kc::GemmAlgoChoice algo = gemm.tune(4, 2);
      EXPECT_GE(algo.candidates, 1);
      EXPECT_FALSE(algo.description.empty());
      gemm.poison_output();
      gemm.enqueue();
      std::vector<float> c(static_cast<std::size_t>(s.m * s.n), std::numeric_limits<float>::quiet_NaN());
      gemm.download(c);
      const eg::GemmVerification v = eg::verify_gemm(a, b, c, s, p, eg::fresh_seed());
      EXPECT_TRUE(v.check.ok) << v.text();
    }
  }
}

TEST(gemm_cublas, UnsupportedReasonNamesTheDeviceOrItsAbsence) {
  std::string why;
  const bool none = no_device(why);
  const std::string reason = kc::gemm_unsupported_reason(ew::Precision::kBf16);
  if (none) {
    EXPECT_FALSE(reason.empty());
    GTEST_SKIP() << "skipped: " << why;
  }
  EXPECT_EQ(kc::gemm_unsupported_reason(ew::Precision::kFp32), "");
}
