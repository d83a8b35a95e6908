// SIGINT and SIGTERM for the whole pairbench process. The handler only does async-signal-safe
// things: it records the signal in a lock-free atomic, writes a byte to a self-pipe that waiting
// loops poll beside their own descriptors, and (when the process is to end at once) SIGKILLs the
// process groups of the children it knows and calls _exit.
// Commands that measure (run, ab, selftest) or wait on a child (report, history import) finish
// up on the first signal: they stop launching, kill the running children's groups, keep what was
// measured and exit 130 (SIGINT) / 143 (SIGTERM). A second signal, and the first one in every
// other command, kills the children's groups and exits at once with the same status.
#pragma once

#include <sys/types.h>

#include <string>

namespace pairbench::harness {

enum class OnInterrupt {
  kExit,      // kill the children's process groups and _exit(128 + signal) at once
  kFinishUp,  // record the signal; the command stops and keeps its results (a second signal exits)
};

// Installs the handlers (once, from main; later calls only change the mode).
void install_interrupt_handlers(OnInterrupt mode);

// 0 until SIGINT or SIGTERM arrived, then that signal's number.
int interrupt_signal();

// Readable from the moment a signal arrived (and forever after); -1 before installation.
int interrupt_wake_fd();

// 128 + the signal: 130 for SIGINT, 143 for SIGTERM.
int interrupted_exit_status();

// "SIGINT", "SIGTERM", else "signal N".
std::string signal_name(int signal);

// Sleeps up to `seconds`, returning early (false) when a signal arrives.
bool sleep_unless_interrupted(double seconds);

// Child process groups the handler SIGKILLs before exiting at once (a fixed table of 16: duet
// runs have two children at a time; further ones are not tracked). Call with signals blocked
// between fork and registration so that no child escapes the table.
void track_child_group(pid_t pgid);
void untrack_child_group(pid_t pgid);

// `status` unchanged, or after a signal: one line on stderr saying the results written above are
// partial, and interrupted_exit_status(). For commands whose own code does not know about signals.
int exit_status_after_interrupt(int status);

}  // namespace pairbench::harness
