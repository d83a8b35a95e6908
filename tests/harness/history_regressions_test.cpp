// Regressions tracked until fixed (`pairbench regressions`), through the built `pairbench` on both
// history back ends: a regression confirmed by the gate on two nightlies is announced once and
// listed once, closes itself when the fix lands (asv's rule: a later change point brings the level
// back), acknowledged with a reason it is still listed and still closes; bad input (an unknown id,
// an empty reason, a malformed gate JSON) is one line, exit 2, and changes nothing.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/exec/process.h"
#include "harness/store/history.h"
#include "history_backends.h"

namespace pairbench::harness {
namespace {
namespace fs = std::filesystem;
using testing_backends::Backend;
using testing_backends::TestDatabase;

constexpr auto kCallLimit = std::chrono::seconds(60);
// The fixture's quietest benchmark (three processes within 1.2 %), lower is better.
const std::string kBench = "dispatch.sync_vs_async/sync/device:cpu/ops:10000";
const std::string kMachine = "box-a";

ProcessResult pairbench(std::vector<std::string> args) {
  args.insert(args.begin(), PAIRBENCH_EXE);
  return run_process(args, {}, kCallLimit);
}

std::string sha_of(int night) {
  char sha[41];
  std::snprintf(sha, sizeof sha, "%02d%038d", night, night);
  return sha;
}

// Nightly run `night` (2026-01-NN) of the fixture's benchmarks on kMachine: kBench at `level`
// times the fixture's values (1.0 = 100, 1.15 = 115), every other benchmark as it is.
nlohmann::json night_run(int night, double level) {
  std::ifstream in(std::string(FIXTURES_DIR) + "/run_cpu_a.json");
  nlohmann::json doc = nlohmann::json::parse(in);
  char started[32];
  std::snprintf(started, sizeof started, "2026-01-%02dT02:00:00Z", night);
  doc["pairbench"]["run_id"] = "night" + std::to_string(night);
  doc["pairbench"]["started_at"] = started;
  doc["pairbench"]["environment"]["machine_key"] = kMachine;
  doc["pairbench"]["environment"]["git_sha"] = sha_of(night);
  for (auto& b : doc["benchmarks"]) {
    if (b["name"] != kBench) continue;
    b["metric_value"] = b["metric_value"].get<double>() * level;
    if (b.contains("metric_batches")) {
      for (auto& v : b["metric_batches"]) v = v.get<double>() * level;
    }
  }
  return doc;
}

std::string lines_of(const std::string& text, std::size_t* count) {
  std::istringstream in(text);
  *count = 0;
  for (std::string line; std::getline(in, line);) ++*count;
  return text;
}

class HistoryRegressions : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    database_ = std::make_unique<TestDatabase>(GetParam());
    SKIP_UNLESS_AVAILABLE(*database_);
  }
  const std::string& db() const { return database_->db(); }
  std::string path(const std::string& name) const { return database_->dir() + "/" + name; }

