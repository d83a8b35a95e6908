// Child processes with a time limit, via fork/exec and a poll loop on a pipe.
#include "harness/exec/process.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "harness/exec/interrupt.h"

extern char** environ;

namespace pairbench::harness {

std::string ProcessResult::describe() const {
  switch (status) {
    case Status::kExited:
      return "exited " + std::to_string(exit_code);
    case Status::kSignalled: {
      const char* name = sigabbrev_np(signal);
      return std::string("killed by ") + (name ? std::string("SIG") + name : std::to_string(signal));
    }
    case Status::kTimedOut: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "timed out after %.0f s", wall_s);
      return buf;
    }
    case Status::kSpawnFailed:
      return "could not start: " + output;
    case Status::kInterrupted:
      return "stopped: pairbench was interrupted by " + signal_name(signal);
  }
  return "unknown";
}

ProcessResult run_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& extra_env,
                          std::chrono::duration<double> limit, int cpu, std::size_t keep_output_bytes) {
  return run_process(argv, extra_env, limit, cpu >= 0 ? std::vector<int>{cpu} : std::vector<int>{}, keep_output_bytes);
}

namespace {

using Clock = std::chrono::steady_clock;

// Everything the child needs, built before fork: only async-signal-safe calls after it.
struct ChildImage {
  std::vector<std::string> env_strings, argv_copy;
  std::vector<char*> envp, args;
  cpu_set_t cpu_set;
  bool pin = false;

