// Callgrind's function-level totals: the instructions (event Ir) each function executed itself,
// its callees not included ("self" cost), read from callgrind's output file.
// Why a reader of our own and not callgrind_annotate (Perl, in Debian's valgrind package): that
// tool prints for people, one line per file:function (a function whose code was inlined from a
// header is split over several lines, `t.cpp:g` and `stl_algobase.h:g`), with thousands separators
// and percentages; we need one number per function, which takes four kinds of line of callgrind's
// documented format ("Callgrind Format Specification", version 1): `fn=`, `calls=` (the cost line
// after it is a call's inclusive cost, not the caller's own), cost lines and `totals:`. Names are
// demangled by valgrind itself (its default, --demangle=yes). callgrind_profile_test checks the
// totals against callgrind_annotate's on the checked-in fixture.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace pairbench::harness {

// How many functions a counting process records in the run file (the rest are summed).
inline constexpr int kFunctionsRecorded = 20;

struct FunctionCost {
  std::string function;  // as valgrind names it, demangled; functions of one name in several objects are summed
  std::uint64_t instructions = 0;  // self cost, event Ir
};

struct CallgrindProfile {
  std::uint64_t total = 0;              // the file's totals; equal to the sum of every self cost
  std::vector<FunctionCost> functions;  // every function with a cost, most first (ties by name)
};

// Throws std::runtime_error, "PATH: ..." (with the line where one is to blame), for a file it cannot
// use: missing or unreadable, not callgrind's format, without the Ir event, with a malformed line,
// truncated (no `totals:` line, which callgrind writes last), or self costs that do not add up to it.
CallgrindProfile read_callgrind_profile(const std::string& path);

}  // namespace pairbench::harness
