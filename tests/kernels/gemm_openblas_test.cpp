// OpenBLAS kernel choice and the in-process checks behind the OPENBLAS_CORETYPE and
// OPENBLAS_NUM_THREADS environment arms.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "kernels/gemm/openblas.h"

namespace eg = pairbench::kernels::gemm;
using Status = eg::EnvCheck::Status;

namespace {

eg::CpuVectorFeatures avx512() { return {true, true, true, true, true, true, true}; }
eg::CpuVectorFeatures avx2() { return {.avx2 = true, .fma = true}; }

// Sets (or with nullptr unsets) a variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    value ? setenv(name, value, 1) : unsetenv(name);
  }
  ~ScopedEnv() { had_ ? setenv(name_, old_.c_str(), 1) : unsetenv(name_); }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

}  // namespace

TEST(gemm_openblas, CoreClassesAndTheBestCoreForACpu) {
  EXPECT_EQ(eg::core_isa_level("SkylakeX"), 2);
  EXPECT_EQ(eg::core_isa_level("cooperlake"), 2);
  EXPECT_EQ(eg::core_isa_level("Haswell"), 1);
  EXPECT_EQ(eg::core_isa_level("Zen"), 1);
  EXPECT_EQ(eg::core_isa_level("Prescott"), 0);
  EXPECT_EQ(eg::core_isa_level("Sandybridge"), 0);
  EXPECT_EQ(eg::core_isa_level("NotACore"), -1);
  EXPECT_EQ(eg::best_core_for(avx512()), "SkylakeX");
  EXPECT_EQ(eg::best_core_for(avx2()), "Haswell");
  eg::CpuVectorFeatures f_only = avx2();
  f_only.avx512f = true;  // AVX-512F without BW/VL/DQ/CD (Knights Landing): not SkylakeX
  EXPECT_EQ(eg::best_core_for(f_only), "Haswell");
  EXPECT_EQ(eg::best_core_for({}), "");
  EXPECT_TRUE(eg::same_core("skylakex", "SkylakeX"));
  EXPECT_FALSE(eg::same_core("", ""));
}

TEST(gemm_openblas, TheBenchOverridesOnlyALesserDetectedKernelAndOnlyWhenUnset) {
  EXPECT_EQ(eg::core_override(nullptr, nullptr, "Prescott", avx512()), "SkylakeX");  // this Xeon case
  EXPECT_EQ(eg::core_override(nullptr, nullptr, "Haswell", avx512()), "SkylakeX");
  EXPECT_EQ(eg::core_override(nullptr, nullptr, "Prescott", avx2()), "Haswell");
  EXPECT_EQ(eg::core_override(nullptr, nullptr, "Cooperlake", avx512()), "");  // as good as it gets
  EXPECT_EQ(eg::core_override(nullptr, nullptr, "Zen", avx2()), "");
  EXPECT_EQ(eg::core_override(nullptr, nullptr, "FutureCore", avx512()), "");   // unknown: leave it alone
  EXPECT_EQ(eg::core_override("Prescott", nullptr, "Prescott", avx512()), "");  // the user's choice
  EXPECT_EQ(eg::core_override("", nullptr, "Prescott", avx512()), "");          // the harness's autodetect arm
  EXPECT_EQ(eg::core_override(nullptr, "Prescott", "Prescott", avx512()), "");  // already re-executed once
}

TEST(gemm_openblas, CoretypeArmIsInEffectOnlyWhenTheKernelRuns) {
  const std::string ran = eg::openblas_core();
  ASSERT_FALSE(ran.empty());
  {
    ScopedEnv marker("PAIRBENCH_OPENBLAS_AUTODETECTED", nullptr);
    ScopedEnv env("OPENBLAS_CORETYPE", nullptr);
    EXPECT_EQ(eg::check_coretype(ran).status, Status::kInEffect);
    EXPECT_EQ(eg::check_coretype("NotThisOne").status, Status::kNotSet);
    EXPECT_EQ(eg::check_coretype("").status, Status::kInEffect);  // never set: OpenBLAS detected
  }
  {
    ScopedEnv env("OPENBLAS_CORETYPE", "NotThisOne");  // set, but OpenBLAS runs something else
    const eg::EnvCheck c = eg::check_coretype("NotThisOne");
    EXPECT_EQ(c.status, Status::kIgnored);
    EXPECT_NE(c.message.find("OpenBLAS runs " + ran), std::string::npos) << c.message;
    EXPECT_EQ(eg::check_coretype("").status, Status::kNotSet);
  }
  {
    ScopedEnv env("OPENBLAS_CORETYPE", "");
    EXPECT_EQ(eg::check_coretype("").status, Status::kInEffect);
  }
  {
    ScopedEnv env("OPENBLAS_CORETYPE", nullptr);
    ScopedEnv marker("PAIRBENCH_OPENBLAS_AUTODETECTED", "Prescott");  // the bench overrode detection
    EXPECT_EQ(eg::check_coretype("").status, Status::kNotSet);
  }
}

TEST(gemm_openblas, ThreadsArmIsInEffectOnlyAtTheRequestedCount) {
  const int threads = eg::openblas_threads();
  ASSERT_GE(threads, 1);
  {
    ScopedEnv env("OPENBLAS_NUM_THREADS", nullptr);
    EXPECT_EQ(eg::check_threads(threads).status, Status::kInEffect);
    EXPECT_EQ(eg::check_threads(threads + 1000).status, Status::kNotSet);
  }
  {
    ScopedEnv env("OPENBLAS_NUM_THREADS", std::to_string(threads + 1000).c_str());
    const eg::EnvCheck c = eg::check_threads(threads + 1000);
    EXPECT_EQ(c.status, Status::kIgnored);
    EXPECT_NE(c.message.find("OpenBLAS runs " + std::to_string(threads) + " threads"), std::string::npos) << c.message;
  }
}

TEST(gemm_openblas, LabelNamesTheKernelAndWhereItCameFrom) {
  const std::string label = eg::openblas_kernel_label();
  EXPECT_EQ(label.rfind("OpenBLAS " + eg::openblas_core() + ", ", 0), 0u) << label;
  EXPECT_NE(label.find(" threads; "), std::string::npos) << label;
}
