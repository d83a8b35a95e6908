// File-type checks on user paths, and safe file names for keys read from files.
#include "harness/store/file_checks.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "harness/store/json_field.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

namespace {

constexpr std::size_t kMaxKeyChars = 64;

// stat() never opens the file, so a FIFO without a writer cannot block it.
std::string kind_of(const struct stat& st) {
  if (S_ISREG(st.st_mode)) return "";
  if (S_ISDIR(st.st_mode)) return "is a directory";
  if (S_ISFIFO(st.st_mode)) return "is a FIFO (named pipe)";
  if (S_ISCHR(st.st_mode)) return "is a character device";
  if (S_ISBLK(st.st_mode)) return "is a block device";
  if (S_ISSOCK(st.st_mode)) return "is a socket";
  return "is not a regular file";
}

}  // namespace

std::string non_regular_reason(const std::string& path) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return errno == ENOENT ? "does not exist" : std::string("cannot be examined: ") + std::strerror(errno);
  }
  return kind_of(st);
}

std::string regular_file_problem(const std::string& path) {
  if (path.empty()) return "(empty path): expected a regular file";
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return path + ": cannot open: " + std::strerror(errno);
  if (const std::string why = kind_of(st); !why.empty()) return path + ": " + why + ", expected a regular file";
  return "";
}

std::string regular_file_or_absent_problem(const std::string& path) {
  if (path.empty()) return "(empty path): expected a file name";
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    // A missing file or a dangling link: the atomic write creates it (a link is replaced, not followed).
    return errno == ENOENT ? "" : path + ": cannot be examined: " + std::strerror(errno);
  }
  if (const std::string why = kind_of(st); !why.empty())
    return path + ": " + why + ", expected a regular file or a new path";
  return "";
}

std::string directory_or_absent_problem(const std::string& path) {
  if (path.empty()) return "(empty path): expected a directory";
  struct stat st {};
  if (stat(path.c_str(), &st) != 0)
    return errno == ENOENT ? "" : path + ": cannot be examined: " + std::strerror(errno);
  if (S_ISDIR(st.st_mode)) return "";
  const std::string why = kind_of(st);
  return path + ": " + (why.empty() ? "is a file" : why) + ", expected a directory";
}

std::string directory_problem(const std::string& path) {
  if (path.empty()) return "(empty path): expected a directory";
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    return path + ": " + (errno == ENOENT ? std::string("does not exist") : std::strerror(errno)) +
           ", expected a directory";
  }
  if (S_ISDIR(st.st_mode)) return "";
  const std::string why = kind_of(st);
  return path + ": " + (why.empty() ? "is a file" : why) + ", expected a directory";
}

void require_regular_file(const std::string& path, const std::string& what) {
  if (const std::string problem = regular_file_problem(path); !problem.empty())
    throw FileCheckError(what + ": " + problem);
}

void require_regular_file_or_absent(const std::string& path, const std::string& what) {
  if (const std::string problem = regular_file_or_absent_problem(path); !problem.empty()) {
    throw FileCheckError(what + ": " + problem);
  }
}

void require_directory_or_absent(const std::string& path, const std::string& what) {
  if (const std::string problem = directory_or_absent_problem(path); !problem.empty()) {
    throw FileCheckError(what + ": " + problem);
  }
}

bool is_safe_file_key(const std::string& key) {
  if (key.empty() || key.size() > kMaxKeyChars || key.front() == '.') return false;
  for (const char c : key) {
    const bool ok =
        (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string keyed_path_under(const std::string& dir, const std::string& key, const std::string& suffix,
                             const std::string& what) {
  if (!is_safe_file_key(key)) {
    throw FileCheckError(what + ": " + quoted_for_message(key) + " cannot name a file (expected 1 to " +
                         std::to_string(kMaxKeyChars) + " of A-Z a-z 0-9 . _ -, not starting with '.')");
  }
  const fs::path inside = (fs::path(dir) / "x").lexically_normal().parent_path();
  const fs::path file = (fs::path(dir) / (key + suffix)).lexically_normal();
  // A safe key is one path component, so this holds; checked anyway, since the file gets written.
  if (file.parent_path() != inside || file.filename() != key + suffix) {
    throw FileCheckError(what + ": " + file.string() + " is not directly inside " + inside.string());
  }
  return file.string();
}

}  // namespace pairbench::harness
