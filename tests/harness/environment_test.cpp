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

// A build's fingerprint takes what its bench binaries say of their build (a build directory without
// its own pairbench would otherwise carry this harness's); the machine key follows; binaries of
// one directory that disagree keep the first's facts and say which field differs.
TEST(Environment, BenchBinariesBuildFactsAreWrittenOverTheFingerprint) {
  const Environment harness = capture_environment(PAIRBENCH_SOURCE_DIR);
  for (const char* field : kBuildFields) EXPECT_TRUE(harness.fingerprint.contains(field)) << field;
  Environment env = harness;
  ExperimentEntry a, b, old;
  a.binary = "bench_a";
  a.build = {{"built_with_cuda", !harness.fingerprint["built_with_cuda"].get<bool>()}, {"compiler_flags", "-O2"}};
  b = a;                     // a second experiment of the same binary: nothing to warn about
  old.binary = "bench_old";  // built before binaries said: nothing known, nothing overwritten
  const std::vector<std::string> added = apply_bench_build_facts(env, {old, a, b});
  EXPECT_EQ(env.fingerprint["built_with_cuda"], a.build["built_with_cuda"]);
  EXPECT_EQ(env.fingerprint["compiler_flags"], "-O2");
  EXPECT_EQ(env.fingerprint["compiler"], harness.fingerprint["compiler"]);
  EXPECT_NE(env.fingerprint["machine_key"], harness.fingerprint["machine_key"]);  // compiler_flags is one of its inputs
  EXPECT_EQ(build_differences(harness.fingerprint, env.fingerprint).size(), 2u);
  ASSERT_EQ(env.warnings.size(), harness.warnings.size() + 1);
  EXPECT_EQ(added, std::vector<std::string>{env.warnings.back()});  // what it added, also returned
  EXPECT_EQ(env.warnings.back().rfind("the bench binaries were built otherwise than this fingerprint says (bench_a: "
                                      "compiler_flags: ",
                                      0),
            0u)
      << env.warnings.back();
  Environment same = env;  // binaries that report what the fingerprint says: nothing to say
  apply_bench_build_facts(same, {a});
  EXPECT_EQ(same.warnings, env.warnings);
  EXPECT_EQ(same.fingerprint, env.fingerprint);

  ExperimentEntry c = a;
  c.binary = "bench_c";
  c.build["compiler_flags"] = "-O3";
  Environment mixed = harness;
  apply_bench_build_facts(mixed, {a, c});
  EXPECT_EQ(mixed.fingerprint["compiler_flags"], "-O2");
  ASSERT_EQ(mixed.warnings.size(), harness.warnings.size() + 2);
  EXPECT_EQ(mixed.warnings[harness.warnings.size()],
            "bench binaries built differently (bench_a vs bench_c): compiler_flags: \"-O2\" vs \"-O3\"");
}

}  // namespace
}  // namespace pairbench::harness
