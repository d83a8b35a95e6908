// The nightly's same-runner confirmation policy (harness/sampling/confirmation.h) and its command
// (`pairbench confirm`), on synthetic gate JSON whose answer is known, both ways: which suspects are
// measured again (regressions and undecided first, then by p-value, at most the cap), what the ab
// makes of each (confirmed, cleared, unresolved, not measured); the night fails only on a confirmed
// regression; bisect's range from confirmed.json; bad input is one line and exit 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/exec/process.h"
#include "harness/sampling/confirmation.h"
#include "harness/store/json_field.h"
#include "kernels/common/scratch.h"

namespace pairbench::harness {
namespace {

namespace fs = std::filesystem;

nlohmann::json row(const std::string& name, const std::string& verdict, bool suspect = true, double slowdown = 0.1,
                   double p_value = 0.5, const std::string& instrument = "time") {
  return {{"name", name},
          {"instrument", instrument},
          {"experiment", name.substr(0, name.find('/'))},
          {"verdict", verdict},
          {"note", "its note"},
          {"suspect", suspect},
          {"slowdown", slowdown},
          {"slowdown_low", slowdown - 0.05},
          {"slowdown_high", slowdown + 0.05},
          {"p_value", p_value},
          {"p_adjusted", p_value},
          // What the gate writes for every row (a regression row must have them: read_gate_json).
          {"metric", "ns_per_op"},
          {"unit", "ns"},
          {"better", "lower"},
          {"baseline_median", 100.0},
          {"current_median", 100.0 * (1 + slowdown)},
          {"threshold", 0.05}};
}

nlohmann::json gate_doc(const std::vector<nlohmann::json>& rows, const std::string& base = "aaaa",
                        const std::string& cur = "bbbb") {
  return {{"headline", ""},
          {"exit_status", 0},
          {"baseline_build", base},
          {"current_build", cur},
          {"baseline_run", {{"run_id", "r1"}, {"machine_key", "m"}, {"git_sha", "1111111"}, {"started_at", ""}}},
          {"current_run", {{"run_id", "r2"}, {"machine_key", "m"}, {"git_sha", "2222222"}, {"started_at", ""}}},
          {"benchmarks", rows}};
}

class Confirmation : public ::testing::Test {
 protected:
  kernels::TempDir dir{"pairbench-confirm"};
  std::string write(const std::string& name, const nlohmann::json& doc) {
    const std::string path = dir.path().string() + "/" + name;
    std::ofstream(path) << doc.dump();
    return path;
  }
  ProcessResult confirm(const std::vector<std::string>& args) {
    std::vector<std::string> argv = {PAIRBENCH_EXE, "confirm"};
    argv.insert(argv.end(), args.begin(), args.end());
    return run_process(argv, {}, std::chrono::seconds(60));
  }
};

std::vector<std::string> names_of(const std::vector<ConfirmedRow>& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(r.benchmark);
  std::sort(out.begin(), out.end());
  return out;
}

TEST_F(Confirmation, RegressionsAndUndecidedFirstThenByPValueUpToTheCap) {
  const GateJson gate = read_gate_json(
      write("gate.json", gate_doc({row("e.x/a", "not_gated", true, 0.1, 0.01),
                                   row("e.x/b", "undecided", true, 0.1, 0.9), row("e.x/c", "unchanged", true, 0.1, 0.2),
                                   row("e.x/d", "unchanged", false), row("e.x/e", "regression", true, 0.1, 0.001)})));
  EXPECT_EQ(select_suspects(gate, 10), (std::vector<std::string>{"e.x/a", "e.x/b", "e.x/c", "e.x/e"}));
  EXPECT_EQ(select_suspects(gate, 3), (std::vector<std::string>{"e.x/a", "e.x/b", "e.x/e"}));  // c: the weakest p
  EXPECT_TRUE(select_suspects(gate, 0).empty());
  EXPECT_EQ(anchored({"e.x/a(1)"}), R"(^(?:e\.x/a\(1\))$)");
  EXPECT_EQ(anchored({"a", "b.c"}), R"(^(?:a|b\.c)$)");
}

TEST_F(Confirmation, TheAbConfirmsClearsOrLeavesEachSuspectUnresolved) {
  const GateJson night = read_gate_json(write(
      "gate.json",
      gate_doc({row("e.x/slow", "not_gated", true, 0.4), row("e.x/noise", "undecided"), row("e.x/wobbly", "unchanged"),
                row("e.x/gone", "undecided"), row("e.x/quiet", "unchanged", false)})));
  const GateJson ab = read_gate_json(write(
      "confirm.json", gate_doc({row("e.x/slow", "regression", true, 0.38), row("e.x/noise", "unchanged", true, 0.01),
                                row("e.x/wobbly", "undecided"), row("e.x/quiet", "regression")})));
  const auto out = classify(night, ab, 15);
  EXPECT_EQ(names_of(out.regressions), std::vector<std::string>{"e.x/slow"});
  ASSERT_EQ(out.regressions.size(), 1u);
  EXPECT_NE(out.regressions[0].why.find("confirmed: regression +38.0%"), std::string::npos) << out.regressions[0].why;
  EXPECT_NE(out.regressions[0].why.find("night: not_gated +40.0%"), std::string::npos) << out.regressions[0].why;
  EXPECT_EQ(names_of(out.cleared), std::vector<std::string>{"e.x/noise"});
  EXPECT_EQ(names_of(out.unresolved), (std::vector<std::string>{"e.x/gone", "e.x/wobbly"}));
  for (const auto& r : out.unresolved) {
    if (r.benchmark == "e.x/gone") EXPECT_NE(r.why.find("not measured by the ab"), std::string::npos) << r.why;
  }
  EXPECT_EQ(out.baseline_git_sha, "aaaa");
  EXPECT_TRUE(out.failed());
  // Not a suspect in the night: never confirmed, whatever the ab says of it.
  for (const auto* rows : {&out.regressions, &out.cleared, &out.unresolved}) {
    for (const auto& r : *rows) EXPECT_NE(r.benchmark, "e.x/quiet");
  }
  // Nothing confirmed when the ab clears the only slow one.
  const GateJson clean = read_gate_json(write("clean.json", gate_doc({row("e.x/slow", "unchanged", true, 0.01)})));
  EXPECT_FALSE(classify(night, clean, 15).failed());
}

TEST_F(Confirmation, TheCommandFailsTheNightOnlyOnAConfirmedRegression) {
  const std::string gate = write("gate.json", gate_doc({row("e.x/a", "undecided")}, "aaaa-dirty"));
  write("confirm.json", gate_doc({row("e.x/a", "unchanged")}));
  const std::string confirmed = dir.path().string() + "/confirmed.json",
                    summary = dir.path().string() + "/confirmation.md";
  const std::vector<std::string> classify_args = {
      "classify", "--gate",    gate,        "--ab",  dir.path().string() + "/confirm.json",
      "--out",    confirmed,   "--summary", summary, "--count",
      "1",        "--seconds", "12"};
  ProcessResult r = confirm(classify_args);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json done = nlohmann::json::parse(std::ifstream(confirmed));
  EXPECT_EQ(done["baseline_git_sha"], "aaaa");
  EXPECT_EQ(done["cleared"].size(), 1u);
  std::ifstream md(summary);
  const std::string text((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("**0 confirmed**, 1 cleared, 0 unresolved"), std::string::npos) << text;
  EXPECT_NE(text.find("sampling until decided, 12 s:"), std::string::npos) << text;
  r = confirm({"bisect-args", "--confirmed", confirmed});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "none\n");

  write("confirm.json", gate_doc({row("e.x/a", "regression")}));
  r = confirm(classify_args);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  r = confirm({"bisect-args", "--confirmed", confirmed});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "aaaa bbbb ^(?:e\\.x/a)$\n");
  r = confirm({"select", "--gate", gate, "--max-suspects", "5"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "1 aaaa-dirty bbbb ^(?:e\\.x/a)$\n");
  r = confirm({"none", "--gate", gate, "--out", confirmed});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(confirmed))["regressions"].size(), 0u);
}

TEST_F(Confirmation, BisectTakesTheGatesRunsShasWhereConfirmedHasNone) {
  const std::string gate = write("gate.json", gate_doc({row("e.x/a", "undecided")}, "", ""));
  const std::string confirmed = write("confirmed.json", {{"regressions", {{{"benchmark", "e.x/a"}}}}});
  ProcessResult r = confirm({"bisect-args", "--confirmed", confirmed, "--gate", gate});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "1111111 2222222 ^(?:e\\.x/a)$\n");
  r = confirm({"bisect-args", "--confirmed", confirmed});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no git sha for the baseline"), std::string::npos) << r.output;
}

TEST_F(Confirmation, BadInputIsOneLineAndExit2) {
  const std::string bad = write("gate.json", {{"benchmarks", {{{"name", 3}, {"verdict", "unchanged"}}}}});
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"select", "--gate", bad},
           {"select", "--gate", dir.path().string() + "/absent.json"},
           {"bisect-args", "--confirmed", write("c.json", {{"regressions", {{{"benchmark", 7}}}}})},
           {"unknown"}}) {
    const ProcessResult r = confirm(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
  }
}

}  // namespace
}  // namespace pairbench::harness