  // Stores nights [first, last] at `level` in the history.
  void import(int first, int last, double level) {
    std::vector<std::string> args = {"history", "import"};
    for (int n = first; n <= last; ++n) {
      const std::string file = path("night" + std::to_string(n) + ".json");
      std::ofstream(file) << night_run(n, level).dump(1);
      args.push_back(file);
    }
    args.insert(args.end(), {"--db", db()});
    const ProcessResult r = pairbench(args);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  // `pairbench gate --json` of night `n` against night 1 (the baseline); returns the JSON's path.
  std::string gate(int n) {
    const std::string out = path("gate" + std::to_string(n) + ".json");
    const ProcessResult r =
        pairbench({"gate", "--baseline", path("night1.json"), "--current", path("night" + std::to_string(n) + ".json"),
                   "--db", "none", "--json", out, "--undecided", "pass"});
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.output;
    return out;
  }
  // `regressions record --gate G --json OUT`: what it wrote.
  nlohmann::json record(const std::string& gate_json) {
    const std::string out = gate_json + ".recorded.json";
    const ProcessResult r = pairbench({"regressions", "record", "--gate", gate_json, "--db", db(), "--json", out});
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return nlohmann::json::parse(std::ifstream(out));
  }
  nlohmann::json list(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> args = {"regressions", "--db", db(), "--format", "json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const ProcessResult r = pairbench(args);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return nlohmann::json::parse(r.output);
  }
  // A gate JSON of night 7 with kBench a confirmed regression: the shape `gate --json` writes.
  std::string regression_gate() {
    import(1, 6, 1.0);
    import(7, 7, 1.15);
    return gate(7);
  }

  std::unique_ptr<TestDatabase> database_;
};

TEST_P(HistoryRegressions, SeenOnTwoNightsIsAnnouncedOnceAndClosesWhenTheFixLands) {
  // Nights 1-6 at 100, the regression lands in night 7's commit.
  const std::string g7 = regression_gate();
  const auto gate7 = nlohmann::json::parse(std::ifstream(g7));
  ASSERT_EQ(gate7["current_run"]["machine_key"], kMachine) << gate7.dump(1);
  bool confirmed = false;
  for (const auto& b : gate7["benchmarks"]) confirmed |= b["name"] == kBench && b["verdict"] == "regression";
  ASSERT_TRUE(confirmed) << "the gate did not confirm the planted 15 %: " << gate7.dump(1);

  auto r = record(g7);
  ASSERT_EQ(r["new"].size(), 1u) << r.dump(1);
  EXPECT_EQ(r["known"].size(), 0u);
  const auto& first = r["new"][0];
  EXPECT_EQ(first["benchmark"], kBench);
  EXPECT_EQ(first["machine_key"], kMachine);
  EXPECT_EQ(first["state"], "open");
  EXPECT_EQ(first["last_good_sha"], sha_of(6));  // the commit range: night 6 .. night 7
  EXPECT_EQ(first["first_bad_sha"], sha_of(7));
  EXPECT_TRUE(first["culprit_sha"].is_null());
  EXPECT_NEAR(first["change"].get<double>(), 0.15, 0.01);
  EXPECT_EQ(first["first_seen_at"], "2026-01-07T02:00:00Z");
  const std::int64_t id = first["id"];

  // Night 8: still slow. Known, not new: announced once.
  import(8, 8, 1.15);
  r = record(gate(8));
  EXPECT_EQ(r["new"].size(), 0u) << r.dump(1);
  ASSERT_EQ(r["known"].size(), 1u) << r.dump(1);
  EXPECT_EQ(r["known"][0]["id"], id);
  EXPECT_EQ(r["known"][0]["times_seen"], 2);
  EXPECT_EQ(r["known"][0]["last_seen_at"], "2026-01-08T02:00:00Z");
  EXPECT_EQ(r["known"][0]["first_bad_sha"], sha_of(7));  // the range stays the first night's
  // The same gate recorded again (a retried nightly step) counts the night once.
  r = record(path("gate8.json"));
  EXPECT_EQ(r["known"][0]["times_seen"], 2);
  auto listed = list();
  ASSERT_EQ(listed.size(), 1u) << listed.dump(1);  // listed once
  EXPECT_EQ(listed[0]["id"], id);

  // Nights 9-12 still slow, the fix lands in night 13's commit, nights 13-18 back at 100.
  import(9, 12, 1.15);
  import(13, 18, 1.0);
  r = record(gate(18));  // the gate passes: nothing new, and the regression is closed
  EXPECT_EQ(r["new"].size(), 0u) << r.dump(1);
  ASSERT_EQ(r["fixed"].size(), 1u) << r.dump(1);
  EXPECT_EQ(r["fixed"][0]["id"], id);
  EXPECT_EQ(r["fixed"][0]["state"], "fixed");
  EXPECT_EQ(r["fixed"][0]["fixed_run_id"], "night13");
  EXPECT_EQ(r["fixed"][0]["fixed_at"], "2026-01-13T02:00:00Z");
  EXPECT_NE(r["fixed"][0]["fixed_reason"].get<std::string>().find("level returned"), std::string::npos);
  EXPECT_EQ(list().size(), 0u);
  listed = list({"--all"});
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]["state"], "fixed");

  // The history export carries it for the report.
  const std::string out = path("export.json");
  const ProcessResult e = pairbench({"history", "export", "--db", db(), "--out", out});
  ASSERT_EQ(e.exit_code, 0) << e.output;
  const auto exported = nlohmann::json::parse(std::ifstream(out));
  ASSERT_EQ(exported["regressions"].size(), 1u);
  EXPECT_EQ(exported["regressions"][0]["state"], "fixed");
  EXPECT_EQ(exported["regressions"][0]["benchmark"], kBench);
}

// The nightly's confirmation is an `ab` of the baseline's build against the night's: its gate JSON
// names runs the history does not hold, at levels of their own. It is placed by its commit on the
// night's stored run, and with the night's own gate it is one sighting.
TEST_P(HistoryRegressions, AnAbConfirmationIsPlacedOnTheNightsRunAndCountsOnce) {
  const std::string g7 = regression_gate();
  auto ab = nlohmann::json::parse(std::ifstream(g7));
  ab["baseline_run"]["run_id"] = "ab-baseline-side";
  ab["current_run"]["run_id"] = "ab-candidate-side";
  ab["current_run"]["started_at"] = "2026-01-07T03:30:00Z";
  for (auto& b : ab["benchmarks"]) {  // one run of both builds, two at a time: another level
    b["baseline_median"] = b["baseline_median"].get<double>() * 0.8;
    b["current_median"] = b["current_median"].get<double>() * 0.8;
  }
  const std::string confirm = path("confirm.json");
  std::ofstream(confirm) << ab.dump(1);
  auto r = record(confirm);
  ASSERT_EQ(r["new"].size(), 1u) << r.dump(1);
  EXPECT_EQ(r["new"][0]["last_good_sha"], sha_of(6));
  EXPECT_EQ(r["new"][0]["first_bad_sha"], sha_of(7));
  EXPECT_EQ(r["new"][0]["first_seen_run_id"], "night7");
  EXPECT_NEAR(r["new"][0]["level_before"].get<double>(), 663.9, 0.1);  // the history's level, not the ab's
  r = record(g7);
  ASSERT_EQ(r["known"].size(), 1u) << r.dump(1);
  EXPECT_EQ(r["known"][0]["times_seen"], 1);
}

