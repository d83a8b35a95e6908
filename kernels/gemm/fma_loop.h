// The FP32 FMA ceiling of this CPU: a register-resident FMA loop per core, the core clock measured
// with a dependent-add chain, and the paper figure cores x lanes x FMA units x 2 x clock.
#pragma once

#include <cstdint>
#include <string>

namespace pairbench::kernels::gemm {

struct FmaIsa {
  const char* name;  // "avx512f", "avx2+fma", "sse2 (mul+add)"
  int lanes;         // fp32 lanes per vector
  int accumulators;  // independent chains, enough to cover FMA latency x throughput
};
FmaIsa fma_isa();  // the widest this CPU (and OS) runs

// `iterations` steps of acc = acc * 1 + 1 on every accumulator (the multiplier and addend come
// from volatile loads, so the compiler cannot fold them; accumulator j starts at j, so it cannot
// merge identical chains either). Returns the FLOP done (2 per lane per step). `check` receives
// lane 0 of every accumulator minus its start, each == iterations exactly when iterations + 16
// <= 2^24 (fp32 counts exactly up to there).
double fma_block(std::int64_t iterations, float check[16]);

// Cycles per second of this core while it runs a chain of dependent register adds (1 cycle each
// on every x86 core since the P6): the clock the FMA loop actually ran at, unlike /proc/cpuinfo's
// "cpu MHz", which on a VM is the nominal TSC rate. Best of `tries` runs of ~`seconds` each; 0
// where not x86-64.
double measure_clock_hz(double seconds, int tries);
double cpuinfo_mhz();  // the first "cpu MHz" in /proc/cpuinfo; 0 if absent

// FMA units per core for fma_isa()'s vectors, from the vendor and family (cpuid): a table, not a
// measurement; `why` says which row applied and what it assumes.
struct FmaUnits {
  int units = 1;
  std::string why;
};
FmaUnits fma_units_per_core();

}  // namespace pairbench::kernels::gemm
