// `pairbench bisect`'s work: the first commit between a good and a bad revision that made the
// matching benchmarks slower. Builds the commits it needs in one git worktree with one build
// directory (incremental), compares them with `pairbench ab` (sampling until decided), halves the
// range each step, skips commits that do not build or whose benchmarks fail, and re-checks the
// culprit against its parent before naming it (docs/bisect.md). cli/bisect.cpp is its face.
#pragma once

#include <string>

namespace pairbench::harness {

// The environment variables a --build-command sees (besides the caller's).
inline constexpr const char* kBisectBuildDirEnv = "PAIRBENCH_BISECT_BUILD_DIR";
inline constexpr const char* kBisectCommitEnv = "PAIRBENCH_BISECT_COMMIT";
inline constexpr const char* kBisectTargetsEnv = "PAIRBENCH_BISECT_TARGETS";

struct BisectOptions {
  std::string good, bad, benchmarks, json, work_dir, build_command, profile = "quick";
  double budget_s = 1800;    // the whole bisection, builds included
  double ab_budget_s = 180;  // each comparison (ab --budget)
  double threshold = 0;      // 0: ab's default
};

// Bisects from the git repository holding the current directory, printing each step; returns the
// exit status (0 named, 3 failed, 4 inconclusive, 130/143 interrupted: command_bisect's list).
// Bad input throws RevisionInputError (harness/revisions/git.h) naming the option.
int run_bisection(const BisectOptions& options);

}  // namespace pairbench::harness