TEST_P(HistoryRegressions, AcknowledgedWithAReasonIsListedAndStillClosesWhenTheLevelReturns) {
  const std::string g7 = regression_gate();
  const auto r = record(g7);
  ASSERT_EQ(r["new"].size(), 1u) << r.dump(1);
  const std::string id = std::to_string(r["new"][0]["id"].get<std::int64_t>());
  ProcessResult ack =
      pairbench({"regressions", "ack", id, "--reason", "accepted: issue 31 trades it for safety", "--db", db()});
  ASSERT_EQ(ack.exit_code, 0) << ack.output;
  auto listed = list();
  ASSERT_EQ(listed.size(), 1u) << listed.dump(1);
  EXPECT_EQ(listed[0]["state"], "acknowledged");
  EXPECT_EQ(listed[0]["ack_reason"], "accepted: issue 31 trades it for safety");
  EXPECT_FALSE(listed[0]["acknowledged_at"].is_null());
  const ProcessResult text = pairbench({"regressions", "--db", db()});
  EXPECT_NE(text.output.find("accepted: issue 31"), std::string::npos) << text.output;
  // Acknowledged is still known: the next night's gate does not announce it again.
  import(8, 8, 1.15);
  EXPECT_EQ(record(gate(8))["new"].size(), 0u);
  // The level returns: the listing itself closes it.
  import(9, 9, 1.15);
  import(10, 15, 1.0);
  EXPECT_EQ(list().size(), 0u);
  listed = list({"--all", "--machine", kMachine});
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0]["state"], "fixed");
  EXPECT_EQ(listed[0]["ack_reason"], "accepted: issue 31 trades it for safety");  // kept
  EXPECT_EQ(listed[0]["fixed_run_id"], "night10");
  EXPECT_EQ(list({"--machine", "another-box"}).size(), 0u);
  // A fixed one cannot be acknowledged.
  ack = pairbench({"regressions", "ack", id, "--reason", "late", "--db", db()});
  EXPECT_EQ(ack.exit_code, 2) << ack.output;
}

TEST_P(HistoryRegressions, BadInputIsOneLineExitTwoAndChangesNothing) {
  const std::string g7 = regression_gate();
  ASSERT_EQ(record(g7)["new"].size(), 1u);
  const auto before = list({"--all"});

  std::vector<std::string> malformed;
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(path(name)) << text;
    malformed.push_back(path(name));
  };
  std::ifstream in(g7);
  const std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  write("truncated.json", good.substr(0, good.size() / 2));
  write("empty.json", "");
  write("array.json", "[1, 2]");
  auto doc = nlohmann::json::parse(good);
  doc["benchmarks"][0]["verdict"] = "slower";
  write("verdict.json", doc.dump());
  doc = nlohmann::json::parse(good);
  for (auto& b : doc["benchmarks"]) {
    if (b["verdict"] == "regression") b["current_median"] = "fast";
  }
  write("median.json", doc.dump());
  write("commit_table.json", R"({"commit": "abcdef1", "machines": []})");
  doc = nlohmann::json::parse(good);
  doc.erase("current_run");  // a gate JSON from before runs were named, without --machine
  write("no_machine.json", doc.dump());

  std::vector<std::vector<std::string>> calls;
  for (const auto& m : malformed) calls.push_back({"regressions", "record", "--gate", m, "--db", db()});
  calls.push_back({"regressions", "record", "--gate", g7, "--db", db(), "--machine", "another-box"});
  calls.push_back({"regressions", "record", "--gate", g7, "--db", db(), "--culprit", "not-a-sha"});
  calls.push_back({"regressions", "record", "--gate", path("absent.json"), "--db", db()});
  calls.push_back({"regressions", "ack", "999", "--reason", "why", "--db", db()});
  calls.push_back({"regressions", "ack", "1x", "--reason", "why", "--db", db()});
  calls.push_back(
      {"regressions", "ack", std::to_string(before[0]["id"].get<std::int64_t>()), "--reason", "", "--db", db()});
  calls.push_back(
      {"regressions", "ack", std::to_string(before[0]["id"].get<std::int64_t>()), "--reason", "  ", "--db", db()});
  calls.push_back({"regressions", "ack", std::to_string(before[0]["id"].get<std::int64_t>()), "--db", db()});
  for (const auto& args : calls) {
    const ProcessResult r = pairbench(args);
    std::size_t lines = 0;
    lines_of(r.output, &lines);
    std::string call;
    for (const auto& a : args) call += a + " ";
    EXPECT_EQ(r.exit_code, 2) << call << "\n" << r.output;
    EXPECT_EQ(lines, 1u) << call << "\n" << r.output;
  }
  EXPECT_EQ(list({"--all"}), before);
}

INSTANTIATE_TEST_SUITE_P(Backends, HistoryRegressions, ::testing::Values(Backend::kSqlite, Backend::kPostgres),
                         testing_backends::param_name);

}  // namespace
}  // namespace pairbench::harness
