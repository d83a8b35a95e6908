// The run's scratch directory, and what a run cut short left of earlier ones. A second SIGINT or
// SIGTERM ends pairbench at once (_exit from the handler: no destructor runs), as does SIGKILL,
// which leaves $TMPDIR/pairbench-run-<pid>-XXXXXX behind with the processes' records in it. Each
// run therefore names its directory after its pid and, before making it, removes every such
// directory of ours whose pid is no longer alive.
#pragma once

#include <filesystem>
#include <string>

namespace pairbench::harness {

// "pairbench-run-<pid>": the prefix of this process's scratch directory (kernels::TempDir adds -XXXXXX).
std::string run_scratch_prefix();

// Removes $TMPDIR/pairbench-run-<pid>-* (or under `dir`) whose pid is not a live process and which
// this user owns; returns how many were removed. Never throws: a leftover is the worst case.
int remove_stale_run_scratch(const std::filesystem::path& dir = {});

}  // namespace pairbench::harness
