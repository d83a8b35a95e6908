// The SIGINT/SIGTERM handler, its self-pipe and the table of child process groups.
#include "harness/exec/interrupt.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>

#include "harness/exec/say.h"

namespace pairbench::harness {
namespace {

constexpr int kTrackedGroups = 16;

std::atomic<int> g_signal{0};  // the first signal received
std::atomic<int> g_count{0};   // signals received
std::atomic<int> g_mode{static_cast<int>(OnInterrupt::kExit)};
std::atomic<pid_t> g_groups[kTrackedGroups] = {};  // 0 = free slot
int g_wake_read = -1, g_wake_write = -1;           // set once, before the handler is installed

static_assert(std::atomic<int>::is_always_lock_free && std::atomic<pid_t>::is_always_lock_free,
              "the signal handler may touch lock-free atomics only");

void kill_tracked_groups() {
  for (auto& g : g_groups) {
    if (const pid_t pgid = g.load(); pgid > 0) kill(-pgid, SIGKILL);
  }
}

// Async-signal-safe only: atomics, write, kill, _exit.
void on_signal(int sig) {
  const int saved_errno = errno;
  int expected = 0;
  g_signal.compare_exchange_strong(expected, sig);
  const int count = ++g_count;
  if (g_wake_write >= 0) {
    const char byte = 1;
    (void)!write(g_wake_write, &byte, 1);  // non-blocking: a full pipe is already readable
  }
  if (count > 1 || g_mode.load() == static_cast<int>(OnInterrupt::kExit)) {
    kill_tracked_groups();
    if (count > 1) {
      const char msg[] = "\npairbench: second interrupt: children killed, exiting without writing results\n";
      (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
    }
    _exit(128 + g_signal.load());
  }
  errno = saved_errno;
}

}  // namespace

void install_interrupt_handlers(OnInterrupt mode) {
  g_mode = static_cast<int>(mode);
  if (g_wake_read >= 0) return;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) == 0) g_wake_read = fds[0], g_wake_write = fds[1];
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  sigaddset(&action.sa_mask, SIGINT);  // one handler at a time: the count stays exact
  sigaddset(&action.sa_mask, SIGTERM);
  action.sa_flags = SA_RESTART;  // reads and writes go on; waiting loops poll the wake fd
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

int interrupt_signal() { return g_signal.load(); }

int interrupt_wake_fd() { return g_wake_read; }

int interrupted_exit_status() { return 128 + g_signal.load(); }

std::string signal_name(int signal) {
  if (signal == SIGINT) return "SIGINT";
  if (signal == SIGTERM) return "SIGTERM";
  return "signal " + std::to_string(signal);
}

bool sleep_unless_interrupted(double seconds) {
  using Clock = std::chrono::steady_clock;
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (!interrupt_signal()) {
    const double left_ms = std::chrono::duration<double, std::milli>(end - Clock::now()).count();
    if (left_ms <= 0) return true;
    pollfd pfd{interrupt_wake_fd(), POLLIN, 0};
    // Without a wake fd (handlers not installed) this is a plain sleep in 50 ms steps.
    poll(pfd.fd >= 0 ? &pfd : nullptr, pfd.fd >= 0 ? 1 : 0, static_cast<int>(std::min(left_ms, 50.0)) + 1);
  }
  return false;
}

void track_child_group(pid_t pgid) {
  for (auto& g : g_groups) {
    pid_t free_slot = 0;
    if (g.compare_exchange_strong(free_slot, pgid)) return;
  }
}

void untrack_child_group(pid_t pgid) {
  for (auto& g : g_groups) {
    pid_t mine = pgid;
    if (g.compare_exchange_strong(mine, 0)) return;
  }
}

int exit_status_after_interrupt(int status) {
  if (!interrupt_signal()) return status;
  say(Verbosity::quiet) << "pairbench: interrupted by " << signal_name(interrupt_signal())
                        << ": the results written above are partial (marked 'interrupted')\n";
  return interrupted_exit_status();
}

}  // namespace pairbench::harness