  ChildImage(const std::vector<std::string>& argv, const std::map<std::string, std::string>& extra_env,
             const std::vector<int>& cpus)
      : argv_copy(argv) {
    for (char** e = environ; *e; ++e) {
      const std::string entry = *e;
      const std::string key = entry.substr(0, entry.find('='));
      if (!extra_env.count(key)) env_strings.push_back(entry);
    }
    for (const auto& [k, v] : extra_env) env_strings.push_back(k + "=" + v);
    for (auto& s : env_strings) envp.push_back(s.data());
    envp.push_back(nullptr);
    for (auto& s : argv_copy) args.push_back(s.data());
    args.push_back(nullptr);
    CPU_ZERO(&cpu_set);
    for (const int cpu : cpus) {
      if (cpu < 0 || cpu >= CPU_SETSIZE) continue;
      CPU_SET(cpu, &cpu_set);
      pin = true;
    }
  }
  ChildImage(const ChildImage&) = delete;
  ChildImage& operator=(const ChildImage&) = delete;
};

// In the child, after fork: its own process group, default signal handling, its cores, the pipe
// as stdout and stderr, then exec. Never returns.
[[noreturn]] void become_child(const ChildImage& image, int write_fd, const sigset_t& saved_mask,
                               const std::vector<int>& pass_fds) {
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  setpgid(0, 0);
  sigaction(SIGINT, &default_action, nullptr);
  sigaction(SIGTERM, &default_action, nullptr);
  sigprocmask(SIG_SETMASK, &saved_mask, nullptr);
  if (image.pin) sched_setaffinity(0, sizeof image.cpu_set, &image.cpu_set);  // inherited by exec and its threads
  dup2(write_fd, STDOUT_FILENO);
  dup2(write_fd, STDERR_FILENO);
  for (const int fd : pass_fds) fcntl(fd, F_SETFD, 0);  // this child's table only: kept across exec
  execve(image.args[0], image.args.data(), image.envp.data());
  const char msg[] = "execve failed\n";
  (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
  _exit(127);
}

struct Waited {
  bool timed_out = false, interrupted = false;
  int wait_status = 0;
};

// Reads the child's output (its last `keep_output_bytes`) until it is reaped: killed with its
// group at `limit` or on pairbench's interrupt. Closes `read_fd`.
Waited wait_for_child(pid_t pid, int read_fd, Clock::time_point start, std::chrono::duration<double> limit,
                      std::size_t keep_output_bytes, std::string& output) {
  Waited w;
  bool pipe_open = true;
  for (bool reaped = false; !reaped;) {
    const double left_ms = std::chrono::duration<double, std::milli>(limit - (Clock::now() - start)).count();
    if (left_ms <= 0 || interrupt_signal()) {
      kill(-pid, SIGKILL);
      (left_ms <= 0 ? w.timed_out : w.interrupted) = true;
      waitpid(pid, &w.wait_status, 0);
      break;
    }
    // The child's output and the interrupt self-pipe; once the output is closed, 2 ms steps.
    pollfd pfds[2] = {{read_fd, POLLIN, 0}, {interrupt_wake_fd(), POLLIN, 0}};
    pollfd* first = pipe_open ? &pfds[0] : &pfds[1];
    const nfds_t count = (pipe_open ? 1 : 0) + (pfds[1].fd >= 0 ? 1 : 0);
    const int wait_ms = pipe_open ? static_cast<int>(std::min(left_ms, 50.0)) + 1 : 2;
    const int ready = poll(count ? first : nullptr, count, wait_ms);
    if (ready > 0 && pipe_open && (pfds[0].revents & (POLLIN | POLLHUP))) {
      char buf[4096];
      const ssize_t n = read(read_fd, buf, sizeof buf);
      if (n > 0) {
        output.append(buf, static_cast<std::size_t>(n));
        if (output.size() > 2 * keep_output_bytes) output.erase(0, output.size() - keep_output_bytes);
      } else if (n == 0) {
        pipe_open = false;
      }
    }
    if (waitpid(pid, &w.wait_status, WNOHANG) == pid) reaped = true;
  }
  // Drain what is left in the pipe (the child has exited; a grandchild could still hold it).
  fcntl(read_fd, F_SETFL, O_NONBLOCK);
  char buf[4096];
  for (ssize_t n; (n = read(read_fd, buf, sizeof buf)) > 0;) output.append(buf, static_cast<std::size_t>(n));
  close(read_fd);
  if (output.size() > keep_output_bytes) output.erase(0, output.size() - keep_output_bytes);
  return w;
}

void set_status(ProcessResult& result, const Waited& w) {
  if (w.interrupted) {
    result.status = ProcessResult::Status::kInterrupted;
    result.signal = interrupt_signal();
  } else if (w.timed_out) {
    result.status = ProcessResult::Status::kTimedOut;
  } else if (WIFEXITED(w.wait_status)) {
    result.status = ProcessResult::Status::kExited;
    result.exit_code = WEXITSTATUS(w.wait_status);
  } else if (WIFSIGNALED(w.wait_status)) {
    result.status = ProcessResult::Status::kSignalled;
    result.signal = WTERMSIG(w.wait_status);
  }
}

}  // namespace

ProcessResult run_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& extra_env,
                          std::chrono::duration<double> limit, const std::vector<int>& cpus,
                          std::size_t keep_output_bytes, const std::vector<int>& pass_fds) {
  ProcessResult result;
  if (const int sig = interrupt_signal()) {
    result.status = ProcessResult::Status::kInterrupted;
    result.signal = sig;
    return result;
  }
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) {
    result.output = std::strerror(errno);
    return result;
  }
  const ChildImage image(argv, extra_env, cpus);
  // SIGINT/SIGTERM stay blocked in this thread from fork until the child's group is tracked (so
  // the handler's "kill every child group" cannot miss it) and in the child until its handlers
  // are back to the default (so it never runs pairbench's handler).
  sigset_t interrupts, saved_mask;
  sigemptyset(&interrupts);
  sigaddset(&interrupts, SIGINT);
  sigaddset(&interrupts, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &interrupts, &saved_mask);

  const auto start = Clock::now();
  const pid_t pid = fork();
  if (pid < 0) {
    pthread_sigmask(SIG_SETMASK, &saved_mask, nullptr);
    result.output = std::strerror(errno);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return result;
  }
  if (pid == 0) become_child(image, pipe_fds[1], saved_mask, pass_fds);
  setpgid(pid, pid);  // also from the parent: no race with the kill below
  track_child_group(pid);
  pthread_sigmask(SIG_SETMASK, &saved_mask, nullptr);
  close(pipe_fds[1]);

  const Waited waited = wait_for_child(pid, pipe_fds[0], start, limit, keep_output_bytes, result.output);
  kill(-pid, SIGKILL);  // leftovers of the group, if any
  untrack_child_group(pid);
  result.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  set_status(result, waited);
  return result;
}

}  // namespace pairbench::harness
