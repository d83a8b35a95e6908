// Runs one bench process with a time limit: its own process group (so a hung benchmark and its
// children are killed together), extra environment variables, stderr kept for the failure line.
// A SIGINT/SIGTERM to pairbench (harness/exec/interrupt.h) kills the running group at once and stops
// any further process from starting.
#pragma once

#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace pairbench::harness {

struct ProcessResult {
  // kInterrupted: pairbench got SIGINT/SIGTERM; the process was killed (or never started).
  enum class Status { kExited, kSignalled, kTimedOut, kSpawnFailed, kInterrupted };
  Status status = Status::kSpawnFailed;
  int exit_code = -1;  // kExited
  int signal = 0;      // kSignalled: what killed it; kInterrupted: what pairbench received
  double wall_s = 0;
  std::string output;            // stdout + stderr, the last keep_output_bytes (64 KiB unless asked)
  std::string describe() const;  // "exited 1", "killed by SIGSEGV", "timed out after 30 s"
};

// Blocks until the process ends, `limit` passes or pairbench is interrupted (then SIGKILLs its
// process group). Returns kInterrupted without starting anything once pairbench was interrupted.
// `cpu` >= 0 pins the process (and every thread it starts) to that CPU. Output beyond
// `keep_output_bytes` keeps its end (a failure's last lines); a reader of a whole document asks for more.
ProcessResult run_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& extra_env,
                          std::chrono::duration<double> limit, int cpu = -1, std::size_t keep_output_bytes = 64u << 10);
// The same, pinned to a set of CPUs (its threads share them; the scheduler places them within the
// set): a duet side that runs several threads. Empty: not pinned. `pass_fds`: descriptors of this
// process (opened close-on-exec) that the child keeps open under the same numbers (the duet
// start gate's, harness/exec/start_gate.h).
ProcessResult run_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& extra_env,
                          std::chrono::duration<double> limit, const std::vector<int>& cpus,
                          std::size_t keep_output_bytes = 64u << 10, const std::vector<int>& pass_fds = {});

}  // namespace pairbench::harness
