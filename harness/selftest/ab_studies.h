// `pairbench selftest --ab-aa N`: `ab` of this build against itself, N times at ab's defaults (the
// experiments and budget as asked), every decided change counted. Identical builds have no change,
// so each regression or improvement is a false alarm of the whole procedure (sampling until
// decided, the regime rules and the statistics together), and the share of benchmarks ending
// `unchanged` is what a user comparing two builds can expect to be told.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "harness/exec/catalogue.h"

namespace pairbench::harness {

struct AbAaArgs {
  int repetitions = 20;     // ab runs
  std::string experiments;  // as ab's --experiments (empty: its default, the whole profile)
  std::string profile = "quick";
  double budget_s = -1;   // ab's --budget; < 0: ab's default
  std::string bench_dir;  // the build compared against itself
  std::string runs_dir;   // each ab's run files and gate JSON go to runs_dir/ab-aa-<k>
  std::string out;        // the summary as JSON (optional)
};

// Runs them; prints one line per ab and the totals. Exit status: 0 no decided change, 1 some
// decided change, 2 bad input, 3 an ab failed to run, 130/143 interrupted.
int selftest_ab_aa(const AbAaArgs& args);

// `pairbench selftest --ab-deep N`: `ab` of this build against itself with each benchmark selected
// alone, so that its sampling goes as deep as the budget and the cap allow (over many benchmarks
// sharing one budget each gets a few processes and a bias stays undecided). Each benchmark runs N
// times, its runs spread over three arrangements in turn: the same directory as both sides, the
// build against a byte-identical copy in another directory, and the copy against the build (sides
// swapped). Every decided change is a false alarm and is listed.
struct AbDeepArgs {
  int runs_per_benchmark = 5;
  std::vector<std::string> benchmarks;  // each run alone, in this order
  std::string profile = "quick";
  double budget_s = -1;   // ab's --budget; < 0: ab's default
  std::string bench_dir;  // the build compared against itself (and its copy)
  std::string runs_dir;   // the copy and each ab's files: runs_dir/copy/, runs_dir/<benchmark index>-<run>/
  std::string out;        // the summary as JSON (optional)
  std::uint64_t seed = 0;
};

// Exit status as selftest_ab_aa's.
int selftest_ab_deep(const AbDeepArgs& args);

// Its benchmarks: of `selected`, those that can run here, at most `per_experiment` of each
// experiment where it is > 0 (drawn with `seed`), in the catalogue's order.
std::vector<std::string> ab_deep_benchmarks(const std::vector<ExperimentEntry>& selected, int per_experiment,
                                            std::uint64_t seed);

}  // namespace pairbench::harness
