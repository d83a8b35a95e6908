// The pairbench CLI end to end: usage errors (one line, exit 2), the catalogue, and a run over a
// bench binary whose arms crash, hang and compute wrong answers (the rest must still be written).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "harness/analysis/claims.h"
#include "harness/exec/process.h"
#include "harness/store/run_file.h"

namespace pairbench::harness {
namespace {
namespace fs = std::filesystem;

ProcessResult pairbench(std::vector<std::string> args, int limit_s = 120) {
  args.insert(args.begin(), PAIRBENCH_EXE);
  return run_process(args, {}, std::chrono::seconds(limit_s));
}

int line_count(const std::string& s) {
  int n = 0;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) n += !line.empty();
  return n;
}

// A usage error: exit 2, one line, naming `what`.
void expect_usage_error(const std::vector<std::string>& args, const std::string& what) {
  SCOPED_TRACE(what);
  const ProcessResult r = pairbench(args);
  ASSERT_EQ(r.status, ProcessResult::Status::kExited) << r.describe();
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(line_count(r.output), 1) << r.output;
  EXPECT_NE(r.output.find(what), std::string::npos) << r.output;
}

TEST(Cli, UsageErrorsAreOneLineAndExit2) {
  expect_usage_error({}, "required");
  expect_usage_error({"frobnicate"}, "frobnicate");
  expect_usage_error({"run", "--profile", "weekly"}, "weekly");
  expect_usage_error({"run", "--repetitions", "0"}, "repetitions");
  expect_usage_error({"run", "--experiments", "dispatch.nonsense", "--bench-dir", FAULT_BENCH_DIR},
                     "dispatch.nonsense");
  expect_usage_error({"run", "--experiments", "faults", "--arms", "unicorn", "--bench-dir", FAULT_BENCH_DIR},
                     "unicorn");
  expect_usage_error({"run", "--out", "/proc/no/such/dir/run.json", "--bench-dir", FAULT_BENCH_DIR},
                     "/proc/no/such/dir/run.json");
  expect_usage_error({"list", "--format", "yaml"}, "yaml");
}

// compare/gate on malformed run files: one line naming the file and field, exit 2.
TEST(Cli, CompareRejectsMalformedRunFiles) {
  char tmpl[] = "/tmp/pairbench-cli-bad-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string good = std::string(FIXTURES_DIR) + "/run_cpu_a.json";
  std::ifstream in(good);
  const nlohmann::json doc = nlohmann::json::parse(in);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name) << text;
    return dir + "/" + name;
  };
  const std::string text = doc.dump();
  auto with = [&](auto&& edit) {
    nlohmann::json d = doc;
    edit(d);
    return d.dump();
  };
  struct Case {
    std::string file, expected;
  };
  const std::vector<Case> cases = {
      {write("truncated.json", text.substr(0, text.size() / 3)), "not valid JSON"},
      {write("schema.json", with([](auto& d) { d["pairbench"]["schema_version"] = 7; })), "pairbench.schema_version"},
      {write("nofield.json", with([](auto& d) { d["benchmarks"][0].erase("metric_value"); })),
       "benchmarks[0].metric_value"},
      {write("zero.json", with([](auto& d) { d["benchmarks"][1]["real_time"] = 0; })), "benchmarks[1].real_time"},
      {write("nan.json",
             [&] {
               std::string t = with([](auto& d) { d["benchmarks"][0]["real_time"] = 12345.678; });
               t.replace(t.find("12345.678"), 9, "NaN");
               return t;
             }()),
       "not valid JSON"},
      {write("empty.json", with([](auto& d) { d["benchmarks"] = nlohmann::json::array(); })), "benchmarks: empty"},
      {dir + "/absent.json", "cannot open"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.file);
    const ProcessResult r = pairbench({"compare", good, c.file});
    EXPECT_EQ(r.exit_code, 2) << r.output;
    EXPECT_EQ(line_count(r.output), 1) << r.output;
    EXPECT_NE(r.output.find(c.file), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(c.expected), std::string::npos) << r.output;
  }
  // The same run compared with itself: no regression, every benchmark unchanged at its resolution
  // (the noisier ones far wider than 5 %, and the table says so).
  const ProcessResult gated = pairbench({"compare", good, good});
  EXPECT_EQ(gated.exit_code, 0) << gated.output;
  EXPECT_NE(gated.output.find("(its resolution; threshold 5%)"), std::string::npos) << gated.output;
  EXPECT_NE(gated.output.find("at their resolution:"), std::string::npos) << gated.output;
  // At the threshold alone its noisier benchmarks cannot be called unchanged within 5 % from 3
  // processes, so the gate is undecided (exit 4), never passed silently; --undecided pass accepts
  // that (exit 0) and still says it was undecided.
  const ProcessResult same = pairbench({"compare", good, good, "--resolution", "off"});
  EXPECT_EQ(same.exit_code, 4) << same.output;
  EXPECT_EQ(same.output.rfind("0 regressions, ", 0), 0u) << same.output;
  EXPECT_NE(same.output.find("GATE UNDECIDED"), std::string::npos) << same.output;
  EXPECT_EQ(same.output.find("gate passed"), std::string::npos) << same.output;
  const ProcessResult lenient = pairbench({"compare", good, good, "--resolution", "off", "--undecided", "pass"});
  EXPECT_EQ(lenient.exit_code, 0) << lenient.output;
  EXPECT_NE(lenient.output.find("passing by --undecided pass"), std::string::npos) << lenient.output;
  fs::remove_all(dir);
}

