// The FMA peak loop counts exactly, and the factors of the derived peak are sane.
#include <gtest/gtest.h>

#include "kernels/gemm/fma_loop.h"

namespace eg = pairbench::kernels::gemm;

TEST(gemm_fma, EveryAccumulatorCountsExactly) {
  const eg::FmaIsa isa = eg::fma_isa();
  for (std::int64_t iterations : {std::int64_t{1}, std::int64_t{1000}, std::int64_t{1} << 20}) {
    float check[16] = {};
    const double flop = eg::fma_block(iterations, check);
    EXPECT_DOUBLE_EQ(flop, static_cast<double>(iterations) * isa.accumulators * isa.lanes * 2) << isa.name;
    for (float v : check) EXPECT_EQ(v, static_cast<float>(iterations));
  }
}

TEST(gemm_fma, ThePeakFactorsAreSane) {
  const eg::FmaIsa isa = eg::fma_isa();
  EXPECT_TRUE(isa.lanes == 4 || isa.lanes == 8 || isa.lanes == 16) << isa.name;
  const eg::FmaUnits units = eg::fma_units_per_core();
  EXPECT_GE(units.units, 1);
  EXPECT_LE(units.units, 2);
  EXPECT_FALSE(units.why.empty());
  // A sanity range, not a timing assertion: any core of the last 20 years runs at 0.1-10 GHz (best of three, so a preempted try does not count).
  const double hz = eg::measure_clock_hz(0.005, 3);
  EXPECT_GT(hz, 1e8);
  EXPECT_LT(hz, 1e10);
}
