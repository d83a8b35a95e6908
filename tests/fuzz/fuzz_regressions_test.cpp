// Every input a fuzzer ever failed on (tests/fixtures/fuzz_regressions/<target>-<sha1>, kept when
// the bug was fixed), replayed through the checks of the target that found it; and the good
// fixtures through both checks, so that the checks themselves are seen to accept what they should.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/fuzz/fuzz_checks.h"

namespace pairbench::fuzz {
namespace {
namespace fs = std::filesystem;

std::string contents(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(FuzzRegressions, EveryKeptInputPassesTheChecksOfTheTargetThatFoundIt) {
  int replayed = 0;
  for (const auto& entry : fs::directory_iterator(std::string(FIXTURES_DIR) + "/fuzz_regressions")) {
    const std::string name = entry.path().filename().string();
    if (name == "README.md") continue;
    SCOPED_TRACE(name);
    const std::string data = contents(entry.path());
    if (name.rfind("run_file_fuzzer-", 0) == 0) {
      EXPECT_NO_THROW(check_run_file_input(data));
    } else if (name.rfind("gate_fuzzer-", 0) == 0) {
      EXPECT_NO_THROW(check_gate_input(data));
    } else {
      ADD_FAILURE() << "named after no fuzz target (run_file_fuzzer-... or gate_fuzzer-...)";
    }
    ++replayed;
  }
  RecordProperty("replayed", replayed);
}

TEST(FuzzRegressions, GoodFixturesAreAcceptedAndGated) {
  const std::string a = contents(std::string(FIXTURES_DIR) + "/run_cpu_a.json");
  const std::string b = contents(std::string(FIXTURES_DIR) + "/run_cpu_b.json");
  const std::string small = contents(std::string(FIXTURES_DIR) + "/run_small.json");
  for (const std::string* run : {&a, &b, &small}) EXPECT_TRUE(check_run_file_input(*run));
  EXPECT_TRUE(check_gate_input(a + std::string(kGateSeparator) + b));
  EXPECT_TRUE(check_gate_input(small + std::string(kGateSeparator) + small));
  EXPECT_FALSE(check_gate_input(a + b));  // no separator: not a gate input
  EXPECT_FALSE(check_run_file_input(a.substr(0, a.size() / 2)));
}

}  // namespace
}  // namespace pairbench::fuzz
