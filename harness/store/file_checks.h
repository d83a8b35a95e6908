// Checks on the paths and keys users hand to pairbench, made before anything opens or writes them:
// a FIFO blocks its reader forever, a directory or a device is never a run file or a database, and
// a key read from a file must not steer a path out of the results directory.
#pragma once

#include <stdexcept>
#include <string>

namespace pairbench::harness {

// Bad input caught by these checks; the message is one line, "WHAT: PATH: problem".
struct FileCheckError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// What is at `path` (symbolic links followed): "" for a regular file, else "does not exist",
// "is a directory", "is a FIFO (named pipe)", "is a character device", ...
std::string non_regular_reason(const std::string& path);

// "" when `path` passes, else "PATH: problem" (one line). Nothing is opened.
std::string regular_file_problem(const std::string& path);            // an existing regular file (or a link to one)
std::string regular_file_or_absent_problem(const std::string& path);  // for outputs replaced atomically
std::string directory_or_absent_problem(const std::string& path);
std::string directory_problem(const std::string& path);

// The same as checks that throw FileCheckError "WHAT: PATH: problem"; `what` names the argument
// ("--history", "baseline run file").
void require_regular_file(const std::string& path, const std::string& what);
void require_regular_file_or_absent(const std::string& path, const std::string& what);
void require_directory_or_absent(const std::string& path, const std::string& what);

// Whether `key` may name a file as it is: 1 to 64 of [A-Za-z0-9._-], not starting with '.'.
bool is_safe_file_key(const std::string& key);

// DIR/KEY.SUFFIX for a key read from a file (a machine key), after checking that the key is safe
// and that the path stays directly inside DIR; throws FileCheckError "WHAT: ..." otherwise.
std::string keyed_path_under(const std::string& dir, const std::string& key, const std::string& suffix,
                             const std::string& what);

}  // namespace pairbench::harness
