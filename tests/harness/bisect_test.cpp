// `pairbench bisect` on a throw-away git history the test makes: 8 commits whose tiny build script
// copies the prebuilt simulated bench with this commit's declared change beside it (tests/bench/
// sim_bench.cpp: 30 % more time and more work per iteration, so that what each step decides
// follows from the declaration, not from the machine's load). The 5th plants it and must be named; the 6th does not build and
// must be skipped; where the culprit's parent does not build, the range is named. Bad revisions
// are one line and exit 2 before anything is built.
#include <cstdlib>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/exec/process.h"
#include "kernels/common/scratch.h"

namespace pairbench::harness {
namespace {

// The build of every commit: bench_sim and its declaration (work.txt's factor as the change in time
// and in work of case a, 1 % noise between processes), into $PAIRBENCH_BISECT_BUILD_DIR/bin; a
// work.txt that is not a number fails the build.
constexpr const char* kBuildScript = R"(#!/bin/sh
set -e
factor=$(cat work.txt)
case "$factor" in ''|*[!0-9.]*) echo "work.txt: not a number: $factor" >&2; exit 1;; esac
change=$(awk "BEGIN { print $factor - 1 }")
mkdir -p "$PAIRBENCH_BISECT_BUILD_DIR/bin"
cp "$1" "$PAIRBENCH_BISECT_BUILD_DIR/bin/bench_sim"
printf '{"cases": {"a": {"process_sd": 0.01, "change": %s, "work": 2000, "work_change": %s}}}\n' "$change" "$change" \
  > "$PAIRBENCH_BISECT_BUILD_DIR/bin/bench_sim.sim"
)";

ProcessResult in_dir(const std::string& dir, std::vector<std::string> argv, double limit_s = 60) {
  argv.insert(argv.begin(), {"/bin/sh", "-c", "cd -- \"$0\" && exec \"$@\"", dir});
  return run_process(argv, {}, std::chrono::duration<double>(limit_s), -1, 4u << 20);
}

