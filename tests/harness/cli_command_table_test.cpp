// The command table (harness/cli/commands.def): every command in it has its help line and exit
// statuses, and a command is added with one file and one table line, shown by the throw-away
// `hello` (tests/harness/throwaway_command/) built into pairbench_throwaway with the real ones.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "harness/cli/command.h"
#include "harness/exec/process.h"

namespace pairbench::harness {
namespace {

ProcessResult pairbench(const std::string& exe, std::vector<std::string> args) {
  args.insert(args.begin(), exe);
  return run_process(args, {}, std::chrono::seconds(60));
}

TEST(CommandTable, EveryCommandHasItsHelpLineAndExitStatusesAndNoNameTwice) {
  std::set<std::string> names;
  for (const Command& c : all_commands()) {
    EXPECT_TRUE(names.insert(c.name).second) << c.name << " twice in commands.def";
    EXPECT_FALSE(c.summary.empty()) << c.name;
    EXPECT_NE(c.exit_statuses.find("2 bad input"), std::string::npos) << c.name << ": " << c.exit_statuses;
    const ProcessResult help = pairbench(PAIRBENCH_EXE, {c.name, "--help"});
    EXPECT_EQ(help.exit_code, 0) << help.output;
    EXPECT_NE(help.output.find("Exit status: " + c.exit_statuses), std::string::npos) << help.output;
  }
  EXPECT_EQ(names.count("hello"), 0u);  // the throw-away command is the test binary's only
}

TEST(CommandTable, UnknownCommandNamesEveryCommandOfTheTable) {
  const ProcessResult r = pairbench(PAIRBENCH_EXE, {"nosuch"});
  EXPECT_EQ(r.exit_code, 2);
  std::string names;
  for (const Command& c : all_commands()) names += (names.empty() ? "" : ", ") + c.name;
  EXPECT_NE(r.output.find("unknown command 'nosuch' (" + names + "; see --help)"), std::string::npos) << r.output;
}

TEST(CommandTable, AThrowAwayCommandIsOneFileAndOneTableLine) {
  const ProcessResult list = pairbench(THROWAWAY_EXE, {"--help"});
  EXPECT_EQ(list.exit_code, 0) << list.output;
  EXPECT_NE(list.output.find("greet someone (a throw-away command)"), std::string::npos) << list.output;
  EXPECT_NE(list.output.find("summarise"), std::string::npos) << list.output;  // the real commands are all there

  const ProcessResult hello = pairbench(THROWAWAY_EXE, {"hello", "--name", "pairbench"});
  EXPECT_EQ(hello.exit_code, 0) << hello.output;
  EXPECT_EQ(hello.output, "hello, pairbench\n");

  const ProcessResult help = pairbench(THROWAWAY_EXE, {"hello", "--help"});
  EXPECT_NE(help.output.find("--name"), std::string::npos) << help.output;
  EXPECT_NE(help.output.find("Exit status: 0 greeted; 2 bad input."), std::string::npos) << help.output;

  const ProcessResult bad = pairbench(THROWAWAY_EXE, {"hello", "--name", "a,,b"});
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  const ProcessResult unknown = pairbench(THROWAWAY_EXE, {"nosuch"});
  EXPECT_NE(unknown.output.find(", summarise, hello; see --help)"), std::string::npos) << unknown.output;
}

}  // namespace
}  // namespace pairbench::harness
