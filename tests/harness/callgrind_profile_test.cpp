// Reading callgrind's function-level totals (harness/exec/callgrind_profile.h): a real output file
// of bench_timing (checked in, tests/fixtures/callgrind/), checked against Debian's
// callgrind_annotate where installed; the format's compressions; and files it must refuse with a
// clear message, a truncated one first.
#include "harness/exec/callgrind_profile.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <regex>
#include <sstream>

#include "harness/exec/instructions.h"
#include "harness/exec/process.h"

namespace pairbench::harness {
namespace {
namespace fs = std::filesystem;

// bench_timing's timing.work/steps/work:1000, 4 iterations (3 counted), 100 work loops planted per
// region (PAIRBENCH_INJECT_LOOPS=100), under `valgrind --tool=callgrind --instr-atstart=no
// --collect-atstart=no` (valgrind 3.19, Debian 12; its header's `summary:` is 0, collection
// starting off, and its `totals:` the count).
const std::string kFixture = std::string(FIXTURES_DIR) + "/callgrind/bench_timing.callgrind";

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/pairbench-callgrind-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name, const std::string& text) const {
    std::ofstream(path + "/" + name) << text;
    return path + "/" + name;
  }
};

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The message read_callgrind_profile refuses `path` with ("" when it reads it).
std::string refusal(const std::string& path) {
  try {
    read_callgrind_profile(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(CallgrindProfile, ReadsTheFixtureIntoSelfCostsThatAddUpToTheTotal) {
  const CallgrindProfile p = read_callgrind_profile(kFixture);
  EXPECT_EQ(p.total, read_callgrind_total(kFixture).value());
  const auto sum = std::accumulate(p.functions.begin(), p.functions.end(), std::uint64_t{0},
                                   [](std::uint64_t s, const FunctionCost& f) { return s + f.instructions; });
  EXPECT_EQ(sum, p.total);
  ASSERT_GE(p.functions.size(), 2u);
  for (std::size_t i = 1; i < p.functions.size(); ++i)
    EXPECT_GE(p.functions[i - 1].instructions, p.functions[i].instructions);
  // The timed work (3 counted regions of 1000 xorshift steps, inlined into the arm) comes first, the
  // planted loops (3 x 100 x kInjectedInstructionsPerLoop) in their own function; names demangled.
  EXPECT_EQ(p.functions[0].function,
            "pairbench::bench::(anonymous namespace)::steps_arm(benchmark::State&, pairbench::bench::Point const&)");
  EXPECT_GE(p.functions[0].instructions, 3u * 1000 * 6);
  bool planted = false;
  for (const FunctionCost& f : p.functions) {
    EXPECT_EQ(f.function.rfind("_Z", 0), std::string::npos) << f.function;
    if (f.function == "pairbench::bench::injected_work_loop(unsigned long)") {
      planted = true;
      EXPECT_NEAR(static_cast<double>(f.instructions), 3 * 100 * kInjectedInstructionsPerLoop, 3 * 20.0);
    }
  }
  EXPECT_TRUE(planted);
}

// callgrind_annotate lists self costs per file:function (code inlined from a header is its own
// line); summed per function they must be ours.
TEST(CallgrindProfile, AgreesWithCallgrindAnnotate) {
  if (access("/usr/bin/callgrind_annotate", X_OK) != 0) GTEST_SKIP() << "skipped: callgrind_annotate is not installed";
  const ProcessResult r = run_process({"/usr/bin/callgrind_annotate", "--threshold=100", "--inclusive=no", kFixture},
                                      {}, std::chrono::seconds(60), -1, std::size_t{1} << 22);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // "  1,234 (12.34%)  file:function [object]"
  const std::regex line(R"(^\s*([0-9,]+) \(\s*[0-9.]+%\)  ([^:]*):(.*?)( \[[^\]]*\])?$)");
  std::map<std::string, std::uint64_t> annotate;
  std::istringstream out(r.output);
  for (std::string l; std::getline(out, l);) {
    std::smatch m;
    if (!std::regex_match(l, m, line)) continue;
    std::string digits = m[1];
    std::erase(digits, ',');
    annotate[m[3]] += std::stoull(digits);
  }
  std::map<std::string, std::uint64_t> ours;
  for (const FunctionCost& f : read_callgrind_profile(kFixture).functions) ours[f.function] = f.instructions;
  ASSERT_FALSE(annotate.empty()) << r.output;
  EXPECT_EQ(ours, annotate);
}

TEST(CallgrindProfile, CallCostsAreNotTheCallersAndCompressedNamesResolve) {
  TempDir dir;
  // caller: 10 of its own + a call costing 500 (the callee's, counted under the callee); ids reused.
  const std::string f = dir.file("a",
                                 "# callgrind format\nversion: 1\npositions: instr line\nevents: Dr Ir\n"
                                 "summary: 0 0\n\n"
                                 "fl=(1) a.cpp\nfn=(1) caller(int)\n0x10 3 1 4\n+2 * 1 6\n"
                                 "cfn=(2) callee<std::string>()\ncalls=1 0x40 9\n0x12 4 0 500\n"
                                 "fn=(2)\nfi=(2) b.h\n0x40 9 1 300\nfe=(1)\n+1 1 0 200\n"
                                 "fn=(3) empty()\n0x50 1 0\n\n"
                                 "fn=(1)\n0x13 4 0 5\ntotals: 2 515\n");
  const CallgrindProfile p = read_callgrind_profile(f);
  EXPECT_EQ(p.total, 515u);
  ASSERT_EQ(p.functions.size(), 2u);  // empty() had no instructions
  EXPECT_EQ(p.functions[0].function, "callee<std::string>()");
  EXPECT_EQ(p.functions[0].instructions, 500u);
  EXPECT_EQ(p.functions[1].function, "caller(int)");
  EXPECT_EQ(p.functions[1].instructions, 15u);
}

TEST(CallgrindProfile, ATruncatedFileIsRefusedWithAClearMessage) {
  TempDir dir;
  const std::string whole = slurp(kFixture);
  // Cut in the middle of the body, just after the header, and before the last line.
  ASSERT_NE(whole.find("\ntotals:"), std::string::npos);
  for (const std::size_t at : {whole.size() / 2, whole.find("\nfn="), whole.find("\ntotals:")}) {
    const std::string path = dir.file("cut" + std::to_string(at), whole.substr(0, at));
    const std::string why = refusal(path);
    EXPECT_EQ(why.rfind(path + ": truncated: no `totals:` line, which callgrind writes last (", 0), 0u) << why;
  }
  // A cost lost in the middle: the functions no longer add up to the totals.
  const std::size_t cost = whole.find("\n0 ", whole.find("\nfn="));
  const std::string lost = dir.file("lost", whole.substr(0, cost) + whole.substr(whole.find('\n', cost + 1)));
  EXPECT_EQ(refusal(lost).rfind(lost + ": inconsistent: the functions' own costs sum to ", 0), 0u) << refusal(lost);
}

TEST(CallgrindProfile, OtherBadFilesAreRefusedNamingTheLine) {
  TempDir dir;
  const std::string head = "version: 1\nevents: Ir\nsummary: 5\n";  // no totals: never reached
  const std::map<std::string, std::string> bad = {
      {"empty", ""},
      {"json", "{\"not\": \"callgrind\"}\n"},
      {"no_ir", "version: 1\nevents: Dr\nfn=f\n0 1\n"},
      {"word", head + "fn=f\n0 five\n"},
      {"unnamed", head + "fn=(4)\n0 5\n"},
      {"orphan", head + "0 5\n"},
  };
  const std::map<std::string, std::string> expected = {
      {"empty", ": not callgrind's output (no `events:` line)"},
      {"json", ": line 1: not a line of callgrind's format: '{\"not\": \"callgrind\"}'"},
      {"no_ir", ": line 2: `events:` lacks Ir (instructions)"},
      {"word", ": line 5: an instruction count that is not a number: 'five'"},
      {"unnamed", ": line 4: function id (4) used before it is named"},
      {"orphan", ": line 4: a cost line before any `fn=`"},
  };
  for (const auto& [name, text] : bad) {
    const std::string path = dir.file(name, text);
    EXPECT_EQ(refusal(path), path + expected.at(name)) << name;
  }
  EXPECT_EQ(refusal(dir.path + "/absent"), dir.path + "/absent: cannot be read");
}

}  // namespace
}  // namespace pairbench::harness