std::string git(const std::string& dir, std::vector<std::string> args) {
  args.insert(args.begin(), {"git", "-c", "user.name=pairbench test", "-c", "user.email=test@pairbench.invalid"});
  const ProcessResult r = in_dir(dir, args);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::string out = r.output;
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// The throw-away history: commit k (1..8) sets work.txt to works[k-1]; returns the commits' ids.
struct History {
  kernels::TempDir dir{"pairbench-bisect"};
  std::string path = dir.path().string();
  std::vector<std::string> commits;

  explicit History(const std::vector<std::string>& works) {
    git(path, {"init", "-q"});
    std::ofstream(path + "/build.sh") << kBuildScript;
    for (std::size_t k = 0; k < works.size(); ++k) {
      std::ofstream(path + "/work.txt") << works[k] << "\n";
      std::ofstream(path + "/notes.txt", std::ios::app) << "commit " << k + 1 << "\n";
      git(path, {"add", "build.sh", "work.txt", "notes.txt"});
      git(path, {"commit", "-q", "-m",
                 "commit " + std::to_string(k + 1) +
                     (works[k] == "1.3" && (k == 0 || works[k - 1] != "1.3") ? ": plant 30 % more work" : "")});
      commits.push_back(git(path, {"rev-parse", "HEAD"}));
    }
  }

  ProcessResult bisect(std::vector<std::string> args, double limit_s = 300) const {
    args.insert(args.begin(),
                {PAIRBENCH_EXE, "bisect", "--build-command", std::string("sh build.sh ") + SIM_BENCH_EXE});
    return in_dir(path, args, limit_s);
  }
};

nlohmann::json read(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

int line_count(const std::string& s) {
  int n = 0;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) n += !line.empty();
  return n;
}

TEST(Bisect, NamesThePlantedSlowdownAndSkipsTheCommitThatDoesNotBuild) {
  // Commit 5 plants the slowdown; 6 does not build; 7 builds again (still slow).
  const History h({"1", "1", "1", "1", "1.3", "broken", "1.3", "1.3"});
  const std::string json = h.path + "/bisect.json";
  const ProcessResult r =
      h.bisect({"--good", h.commits[0], "--bad", h.commits[7], "--benchmarks", "^sim\\.declared/sim/case:a$",
                "--ab-budget", "60", "--budget", "900", "--json", json},
               1200);
  ASSERT_EQ(r.status, ProcessResult::Status::kExited) << r.describe() << "\n" << r.output;
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("first_bad: " + h.commits[4]), std::string::npos) << r.output;
  // Where it got slower: the re-check counted instructions, and the function the planted work runs
  // in added the most (valgrind is a test dependency: where it is missing the line says why).
  if (std::system("command -v valgrind >/dev/null 2>&1") == 0) {
    const auto where = r.output.find("where: sim.declared/sim/case:a [instructions]");
    ASSERT_NE(where, std::string::npos) << r.output;
    const auto next = r.output.find("\n", r.output.find("\n", where) + 1);
    EXPECT_NE(r.output.substr(where, next - where).find("sim_steps"), std::string::npos) << r.output;
  }

  const nlohmann::json j = read(json);
  EXPECT_EQ(j["outcome"], "named");
  EXPECT_EQ(j["first_bad"], h.commits[4]);
  EXPECT_EQ(j["good"], h.commits[0]);
  EXPECT_EQ(j["bad"], h.commits[7]);
  // Only the benchmark the expression names was compared (cases b, c and d left alone).
  EXPECT_EQ(j["bisected_benchmarks"], nlohmann::json::array({"sim.declared/sim/case:a"}));
  ASSERT_TRUE(j["change"].is_object()) << j.dump(2);
  EXPECT_EQ(j["change"]["verdict"], "regression");
  EXPECT_GT(j["change"]["change_low"].get<double>(), 0.0) << j.dump(2);  // slower, the whole interval

  // The steps: good vs bad first, the re-check last (the culprit against its parent), and the commit
  // that does not build skipped, saying why; every step has its time.
  const auto& steps = j["steps"];
  ASSERT_GE(steps.size(), 3u) << j.dump(2);
  EXPECT_EQ(steps.front()["role"], "check");
  EXPECT_EQ(steps.front()["verdict"], "regression");
  EXPECT_EQ(steps.back()["role"], "recheck");
  EXPECT_EQ(steps.back()["commit"], h.commits[4]);
  EXPECT_EQ(steps.back()["baseline"], h.commits[3]);
  bool skipped_broken = false;
  for (const auto& s : steps) {
    EXPECT_GE(s["seconds"].get<double>(), 0.0);
    if (s["commit"] == h.commits[5]) {
      EXPECT_TRUE(s["skipped"].get<bool>()) << s.dump(2);
      EXPECT_NE(s["why"].get<std::string>().find("does not build"), std::string::npos) << s.dump(2);
      skipped_broken = true;
    }
    EXPECT_NE(s["commit"], h.commits[6]) << "log2(7) steps need not test commit 7";
  }
  EXPECT_TRUE(skipped_broken) << j.dump(2);
  EXPECT_NE(r.output.find("skipped"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("does not build"), std::string::npos) << r.output;
}

// The culprit's parent does not build: the first bad commit is that one or the next, and bisect says
// so (exit 4, the range in the JSON), after the re-check of the range's two ends.
TEST(Bisect, ASkippedParentLeavesARangeNamed) {
  const History h({"1", "1", "1", "broken", "1.3", "1.3"});
  const std::string json = h.path + "/bisect.json";
  const ProcessResult r = h.bisect({"--good", h.commits[0], "--bad", h.commits[5], "--benchmarks",
                                    "^sim\\.declared/sim/case:a$", "--ab-budget", "60", "--json", json},
                                   900);
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_NE(r.output.find("first_bad: none: ambiguous because of skipped commits"), std::string::npos) << r.output;
  const nlohmann::json j = read(json);
  EXPECT_EQ(j["outcome"], "ambiguous");
  EXPECT_TRUE(j["first_bad"].is_null());
  EXPECT_EQ(j["range"]["last_good"], h.commits[2]);
  EXPECT_EQ(j["range"]["first_bad_candidates"], nlohmann::json::array({h.commits[3], h.commits[4]}));
  EXPECT_EQ(j["steps"].back()["role"], "recheck");
  EXPECT_EQ(j["steps"].back()["verdict"], "regression");
}

// Bad revisions: one line naming the argument, exit 2, nothing built.
TEST(Bisect, BadRevisionsAreOneLineAndExit2) {
  const History h({"1", "1", "1"});
  struct Case {
    std::vector<std::string> args;
    std::string what;
  };
  for (const Case& c : std::vector<Case>{
           {{"--good", "no-such-rev", "--bad", h.commits[2]}, "--good: unknown revision \"no-such-rev\""},
           {{"--good", h.commits[0], "--bad", "v9.9"}, "--bad: unknown revision \"v9.9\""},
           {{"--good", h.commits[2], "--bad", h.commits[0]}, "is not an ancestor of --bad"},
           {{"--good", h.commits[1], "--bad", h.commits[1]}, "the same commit"},
           {{"--good", h.commits[0], "--bad", h.commits[2], "--benchmarks", "planted(["}, "--benchmarks"},
       }) {
    SCOPED_TRACE(c.what);
    std::vector<std::string> args = c.args;
    if (std::find(args.begin(), args.end(), "--benchmarks") == args.end())
      args.insert(args.end(), {"--benchmarks", "planted"});
    const ProcessResult r = h.bisect(args, 60);
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(line_count(r.output), 1) << r.output;
    EXPECT_NE(r.output.find(c.what), std::string::npos) << r.output;
  }
  std::error_code ec;
  EXPECT_FALSE(std::filesystem::exists(h.path + "/.pairbench-bisect/build", ec));
}

}  // namespace
}  // namespace pairbench::harness
