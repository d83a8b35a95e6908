// The second instrument: retired user-space instructions per iteration of a timed region.
// From the PMU through perf_event_open where the machine has one; otherwise from Debian's
// valgrind (callgrind counts instructions by simulation: the same count for the same binary and
// inputs, whatever else the machine is doing). Which one a run used is recorded in the run file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pairbench::harness {

// Instructions in one iteration of the self-test's work loop (bench/common/timed_region.cpp:
// imul, add, add, cmp, jne as GCC 12 compiles it at -O2/-O3); the self-test plants exact counts
// with it. tests/kernels/timed_region_test.cpp checks it under callgrind.
inline constexpr double kInjectedInstructionsPerLoop = 5;

struct InstructionCounterChoice {
  std::string name;    // "perf" | "callgrind" | "" (none here)
  std::string tool;    // valgrind's path for callgrind
  std::string reason;  // why none, or what the choice means
};

// perf where a hardware instruction counter opens and counts here; else callgrind where valgrind
// is installed; else none, with the reason. `wanted` ("perf", "callgrind", "none", "" = detect)
// forces a choice, which is still checked.
InstructionCounterChoice choose_instruction_counter(const std::string& wanted);

// The command prefix that runs a bench binary under the counter (callgrind: valgrind and its
// options, writing its count to `out_file`); empty for perf.
std::vector<std::string> instruction_counter_prefix(const InstructionCounterChoice& c, const std::string& out_file);

// What a run's counting processes record per function with this counter (the run file's
// `sampling.instruction_functions`): callgrind's top functions, or why there is no breakdown.
std::string function_breakdown_note(const InstructionCounterChoice& c);

// Callgrind's total instruction count (the `totals:` or `summary:` line) from its output file.
std::optional<std::uint64_t> read_callgrind_total(const std::string& path);

}  // namespace pairbench::harness
