// Temporaries every kernel family shares: a scratch directory that removes itself. (Seeds and
// random fills are kernels/common/rng.h.)
#pragma once

#include <stdlib.h>  // mkdtemp

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace pairbench::kernels {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
// Throws std::system_error naming the pattern when it cannot be made. A process killed before
// the destructor runs (time limit, crash) leaks it, so the harness sets each bench process's
// $TMPDIR to a directory of its own and removes that after the process ends, whatever its end.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix) {
    const char* tmp = std::getenv("TMPDIR");
    const std::filesystem::path base = (tmp && *tmp) ? tmp : "/tmp";
    std::string pattern = (base / (prefix + "-XXXXXX")).string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      throw std::system_error(errno, std::generic_category(), "cannot create a directory like " + pattern);
    }
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;  // a destructor must not throw; a leftover temp dir is the worst case
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

}  // namespace pairbench::kernels
