// getrusage and /proc/self/status readers; /proc/self/clear_refs for resetting the peak.
#include "kernels/alloc/process_memory.h"

#include <sys/resource.h>

#include <fstream>
#include <sstream>

namespace pairbench::kernels::alloc {
namespace {

// A "Name:   1234 kB" line of /proc/self/status, in bytes; -1 when absent.
std::int64_t status_kib_field(const std::string& status, const char* name) {
  std::istringstream in(status);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name, 0) != 0 || line.size() <= std::char_traits<char>::length(name)) continue;
    if (line[std::char_traits<char>::length(name)] != ':') continue;
    std::istringstream fields(line.substr(std::char_traits<char>::length(name) + 1));
    std::int64_t kib = -1;
    fields >> kib;
    return kib < 0 ? -1 : kib * 1024;
  }
  return -1;
}

}  // namespace

ProcessMemory read_process_memory() {
  ProcessMemory m;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  m.minor_faults = usage.ru_minflt;
  m.major_faults = usage.ru_majflt;
  std::ifstream in("/proc/self/status");
  std::stringstream status;
  status << in.rdbuf();
  const std::int64_t hwm = status_kib_field(status.str(), "VmHWM");
  const std::int64_t rss = status_kib_field(status.str(), "VmRSS");
  m.rss_bytes = rss > 0 ? rss : 0;
  if (hwm > 0) {
    m.peak_rss_bytes = hwm;
    m.peak_source = "VmHWM";
  } else {
    m.peak_rss_bytes = static_cast<std::int64_t>(usage.ru_maxrss) * 1024;  // ru_maxrss is in KiB
    m.peak_source = "ru_maxrss";
  }
  return m;
}

bool reset_peak_rss() {
  std::ofstream out("/proc/self/clear_refs");
  if (!out) return false;
  out << "5";
  out.flush();
  return static_cast<bool>(out);
}

}  // namespace pairbench::kernels::alloc
