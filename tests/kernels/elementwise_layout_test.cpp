// HostArray under pairbench's layout randomisation (kernels/common/layout.h): with a layout seed its
// data starts at a random multiple of 64 bytes within its first page, still 64-byte aligned as the
// kernels assume, and the ops compute the same values.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <set>
#include <vector>

#include "kernels/common/layout.h"
#include "kernels/elementwise/bandwidth_ops.h"

namespace pairbench::kernels::elementwise {
namespace {

TEST(ElementwiseLayout, ArraysMoveWithinTheirPageAndStayAligned) {
  // Before anything in this binary reads the seed (it is read once per process).
  ASSERT_EQ(setenv(kLayoutSeedEnv, "12345", 1), 0);
  ASSERT_TRUE(process_layout_seed().has_value());
  std::set<std::uintptr_t> page_offsets;
  for (int k = 0; k < 40; ++k) {
    HostArray a(Storage::kBf16, 4096 + 3);
    const auto address = reinterpret_cast<std::uintptr_t>(a.data());
    EXPECT_EQ(address % 64, 0u);
    page_offsets.insert(address % 4096);
    std::vector<float> x(a.size(), 1.5f), y(a.size());
    a.store(x);
    a.load(y);
    EXPECT_EQ(y, x);
  }
  EXPECT_GT(page_offsets.size(), 10u);  // 40 arrays over 64 possible offsets

  const std::size_t n = 3 * 1024;
  HostArray x(Storage::kFp32, n), y(Storage::kFp32, n);
  std::vector<float> in(n);
  for (std::size_t i = 0; i < n; ++i) in[i] = static_cast<float>(i % 7) - 3.0f;
  x.store(in);
  axpb(2.0f, 1.0f, x, y);
  std::vector<float> out(n);
  y.load(out);
  for (std::size_t i = 0; i < n; ++i) EXPECT_EQ(out[i], 2.0f * in[i] + 1.0f) << i;
}

}  // namespace
}  // namespace pairbench::kernels::elementwise
