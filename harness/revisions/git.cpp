// Revisions through git as a child process (git.h).
#include "harness/revisions/git.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/exec/catalogue.h"
#include "harness/store/json_field.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

// The last non-empty line of a process's output (what a failure says).
std::string last_line_of(const std::string& output) {
  std::string text = trimmed(output);
  const auto nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

ProcessResult git(const std::string& repo, std::vector<std::string> args, double limit_s) {
  args.insert(args.begin(), {program("git"), "-C", repo});
  ProcessResult r = run_process(args, {{"GIT_OPTIONAL_LOCKS", "0"}, {"GIT_TERMINAL_PROMPT", "0"}},
                                std::chrono::duration<double>(limit_s), -1, 8u << 20);
  if (r.status == ProcessResult::Status::kInterrupted) throw RevisionInterrupted{};
  return r;
}

// git's output where it succeeded, else RevisionFailed naming the command.
std::string git_out(const std::string& repo, const std::vector<std::string>& args) {
  const ProcessResult r = git(repo, args);
  if (r.status != ProcessResult::Status::kExited || r.exit_code != 0) {
    std::string cmd = "git";
    for (const auto& a : args) cmd += " " + a;
    throw RevisionFailed(cmd + " in " + repo + " " + r.describe() + ": " + last_line_of(r.output));
  }
  return trimmed(r.output);
}

// The full commit id `rev` names; RevisionInputError naming the option where it names none.
std::string resolve(const std::string& repo, const std::string& rev, const std::string& option) {
  if (rev.empty() || rev[0] == '-') throw RevisionInputError(option + ": not a revision: " + quoted_for_message(rev));
  const ProcessResult r = git(repo, {"rev-parse", "--verify", "--quiet", "--end-of-options", rev + "^{commit}"});
  if (r.status != ProcessResult::Status::kExited || r.exit_code != 0) {
    throw RevisionInputError(option + ": unknown revision " + quoted_for_message(rev) + " in the git repository " +
                             repo);
  }
  return trimmed(r.output);
}

// good, then the first-parent commits good..bad, oldest first (bad last). RevisionInputError where good is
// not an ancestor of bad on its first-parent history.
std::vector<Commit> first_parent_range(const std::string& repo, const std::string& good, const std::string& bad,
                                       const std::string& good_text, const std::string& bad_text) {
  if (good == bad) throw RevisionInputError("--good and --bad are the same commit " + good);
  const ProcessResult anc = git(repo, {"merge-base", "--is-ancestor", good, bad});
  if (anc.status != ProcessResult::Status::kExited || anc.exit_code != 0) {
    throw RevisionInputError("--good: " + good_text + " (" + good.substr(0, 10) + ") is not an ancestor of --bad " +
                             bad_text + " (" + bad.substr(0, 10) + ")");
  }
  std::vector<Commit> out{{good, git_out(repo, {"log", "-1", "--format=%s", good})}};
  std::istringstream lines(git_out(repo, {"log", "--first-parent", "--reverse", "--format=%H %s", good + ".." + bad}));
  for (std::string line; std::getline(lines, line);) {
    if (line.size() < 40) continue;
    out.push_back({line.substr(0, 40), line.size() > 41 ? line.substr(41) : ""});
  }
  if (out.size() < 2 || git_out(repo, {"rev-parse", out[1].sha + "^1"}) != good) {
    throw RevisionInputError("--good: " + good_text + " is an ancestor of --bad " + bad_text +
                             " but not on its first-parent history (it came in through a merge): give a commit of the "
                             "first-parent line, e.g. the merge's first parent");
  }
  out.front().state = "good";
  return out;
}

// The configure options of this pairbench's own build (its CMakeCache.txt beside bin/): bisected
// commits are built as it was (build type, CUDA or not, layout variants, loop alignment); tests
// and fuzzing off.
std::vector<std::string> configure_args_like_this_build() {
  std::vector<std::string> out;
  std::ifstream cache(fs::path(default_bench_dir()).parent_path() / "CMakeCache.txt");
  bool build_type = false;
  for (std::string line; std::getline(cache, line);) {
    for (const char* name :
         {"CMAKE_BUILD_TYPE", "PAIRBENCH_WITH_CUDA", "PAIRBENCH_LAYOUT_VARIANTS", "PAIRBENCH_ALIGN_LOOPS"}) {
      const std::string prefix = std::string(name) + ":";
      if (line.rfind(prefix, 0) != 0) continue;
      const auto eq = line.find('=');
      if (eq == std::string::npos) continue;
      const std::string value = line.substr(eq + 1);
      if (std::string(name) == "CMAKE_BUILD_TYPE") {
        if (value.empty()) continue;
        build_type = true;
      }
      out.push_back("-D" + std::string(name) + "=" + value);
    }
  }
  if (!build_type) out.push_back("-DCMAKE_BUILD_TYPE=Release");
  out.push_back("-DPAIRBENCH_BUILD_TESTS=OFF");
  out.push_back("-DPAIRBENCH_FUZZ=OFF");
  return out;
}

// `program` found on PATH (run_process execs a path, no PATH search), "" where it is not there.
std::string on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (!dir.empty() && access((dir + "/" + program).c_str(), X_OK) == 0) return dir + "/" + program;
  }
  return "";
}

// `program` on PATH; RevisionFailed naming it where it is not installed.
std::string program(const std::string& name) {
  const std::string path = on_path(name);
  if (path.empty()) throw RevisionFailed(name + " is not on PATH (a revision is built and compared with it)");
  return path;
}

}  // namespace pairbench::harness