// A failure keeps the end of a process's output (64 KiB); a listing is read whole: the nightly
// grid's catalogue of bench_copy is past 64 KiB and was once cut to its tail.
TEST(Cli, ProcessOutputIsCutToItsEndUnlessTheWholeIsAskedFor) {
  const std::vector<std::string> argv = {"/bin/sh", "-c",
                                         "printf '{'; head -c 200000 /dev/zero | tr '\\0' x; printf '}'"};
  const ProcessResult cut = run_process(argv, {}, std::chrono::seconds(30));
  ASSERT_EQ(cut.exit_code, 0) << cut.describe();
  EXPECT_EQ(cut.output.size(), 64u << 10);
  EXPECT_EQ(cut.output.back(), '}');
  const ProcessResult whole = run_process(argv, {}, std::chrono::seconds(30), -1, 1u << 20);
  EXPECT_EQ(whole.output.size(), 200002u);
  EXPECT_EQ(whole.output.front(), '{');
}

TEST(Cli, ListsTheNightlyAndFullGridsWhole) {
  for (const std::string profile : {"nightly", "full"}) {
    const ProcessResult r = run_process({PAIRBENCH_EXE, "list", "--profile", profile, "--format", "json"}, {},
                                        std::chrono::seconds(120), -1, std::size_t{64} << 20);
    ASSERT_EQ(r.exit_code, 0) << profile << ": " << r.output.substr(0, 300);
    EXPECT_FALSE(nlohmann::json::parse(r.output).empty());
  }
}

TEST(Cli, ListJsonShowsArmsAndWhyTheyCannotRun) {
  const ProcessResult r = pairbench({"list", "--format", "json", "--bench-dir", FAULT_BENCH_DIR});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  ASSERT_EQ(j.size(), 2u);  // faults.mixed and faults.checks
  ASSERT_EQ(j[0]["name"], "faults.mixed");
  EXPECT_EQ(j[0]["arms"][0]["role"], "baseline");
  bool saw_absent = false;
  for (const auto& b : j[0]["benchmarks"]) {
    if (b["arm"] == "absent") {
      saw_absent = true;
      EXPECT_FALSE(b["available"].get<bool>());
      EXPECT_EQ(b["reason"], "needs a unicorn");
    }
  }
  EXPECT_TRUE(saw_absent);
}

// The claims catalogue as the report reads it: the one compiled in, with no bench binary needed.
TEST(Cli, ListClaimsJsonIsTheCatalogueCompiledIn) {
  char tmpl[] = "/tmp/pairbench-cli-test-XXXXXX";
  const std::string empty_dir = mkdtemp(tmpl);
  const ProcessResult r = pairbench({"list", "--format", "claims-json", "--bench-dir", empty_dir});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(r.output), builtin_claims_document());
  expect_usage_error({"list", "--format", "claims-json", "--check", std::string(FIXTURES_DIR) + "/run_cpu_a.json"},
                     "--check: expected --format markdown");
  fs::remove_all(empty_dir);
}

