// The exit statuses every pairbench command shares (each command's --help lists its own).
#pragma once

namespace pairbench::harness {

inline constexpr int kExitOk = 0;
inline constexpr int kExitRegression = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitBenchmarkFailed = 3;
inline constexpr int kExitUndecided = 4;  // the gate could not decide (--undecided fail)

}  // namespace pairbench::harness
