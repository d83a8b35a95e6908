// Per-process memory facts for the allocator experiments: minor and major page faults
// (getrusage RUSAGE_SELF), resident set now and at its peak (/proc/self/status VmRSS, VmHWM).
#pragma once

#include <cstdint>
#include <string>

namespace pairbench::kernels::alloc {

struct ProcessMemory {
  std::int64_t minor_faults = 0;    // since process start
  std::int64_t major_faults = 0;    // since process start
  std::int64_t rss_bytes = 0;       // VmRSS; 0 where /proc is unreadable
  std::int64_t peak_rss_bytes = 0;  // VmHWM, or ru_maxrss where /proc is unreadable
  std::string peak_source;          // "VmHWM" or "ru_maxrss"
};

ProcessMemory read_process_memory();

// Resets the peak (VmHWM) to the current RSS by writing "5" to /proc/self/clear_refs, so a later
// peak covers only what follows. False where that is not permitted: the peak then covers the
// whole process lifetime.
bool reset_peak_rss();

}  // namespace pairbench::kernels::alloc