// Every process's limit is generous (10 s, where an `ok` process takes some 50 ms; issue 44: at 2 s
// a loaded machine could time out one whose samples are all required); only the hanging arm
// reaches it. One benchmark per process (--process-sharing none), so that the hang costs its six
// processes 10 s each (in a shared process the limit is 10 s per benchmark in it, and the run
// took minutes), within the 300 s given to the run.
TEST(Cli, CrashingHangingAndWrongArmsLeaveTheOthersIntact) {
  char tmpl[] = "/tmp/pairbench-cli-test-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string out = dir + "/run.json";
  const ProcessResult r =
      pairbench({"run", "--bench-dir", FAULT_BENCH_DIR, "--experiments", "faults.mixed", "--repetitions", "2",
                 "--timeout", "10", "--process-sharing", "none", "--min-time", "0.01", "--no-history", "--out", out},
                300);
  ASSERT_EQ(r.status, ProcessResult::Status::kExited) << r.describe();
  EXPECT_EQ(r.exit_code, 3) << r.output;
  const nlohmann::json doc = read_run_file(out);  // written, and valid

  int ok_samples = 0, env_samples = 0;
  for (const auto& b : doc["benchmarks"]) {
    ok_samples += b["arm"] == "ok";
    env_samples += b["arm"] == "env_echo";
    EXPECT_EQ(b["verification"], "passed");
  }
  EXPECT_EQ(ok_samples, 4);   // 2 grid points x 2 repetitions
  EXPECT_EQ(env_samples, 4);  // the environment arm saw its variable
  std::map<std::string, std::string> status, reason;
  for (const auto& n : doc["pairbench"]["not_run"]) {
    status[n["arm"]] = n["verification"];
    reason[n["arm"]] = n["reason"];
  }
  EXPECT_EQ(status["crash"], "failed");
  EXPECT_NE(reason["crash"].find("SIGABRT"), std::string::npos) << reason["crash"];
  EXPECT_EQ(status["hang"], "failed");
  EXPECT_NE(reason["hang"].find("timed out"), std::string::npos) << reason["hang"];
  EXPECT_EQ(status["wrong"], "incorrect");
  EXPECT_EQ(reason["wrong"], "2 + 2 != 5");
  EXPECT_EQ(status["absent"], "not_supported");
  EXPECT_EQ(reason["absent"], "needs a unicorn");

  // The summary carries the same verdicts, and a ratio only where both arms have samples.
  const auto& point = doc["pairbench"]["experiments"][0]["points"][0];
  for (const auto& a : point["arms"]) {
    if (a["arm"] == "ok") {
      EXPECT_EQ(a["samples"], 2);
    }
    if (a["arm"] == "crash") {
      EXPECT_EQ(a["verification"], "failed");
    }
  }
  std::set<std::string> treatments;  // the arms with samples beside the baseline `ok`
  for (const auto& ratio : point["ratios"]) treatments.insert(ratio["treatment"].get<std::string>());
  EXPECT_EQ(treatments, (std::set<std::string>{"env_echo", "stall_once"})) << point["ratios"].dump();
  // Every claim judged and printed, in claims.json order; none of their experiments ran here.
  const auto& claims = doc["pairbench"]["claims"];
  ASSERT_EQ(claims.size(), builtin_claims().size());
  EXPECT_EQ(claims[2]["id"], "C3");
  EXPECT_EQ(claims[2]["verdict"], "not run here");
  EXPECT_EQ(claims[2]["detail"], "no experiment ran: dispatch.sync_vs_async: not in this run");
  EXPECT_NE(r.output.find("C3   not run here      no experiment ran"), std::string::npos) << r.output;
  fs::remove_all(dir);
}

TEST(Cli, SummariseJudgesARunFileWrittenBeforeVerdicts) {
  char tmpl[] = "/tmp/pairbench-cli-test-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string out = dir + "/judged.json";
  const std::string old_run = std::string(FIXTURES_DIR) + "/run_cpu_a.json";
  ASSERT_FALSE(read_run_file(old_run)["pairbench"].contains("claims"));
  const ProcessResult r = pairbench({"summarise", "--run", old_run, "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("C17  not testable here no CUDA device"), std::string::npos) << r.output;
  const nlohmann::json doc = read_run_file(out);  // valid against the schema, claims included
  ASSERT_EQ(doc["pairbench"]["claims"].size(), builtin_claims().size());
  EXPECT_EQ(doc["pairbench"]["claims"][16]["verdict"], "not testable here");
  EXPECT_EQ(doc["benchmarks"], read_run_file(old_run)["benchmarks"]);  // nothing measured is lost
  // A file that is not a run file: one line naming it, exit 2.
  const ProcessResult bad =
      pairbench({"summarise", "--run", std::string(FIXTURES_DIR) + "/bad_run_files/claims_object.json"});
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("pairbench.claims: expected an array, is an object"), std::string::npos) << bad.output;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pairbench::harness
