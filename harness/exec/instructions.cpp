// Choosing and reading the instruction counter (perf_event_open or callgrind).
#include "harness/exec/instructions.h"

#include "harness/exec/callgrind_profile.h"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace pairbench::harness {
namespace {

// Opens a user-space instruction counter on this thread and counts a little work: "" when it
// works, else why not (a VM without a virtual PMU fails here with ENOENT or EOPNOTSUPP).
std::string perf_counts_instructions() {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof attr);
  attr.size = sizeof attr;
  attr.type = PERF_TYPE_HARDWARE;
  attr.config = PERF_COUNT_HW_INSTRUCTIONS;
  attr.disabled = 1;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  const long fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
  if (fd < 0) return std::string("perf_event_open(instructions): ") + std::strerror(errno);
  ioctl(static_cast<int>(fd), PERF_EVENT_IOC_ENABLE, 0);
  volatile std::uint64_t x = 0;
  for (int i = 0; i < 10000; ++i) x = x + static_cast<std::uint64_t>(i);
  ioctl(static_cast<int>(fd), PERF_EVENT_IOC_DISABLE, 0);
  std::uint64_t count = 0;
  const bool read_ok = read(static_cast<int>(fd), &count, sizeof count) == static_cast<ssize_t>(sizeof count);
  close(static_cast<int>(fd));
  if (!read_ok || count == 0) return "perf_event_open(instructions) opens but counts nothing";
  return "";
}

std::string find_in_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/" + program;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

}  // namespace

InstructionCounterChoice choose_instruction_counter(const std::string& wanted) {
  if (wanted == "none") return {"", "", "instruction counting switched off (--instructions none)"};
  const std::string perf_problem = wanted == "callgrind" ? "not tried" : perf_counts_instructions();
  if (perf_problem.empty()) return {"perf", "", "hardware counter (perf_event_open), user space only"};
  if (wanted == "perf") return {"", "", "--instructions perf: " + perf_problem};
  const std::string valgrind = find_in_path("valgrind");
  if (!valgrind.empty()) {
    return {"callgrind", valgrind,
            "no hardware counter here (" + perf_problem + "): simulated by valgrind's callgrind (" + valgrind + ")"};
  }
  return {"", "",
          "no hardware counter here (" + perf_problem + ") and valgrind is not installed (Debian package valgrind)"};
}

std::vector<std::string> instruction_counter_prefix(const InstructionCounterChoice& c, const std::string& out_file) {
  if (c.name != "callgrind") return {};
  // Instrumentation starts at the first timed region (the bench calls
  // CALLGRIND_START_INSTRUMENTATION), so set-up runs at the simulator's uninstrumented speed;
  // only instructions inside timed regions are collected (CALLGRIND_TOGGLE_COLLECT).
  return {c.tool, "--tool=callgrind", "--instr-atstart=no", "--collect-atstart=no", "--callgrind-out-file=" + out_file};
}

std::string function_breakdown_note(const InstructionCounterChoice& c) {
  if (c.name == "callgrind") {
    return "callgrind: per counting process, the " + std::to_string(kFunctionsRecorded) +
           " functions with the most self instructions per iteration and the rest summed (instructions[].functions)";
  }
  if (c.name == "perf") {
    return "none: counted with perf, a hardware counter of the total; it cannot say in which function "
           "(--instructions callgrind gives the breakdown)";
  }
  return "none: no instructions counted";
}

std::optional<std::uint64_t> read_callgrind_total(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::optional<std::uint64_t> summary;
  for (std::string line; std::getline(in, line);) {
    for (const char* key : {"totals:", "summary:"}) {
      if (line.rfind(key, 0) == 0) {
        std::istringstream fields(line.substr(std::strlen(key)));
        std::uint64_t value = 0;
        if (fields >> value) summary = value;
      }
    }
  }
  return summary;
}

}  // namespace pairbench::harness
