// Environment fingerprint: the OpenBLAS-kernel warning's decision and the fingerprint's shape.
#include "harness/exec/environment.h"

#include <gtest/gtest.h>

namespace pairbench::harness {
namespace {

const std::vector<std::string> kAvx512 = {"avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512dq", "avx512cd"};

TEST(Environment, WarnsOnAnOpenblasKernelWeakerThanTheCpu) {
  EXPECT_EQ(better_openblas_core("Prescott", kAvx512), "SkylakeX");
  EXPECT_EQ(better_openblas_core("Haswell", kAvx512), "SkylakeX");
  EXPECT_EQ(better_openblas_core("Prescott", {"avx2", "fma"}), "Haswell");
  EXPECT_EQ(better_openblas_core("Cooperlake", kAvx512), "");  // already an AVX-512 kernel
  EXPECT_EQ(better_openblas_core("Haswell", {"avx2", "fma"}), "");
  EXPECT_EQ(better_openblas_core("Prescott", {"sse4_2"}), "");     // nothing better to run
  EXPECT_EQ(better_openblas_core("SomeFutureCore", kAvx512), "");  // unknown names are left alone
}

TEST(Environment, FingerprintHasTheComparableFieldsAndAMachineKey) {
  const Environment env = capture_environment(PAIRBENCH_SOURCE_DIR);
  for (const char* field : kComparableFields) EXPECT_TRUE(env.fingerprint.contains(field)) << field;
  const std::string key = env.fingerprint["machine_key"];
  EXPECT_EQ(key.size(), 16u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(capture_environment(PAIRBENCH_SOURCE_DIR).fingerprint["machine_key"], key);  // stable
  EXPECT_FALSE(env.fingerprint["blas_core"].get<std::string>().empty());
}

}  // namespace
}  // namespace pairbench::harness
