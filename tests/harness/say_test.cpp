// Output through one place with levels (harness/exec/say.h): `--quiet` leaves progress out but
// keeps warnings, failures and the results; `--verbose` adds each process's launch; the default is
// the progress as it always was; both at once is refused. On the known-work bench (no timing asserted).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "harness/exec/process.h"
#include "harness/exec/say.h"
#include "kernels/common/scratch.h"

namespace pairbench::harness {
namespace {

ProcessResult run_with(const std::vector<std::string>& levels, const std::string& out) {
  std::vector<std::string> argv = {PAIRBENCH_EXE};
  argv.insert(argv.end(), levels.begin(), levels.end());
  for (const char* a : {"run", "--bench-dir", TIMING_BENCH_DIR, "--experiments", "timing.work", "--repetitions", "2",
                        "--no-history", "--instruction-processes", "0", "--min-time", "0.002"}) {
    argv.emplace_back(a);
  }
  argv.insert(argv.end(), {"--out", out});
  return run_process(argv, {}, std::chrono::seconds(300));
}

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

TEST(Say, QuietLeavesProgressOutVerboseAddsLaunches) {
  kernels::TempDir dir("pairbench-say");
  const std::string out = dir.path().string() + "/run.json";
  const ProcessResult normal = run_with({}, out);
  ASSERT_EQ(normal.exit_code, 0) << normal.output;
  EXPECT_TRUE(has(normal.output, "[1/")) << normal.output;
  EXPECT_FALSE(has(normal.output, "pairbench: launch ")) << normal.output;

  const ProcessResult quiet = run_with({"--quiet"}, out);
  ASSERT_EQ(quiet.exit_code, 0) << quiet.output;
  EXPECT_FALSE(has(quiet.output, "[1/")) << quiet.output;
  EXPECT_FALSE(has(quiet.output, "s of process wall")) << quiet.output;  // the wall-split note
  EXPECT_TRUE(has(quiet.output, "work:100000")) << quiet.output;         // the results stay
  EXPECT_TRUE(has(quiet.output, "wrote " + out)) << quiet.output;

  const ProcessResult verbose = run_with({"--verbose"}, out);
  ASSERT_EQ(verbose.exit_code, 0) << verbose.output;
  EXPECT_TRUE(has(verbose.output, "pairbench: launch ")) << verbose.output;
  EXPECT_TRUE(has(verbose.output, "[1/")) << verbose.output;

  const ProcessResult both = run_with({"--quiet", "--verbose"}, out);
  EXPECT_EQ(both.exit_code, 2) << both.output;
  EXPECT_TRUE(has(both.output, "--quiet excludes --verbose")) << both.output;

  // The levels are taken out before parsing: a nested command still refuses what it does not know
  // (no fall-through to its parent's options).
  const ProcessResult stray = run_process({PAIRBENCH_EXE, "--quiet", "history", "export", "stray", "--out", out + ".x"},
                                          {}, std::chrono::seconds(60));
  EXPECT_EQ(stray.exit_code, 2) << stray.output;
  EXPECT_TRUE(has(stray.output, "not expected: stray")) << stray.output;
}

TEST(Say, ALineIsSaidOnlyAtOrBelowTheSessionsLevel) {
  set_verbosity(Verbosity::quiet);
  EXPECT_TRUE(speaks(Verbosity::quiet));
  EXPECT_FALSE(speaks(Verbosity::normal));
  set_verbosity(Verbosity::verbose);
  EXPECT_TRUE(speaks(Verbosity::normal));
  EXPECT_TRUE(speaks(Verbosity::verbose));
  set_verbosity(Verbosity::normal);
  EXPECT_FALSE(speaks(Verbosity::verbose));
}

}  // namespace
}  // namespace pairbench::harness
