// `pairbench bisect`: its options, help and exit statuses; the bisection itself is
// harness/revisions/bisection.h (docs/bisect.md).
#include <memory>
#include <string>

#include "harness/cli/command.h"
#include "harness/cli/options.h"
#include "harness/revisions/bisection.h"
#include "harness/revisions/git.h"
#include "harness/store/file_checks.h"

namespace pairbench::harness {

namespace {

int cmd_bisect(const BisectOptions& args) {
  if (!args.json.empty()) {
    try {
      check_writable(args.json);
    } catch (const std::exception& e) {
      throw UsageError(std::string("--json: ") + e.what());
    }
  }
  try {
    return run_bisection(args);
  } catch (const RevisionInputError& e) {
    throw UsageError(e.what());
  }
}

}  // namespace

Command command_bisect() {
  return {"bisect", "find the first commit between a good and a bad revision that made benchmarks slower",
          "0 the first bad commit named (re-checked against its parent); 2 bad input (an unknown revision, good not a "
          "first-parent ancestor of bad, no benchmark matching); 3 good or bad does not build or its benchmarks fail, "
          "git or ab failed, or --json could not be written; 4 inconclusive: bad is no decided regression against "
          "good, the re-check did not confirm the culprit, skipped or undecided commits leave a range (named), or "
          "the budget ran out (the range so far named); 130/143 interrupted by SIGINT/SIGTERM",
          "a bench binary's listing or ab's gate JSON (bisect)", [](CLI::App& cmd) -> CommandAction {
            auto a = std::make_shared<BisectOptions>();
            cmd.add_option("--good", a->good, "a revision without the regression (the older end)")->required();
            cmd.add_option("--bad", a->bad,
                           "a revision with it (the newer end; good must be on its first-parent history)")
                ->required();
            cmd.add_option("--benchmarks", a->benchmarks,
                           "regular expression on benchmark names (ECMAScript, anywhere in the name); only the bench "
                           "binaries of their areas (bench_<area>) are built")
                ->required()
                ->check(benchmark_regex());
            cmd.add_option("--budget", a->budget_s,
                           "seconds of wall time for the whole bisection, builds included (default 1800); a part of it "
                           "is kept for the re-check")
                ->check(finite_in(1, 7 * 86400.0));
            cmd.add_option("--ab-budget", a->ab_budget_s,
                           "seconds for each comparison (ab --budget: more processes until decided; default 180)")
                ->check(finite_in(1, 86400.0));
            cmd.add_option("--profile", a->profile, "the profile ab runs (its grid names the benchmarks)")
                ->check(CLI::IsMember(kProfiles));
            cmd.add_option("--threshold", a->threshold, "ab --threshold (default: the gate's)")
                ->check(finite_in(0.0001, 10.0));
            cmd.add_option("--work-dir", a->work_dir,
                           "where the worktree, the build directory, each tested commit's bench binaries and the "
                           "comparisons go (default .pairbench-bisect/ in the repository; reused by later bisections)")
                ->check(path_is(directory_or_absent_problem, "DIR"));
            cmd.add_option("--build-command", a->build_command,
                           "shell command that builds the checked-out commit, run in the worktree, instead of cmake "
                           "configured as this pairbench's build: it finds the build directory in $" +
                               std::string(kBisectBuildDirEnv) + ", the commit in $" + kBisectCommitEnv +
                               " and the bench targets "
                               "needed in $" +
                               kBisectTargetsEnv +
                               " (empty when not known), and leaves bench_<area> binaries "
                               "in $" +
                               kBisectBuildDirEnv + "/bin (or in it); a non-zero exit skips the commit");
            cmd.add_option("--json", a->json, "also write the bisection as JSON (atomically)")
                ->check(path_is(regular_file_or_absent_problem, "FILE"));
            return [a](const std::string&) {
              finish_up_on_interrupt();
              return cmd_bisect(*a);
            };
          }};
}

}  // namespace pairbench::harness
