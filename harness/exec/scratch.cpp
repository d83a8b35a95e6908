#include "harness/exec/scratch.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdlib>

namespace pairbench::harness {
namespace fs = std::filesystem;

namespace {

constexpr std::string_view kPrefix = "pairbench-run-";

fs::path temp_base() {
  const char* tmp = std::getenv("TMPDIR");
  return (tmp && *tmp) ? fs::path(tmp) : fs::path("/tmp");
}

// The pid in "pairbench-run-<pid>-XXXXXX", or 0 when the name is not one of ours.
pid_t pid_in(const std::string& name) {
  if (name.rfind(kPrefix, 0) != 0) return 0;
  const char* begin = name.data() + kPrefix.size();
  const char* end = name.data() + name.size();
  pid_t pid = 0;
  const auto [stop, ec] = std::from_chars(begin, end, pid);
  if (ec != std::errc() || stop == begin || stop == end || *stop != '-' || pid <= 0) return 0;
  return pid;
}

}  // namespace

std::string run_scratch_prefix() { return std::string(kPrefix) + std::to_string(getpid()); }

int remove_stale_run_scratch(const fs::path& dir) {
  int removed = 0;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir.empty() ? temp_base() : dir, ec)) {
    const pid_t pid = pid_in(entry.path().filename().string());
    if (pid == 0 || pid == getpid()) continue;
    struct stat st {};
    if (lstat(entry.path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid()) continue;
    // ESRCH: no such process. EPERM means it lives under another user: not ours to judge.
    if (kill(pid, 0) == 0 || errno != ESRCH) continue;
    std::error_code ignored;
    if (fs::remove_all(entry.path(), ignored) > 0 && !ignored) ++removed;
  }
  return removed;
}

}  // namespace pairbench::harness
