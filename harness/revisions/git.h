// Revisions of the repository a command runs in, through git as a child process: resolving a
// revision, the first-parent commits between two, and how this pairbench was configured, so that
// another revision builds alike. Used by `pairbench bisect` (harness/revisions/bisection.h).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "harness/exec/process.h"

namespace pairbench::harness {

// Bad input naming its option ("--good: unknown revision ..."): the command's usage error, exit 2.
struct RevisionInputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// git or a tool a revision needs failed; its message is the one line printed (exit 3).
struct RevisionFailed : std::runtime_error {
  using std::runtime_error::runtime_error;
};
// SIGINT/SIGTERM arrived while a child ran: stop, report what is known.
struct RevisionInterrupted {};

// Without trailing newlines, carriage returns and spaces.
std::string trimmed(std::string s);
// The last non-empty line of a process's output (what a failure says).
std::string last_line_of(const std::string& output);

// `program` found on PATH (run_process execs a path, no PATH search), "" where it is not there.
std::string on_path(const std::string& program);
// `program` on PATH; RevisionFailed naming it where it is not installed.
std::string program(const std::string& name);

// git -C repo ARGS (RevisionInterrupted when interrupted).
ProcessResult git(const std::string& repo, std::vector<std::string> args, double limit_s = 120);
// git's output where it succeeded, else RevisionFailed naming the command.
std::string git_out(const std::string& repo, const std::vector<std::string>& args);
// The full commit id `rev` names; RevisionInputError naming `option` where it names none.
std::string resolve(const std::string& repo, const std::string& rev, const std::string& option);

struct Commit {
  std::string sha, subject;
  std::string state = "untested";  // good | bad | skipped | untested
  std::string why;                 // skipped: why
  std::string short_sha() const { return sha.substr(0, 10); }
};

// good, then the first-parent commits good..bad, oldest first (bad last); `good_text`, `bad_text`:
// the revisions as given, for the messages. RevisionInputError where good is not an ancestor of
// bad on its first-parent history.
std::vector<Commit> first_parent_range(const std::string& repo, const std::string& good, const std::string& bad,
                                       const std::string& good_text, const std::string& bad_text);

// The configure options of this pairbench's own build (its CMakeCache.txt beside bin/): another
// revision is built as it was (build type, CUDA or not, layout variants, loop alignment); tests
// and fuzzing off.
std::vector<std::string> configure_args_like_this_build();

}  // namespace pairbench::harness
