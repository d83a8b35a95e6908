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

ProcessResult run_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& extra_env,
                          std::chrono::duration<double> limit, const std::vector<int>& cpus,
                          std::size_t keep_output_bytes, const std::vector<int>& pass_fds) {
  using Clock = std::chrono::steady_clock;
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
  // Everything the child needs is built before fork: only async-signal-safe calls after it.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const std::string key = entry.substr(0, entry.find('='));
    if (!extra_env.count(key)) env_strings.push_back(entry);
  }
  for (const auto& [k, v] : extra_env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_copy = argv;
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  cpu_set_t cpu_set;
  CPU_ZERO(&cpu_set);
  bool pin = false;
  for (const int cpu : cpus) {
    if (cpu < 0 || cpu >= CPU_SETSIZE) continue;
    CPU_SET(cpu, &cpu_set);
    pin = true;
  }

  // SIGINT/SIGTERM stay blocked in this thread from fork until the child's group is tracked (so
  // the handler's "kill every child group" cannot miss it) and in the child until its handlers
  // are back to the default (so it never runs pairbench's handler).
  sigset_t interrupts, saved_mask;
  sigemptyset(&interrupts);
  sigaddset(&interrupts, SIGINT);
  sigaddset(&interrupts, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &interrupts, &saved_mask);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);

  const auto start = Clock::now();
  const pid_t pid = fork();
  if (pid < 0) {
    pthread_sigmask(SIG_SETMASK, &saved_mask, nullptr);
    result.output = std::strerror(errno);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    return result;
  }
  if (pid == 0) {
    setpgid(0, 0);
    sigaction(SIGINT, &default_action, nullptr);
    sigaction(SIGTERM, &default_action, nullptr);
    sigprocmask(SIG_SETMASK, &saved_mask, nullptr);
    if (pin) sched_setaffinity(0, sizeof cpu_set, &cpu_set);  // inherited by exec and its threads
    dup2(pipe_fds[1], STDOUT_FILENO);
    dup2(pipe_fds[1], STDERR_FILENO);
    for (const int fd : pass_fds) fcntl(fd, F_SETFD, 0);  // this child's table only: kept across exec
    execve(args[0], args.data(), envp.data());
    const char msg[] = "execve failed\n";
    (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
    _exit(127);
  }
  setpgid(pid, pid);  // also from the parent: no race with the kill below
  track_child_group(pid);
  pthread_sigmask(SIG_SETMASK, &saved_mask, nullptr);
  close(pipe_fds[1]);

  bool timed_out = false, interrupted = false;
  bool pipe_open = true;
  int wait_status = 0;
  bool reaped = false;
  while (!reaped) {
    const double left_ms = std::chrono::duration<double, std::milli>(limit - (Clock::now() - start)).count();
    if (left_ms <= 0) {
      kill(-pid, SIGKILL);
      timed_out = true;
      waitpid(pid, &wait_status, 0);
      reaped = true;
      break;
    }
    if (interrupt_signal()) {
      kill(-pid, SIGKILL);
      interrupted = true;
      waitpid(pid, &wait_status, 0);
      reaped = true;
      break;
    }
    // The child's output and the interrupt self-pipe; once the output is closed, 2 ms steps.
    pollfd pfds[2] = {{pipe_fds[0], POLLIN, 0}, {interrupt_wake_fd(), POLLIN, 0}};
    pollfd* first = pipe_open ? &pfds[0] : &pfds[1];
    const nfds_t count = (pipe_open ? 1 : 0) + (pfds[1].fd >= 0 ? 1 : 0);
    const int wait_ms = pipe_open ? static_cast<int>(std::min(left_ms, 50.0)) + 1 : 2;
    const int ready = poll(count ? first : nullptr, count, wait_ms);
    if (ready > 0 && pipe_open && (pfds[0].revents & (POLLIN | POLLHUP))) {
      char buf[4096];
      const ssize_t n = read(pipe_fds[0], buf, sizeof buf);
      if (n > 0) {
        result.output.append(buf, static_cast<std::size_t>(n));
        if (result.output.size() > 2 * keep_output_bytes) {
          result.output.erase(0, result.output.size() - keep_output_bytes);
        }
      } else if (n == 0) {
        pipe_open = false;
      }
    }
    if (waitpid(pid, &wait_status, WNOHANG) == pid) reaped = true;
  }
  // Drain what is left in the pipe (the child has exited; a grandchild could still hold it).
  fcntl(pipe_fds[0], F_SETFL, O_NONBLOCK);
  char buf[4096];
  for (ssize_t n; (n = read(pipe_fds[0], buf, sizeof buf)) > 0;) result.output.append(buf, static_cast<std::size_t>(n));
  close(pipe_fds[0]);
  if (result.output.size() > keep_output_bytes) result.output.erase(0, result.output.size() - keep_output_bytes);
  kill(-pid, SIGKILL);  // leftovers of the group, if any
  untrack_child_group(pid);

  result.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  if (interrupted) {
    result.status = ProcessResult::Status::kInterrupted;
    result.signal = interrupt_signal();
  } else if (timed_out) {
    result.status = ProcessResult::Status::kTimedOut;
  } else if (WIFEXITED(wait_status)) {
    result.status = ProcessResult::Status::kExited;
    result.exit_code = WEXITSTATUS(wait_status);
  } else if (WIFSIGNALED(wait_status)) {
    result.status = ProcessResult::Status::kSignalled;
    result.signal = WTERMSIG(wait_status);
  }
  return result;
}

}  // namespace pairbench::harness
