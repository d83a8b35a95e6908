// The history through the built `pairbench`, against both back ends (SQLite, and PostgreSQL on
// the ctest fixture's server): --db and PAIRBENCH_DB on every command, imports stored once,
// `history --machines`, baselines in the database, `gate --commit` across machines,
// `history export`, and a run whose database is unreachable keeping its run file for a later
// import, with the URL's password never shown.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/store/history.h"
#include "harness/exec/process.h"
#include "harness/store/run_file.h"
#include "history_backends.h"

namespace pairbench::harness {
namespace {
namespace fs = std::filesystem;
using testing_backends::Backend;
using testing_backends::TestDatabase;

constexpr auto kCallLimit = std::chrono::seconds(60);

ProcessResult pairbench(std::vector<std::string> args, const std::map<std::string, std::string>& env = {}) {
  args.insert(args.begin(), PAIRBENCH_EXE);
  return run_process(args, env, kCallLimit);
}

nlohmann::json fixture_run() {
  std::ifstream in(std::string(FIXTURES_DIR) + "/run_cpu_a.json");
  return nlohmann::json::parse(in);
}

// A run of the fixture's benchmarks on `machine` at commit `sha`, every metric times `scale`.
nlohmann::json machine_run(const std::string& id, const std::string& machine, const std::string& sha,
                           const std::string& started, double scale = 1.0) {
  nlohmann::json doc = fixture_run();
  doc["pairbench"]["run_id"] = id;
  doc["pairbench"]["started_at"] = started;
  doc["pairbench"]["environment"]["machine_key"] = machine;
  doc["pairbench"]["environment"]["git_sha"] = sha;
  for (auto& b : doc["benchmarks"]) {
    b["metric_value"] = b["metric_value"].get<double>() * scale;
    if (b.contains("metric_batches")) {
      for (auto& v : b["metric_batches"]) v = v.get<double>() * scale;
    }
  }
  return doc;
}

std::string write(const std::string& dir, const std::string& name, const nlohmann::json& doc) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << doc.dump(1);
  return path;
}

std::string line_with(const std::string& text, const std::string& what) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find(what) != std::string::npos) return line;
  }
  return "";
}

class HistoryCli : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    database_ = std::make_unique<TestDatabase>(GetParam());
    SKIP_UNLESS_AVAILABLE(*database_);
  }
  const std::string& db() const { return database_->db(); }
  const std::string& dir() const { return database_->dir(); }
  std::unique_ptr<TestDatabase> database_;
};

TEST_P(HistoryCli, ImportsOnceAndListsMachinesWithTheirLastRun) {
  const std::string a1 = write(dir(), "a1.json", machine_run("a1", "box-a", "1111111aaaa", "2026-01-01T00:00:00Z"));
  const std::string a2 = write(dir(), "a2.json", machine_run("a2", "box-a", "2222222bbbb", "2026-01-02T00:00:00Z"));
  const std::string b1 = write(dir(), "b1.json", machine_run("b1", "box-b", "2222222bbbb", "2026-01-02T00:00:00Z"));
  ProcessResult r = pairbench({"history", "import", a1, a2, b1, "--db", db()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = pairbench({"history", "import", a2, "--db", db()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("already in"), std::string::npos) << r.output;
  EXPECT_EQ(History(db()).run_count(), 3);

  r = pairbench({"history", "--machines", "--db", db(), "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto machines = nlohmann::json::parse(r.output);
  ASSERT_EQ(machines.size(), 2u);
  EXPECT_EQ(machines[0]["machine_key"], "box-a");
  EXPECT_EQ(machines[0]["runs"], 2);
  EXPECT_EQ(machines[0]["machine_kind"], "AMD EPYC");
  EXPECT_EQ(machines[0]["last_run"]["run_id"], "a2");
  EXPECT_EQ(machines[1]["last_run"]["git_sha"], "2222222bbbb");
  r = pairbench({"history", "--machines", "--db", db()});
  EXPECT_NE(line_with(r.output, "box-b").find("AMD EPYC"), std::string::npos) << r.output;
}

TEST_P(HistoryCli, PairbenchDbNamesTheHistoryWhereDbIsAbsent) {
  const std::string a1 = write(dir(), "a1.json", machine_run("a1", "box-a", "1111111aaaa", "2026-01-01T00:00:00Z"));
  const ProcessResult r = pairbench({"history", "import", a1}, {{"PAIRBENCH_DB", db()}});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(History(db()).run_count(), 1);
  const ProcessResult listed =
      pairbench({"history", "--machine", "box-a", "--format", "json"}, {{"PAIRBENCH_DB", db()}});
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  EXPECT_EQ(nlohmann::json::parse(listed.output).size(), 6u);  // the fixture's benchmarks
}

TEST_P(HistoryCli, TheBaselineInTheDatabaseGatesWithoutAFile) {
  const std::string results = dir() + "/results";
  const std::string base =
      write(dir(), "base.json", machine_run("base", "box-a", "1111111aaaa", "2026-01-01T00:00:00Z"));
  const std::string slow =
      write(dir(), "slow.json", machine_run("slow", "box-a", "2222222bbbb", "2026-01-02T00:00:00Z", 1.6));
  ProcessResult r = pairbench({"baseline", "update", "--run", base, "--db", db(), "--results-dir", results});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  fs::remove_all(results);  // only the database holds it now
  r = pairbench({"gate", "--current", slow, "--db", db(), "--results-dir", results});
  EXPECT_EQ(r.exit_code, 1) << r.output;  // 60 % slower everywhere
  EXPECT_NE(r.output.find("baseline of machine box-a (run base)"), std::string::npos) << r.output;
  // Without the database there is none.
  r = pairbench({"gate", "--current", slow, "--db", "none", "--results-dir", results});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no baseline for machine box-a"), std::string::npos) << r.output;
}

TEST_P(HistoryCli, GateACommitOnEveryMachineNamesThoseItCannotGate) {
  std::vector<std::string> files = {
      // regressed: 60 % slower at the commit
      write(dir(), "r0.json", machine_run("r0", "box-regressed", "0000000aaaa", "2026-01-01T00:00:00Z")),
      write(dir(), "r1.json", machine_run("r1", "box-regressed", "abcdef12345", "2026-01-02T00:00:00Z", 1.6)),
      // unchanged: the same values
      write(dir(), "s0.json", machine_run("s0", "box-same", "0000000aaaa", "2026-01-01T00:00:00Z")),
      write(dir(), "s1.json", machine_run("s1", "box-same", "abcdef12345", "2026-01-02T00:00:00Z")),
      // a run of the commit, no baseline
      write(dir(), "n0.json", machine_run("n0", "box-no-baseline", "0000000aaaa", "2026-01-01T00:00:00Z")),
      write(dir(), "n1.json", machine_run("n1", "box-no-baseline", "abcdef12345", "2026-01-02T00:00:00Z")),
      // a baseline, no run of the commit
      write(dir(), "o0.json", machine_run("o0", "box-other", "0000000aaaa", "2026-01-01T00:00:00Z")),
  };
  std::vector<std::string> args = {"history", "import"};
  args.insert(args.end(), files.begin(), files.end());
  args.insert(args.end(), {"--db", db()});
  ASSERT_EQ(pairbench(args).exit_code, 0);
  for (const std::string base : {"r0", "s0", "o0"}) {
    const ProcessResult r = pairbench({"baseline", "update", "--run", dir() + "/" + base + ".json", "--db", db(),
                                       "--results-dir", dir() + "/results"});
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  const std::string json = dir() + "/gate.json";
  ProcessResult r = pairbench({"gate", "--db", db(), "--commit", "abcdef1", "--json", json, "--undecided", "pass"});
  EXPECT_EQ(r.exit_code, 1) << r.output;  // the worst: a regression on one machine
  EXPECT_NE(line_with(r.output, "box-regressed").find("regression"), std::string::npos) << r.output;
  const std::string same = line_with(r.output, "box-same");
  EXPECT_EQ(same.find("regression"), std::string::npos) << r.output;  // gated: undecided at most
  EXPECT_NE(same.find(" s1"), std::string::npos) << r.output;
  EXPECT_NE(line_with(r.output, "box-no-baseline").find("no baseline"), std::string::npos) << r.output;
  EXPECT_NE(line_with(r.output, "box-other").find("no run of abcdef1"), std::string::npos) << r.output;
  const auto table = nlohmann::json::parse(std::ifstream(json));
  ASSERT_EQ(table["machines"].size(), 4u);
  for (const auto& m : table["machines"]) {
    if (m["machine_key"] == "box-regressed") EXPECT_GT(m["regressions"].get<int>(), 0) << m.dump();
    if (m["machine_key"] == "box-same") EXPECT_EQ(m["regressions"], 0) << m.dump();
  }

  // At the baselines' own commit no machine with a baseline regressed (undecided passes here);
  // the one without a baseline decides: 4.
  r = pairbench({"gate", "--db", db(), "--commit", "0000000aaaa", "--undecided", "pass"});
  EXPECT_EQ(r.exit_code, 4) << r.output;
  EXPECT_NE(line_with(r.output, "box-no-baseline").find("no baseline"), std::string::npos) << r.output;
  EXPECT_NE(line_with(r.output, "box-other").find(" o0"), std::string::npos) << r.output;  // gated
  // Under --undecided pass the table says what the exit status says: no machine shows "undecided".
  for (const std::string machine : {"box-regressed", "box-same", "box-other"}) {
    EXPECT_EQ(line_with(r.output, machine).find(" undecided "), std::string::npos) << r.output;
  }
  r = pairbench({"gate", "--db", db(), "--commit", "fedcba9876"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("no run of fedcba9876 on any machine"), std::string::npos) << r.output;
  r = pairbench({"gate", "--db", db(), "--commit", "not-a-sha"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--commit"), std::string::npos) << r.output;
}

TEST_P(HistoryCli, ExportHoldsEveryMachineItsSeriesClaimsAndChangePoints) {
  std::vector<std::string> args = {"history", "import"};
  for (int i = 0; i < 12; ++i) {
    char started[32];
    std::snprintf(started, sizeof started, "2026-01-%02dT00:00:00Z", i + 1);
    nlohmann::json doc = machine_run("a" + std::to_string(i), "box-a", "1111111aaaa", started, i < 6 ? 1.0 : 1.5);
    if (i == 11) {
      doc["pairbench"]["claims"] = {{{"id", "C1"},
                                     {"claim", "c"},
                                     {"verdict", "held"},
                                     {"detail", "d"},
                                     {"analogue", false},
                                     {"experiments", {"limits.core_pingpong"}}}};
    }
    args.push_back(write(dir(), "a" + std::to_string(i) + ".json", doc));
  }
  args.push_back(write(dir(), "b.json", machine_run("b0", "box-b", "1111111aaaa", "2026-01-05T00:00:00Z")));
  args.insert(args.end(), {"--db", db()});
  ASSERT_EQ(pairbench(args).exit_code, 0);
  ProcessResult r =
      pairbench({"baseline", "update", "--run", dir() + "/a3.json", "--db", db(), "--results-dir", dir() + "/results"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string out = dir() + "/export.json";
  r = pairbench({"history", "export", "--db", db(), "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto e = nlohmann::json::parse(std::ifstream(out));
  EXPECT_EQ(e["format"], "pairbench-history-export/1");
  EXPECT_EQ(e["db"], redact_db(db()));
  ASSERT_EQ(e["machines"].size(), 2u);
  EXPECT_EQ(e["machines"][0]["runs"], 12);
  EXPECT_EQ(e["machines"][0]["last_run"]["run_id"], "a11");
  EXPECT_EQ(e["machines"][0]["baseline_run_id"], "a3");
  EXPECT_TRUE(e["machines"][1]["baseline_run_id"].is_null()) << e["machines"][1].dump();
  EXPECT_EQ(e["series"].size(), 12u);  // 6 benchmarks x 2 machines
  const nlohmann::json a0 = fixture_run();
  for (const auto& s : e["series"]) {
    EXPECT_EQ(s["points"].size(), s["machine_key"] == "box-a" ? 12u : 1u);
    EXPECT_TRUE(s["better"] == "lower" || s["better"] == "higher");
    const std::string bench = s["benchmark"];
    EXPECT_EQ(s["experiment"], bench.substr(0, bench.find('/'))) << bench;
    // Each point's process values: the run file's metric values of that benchmark, in process order.
    std::vector<double> values;
    for (const auto& b : a0["benchmarks"]) {
      if (b["name"] == bench) values.push_back(b["metric_value"].get<double>());
    }
    const auto& first = s["points"][0];
    ASSERT_EQ(first["values"].size(), values.size()) << bench;
    EXPECT_EQ(first["values"].size(), first["samples"].get<std::size_t>()) << bench;
    for (std::size_t i = 0; i < values.size(); ++i) EXPECT_DOUBLE_EQ(first["values"][i].get<double>(), values[i]);
    if (s["machine_key"] == "box-a") {
      EXPECT_NEAR(s["points"][11]["values"][0].get<double>(), 1.5 * values[0], 1e-9 * values[0]) << bench;
    }
  }
  ASSERT_EQ(e["claims"].size(), 1u);
  EXPECT_EQ(e["claims"][0]["run_id"], "a11");
  EXPECT_EQ(e["claims"][0]["claims"][0]["verdict"], "held");
  ASSERT_EQ(e["change_points"].size(), 6u);  // every benchmark of box-a stepped at its 7th run
  for (const auto& c : e["change_points"]) {
    EXPECT_EQ(c["run_id"], "a6");
    EXPECT_NEAR(c["after"].get<double>() / c["before"].get<double>(), 1.5, 1e-9);
  }
  r = pairbench({"history", "export", "--db", db(), "--last", "3", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(out))["series"][0]["points"].size(), 3u);
}

// `report --db` exports the history (either back end) for the cross-machine page: fleet.html.
TEST_P(HistoryCli, ReportDrawsTheCrossMachinePageFromTheDatabase) {
  std::vector<std::string> args = {"history", "import"};
  for (const std::string machine : {"box-a", "box-b"}) {
    for (int i = 0; i < 4; ++i) {
      const std::string id = machine + "-" + std::to_string(i);
      args.push_back(
          write(dir(), id + ".json",
                machine_run(id, machine, "1111111aaaa", "2026-01-0" + std::to_string(i + 1) + "T00:00:00Z")));
    }
  }
  args.insert(args.end(), {"--db", db()});
  ASSERT_EQ(pairbench(args).exit_code, 0);
  const std::string out = dir() + "/report";
  const std::string tmp = dir() + "/tmp";
  fs::create_directories(tmp);
  const ProcessResult r = run_process({PAIRBENCH_EXE, "report", "--run", args[2], "--db", db(), "-o", out},
                                      {{"TMPDIR", tmp}}, std::chrono::seconds(240));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(out + "/index.html")) << r.output;
  EXPECT_TRUE(fs::exists(out + "/fleet.html")) << r.output;
  EXPECT_TRUE(fs::is_empty(tmp)) << "the temporary export was left behind";
}

// `report --db` draws the single-machine trend figures and the history section from the export
// too, on either back end: the history figures are written and index.html shows them, with the
// change points the export found, the baseline, and the claims catalogue pairbench passes.
TEST_P(HistoryCli, ReportDrawsTheTrendFiguresFromTheDatabase) {
  std::vector<std::string> args = {"history", "import"};
  for (const std::string machine : {"box-a", "box-b"}) {
    for (int i = 0; i < 8; ++i) {
      const std::string id = machine + "-" + std::to_string(i);
      const double scale = machine == "box-a" && i >= 4 ? 1.5 : 1.0;
      args.push_back(
          write(dir(), id + ".json",
                machine_run(id, machine, "1111111aaaa", "2026-01-0" + std::to_string(i + 1) + "T00:00:00Z", scale)));
    }
  }
  args.insert(args.end(), {"--db", db()});
  ASSERT_EQ(pairbench(args).exit_code, 0);
  ProcessResult r = pairbench(
      {"baseline", "update", "--run", dir() + "/box-a-1.json", "--db", db(), "--results-dir", dir() + "/results"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string out = dir() + "/report";
  const std::string tmp = dir() + "/tmp";
  fs::create_directories(tmp);
  r = run_process({PAIRBENCH_EXE, "report", "--run", dir() + "/box-a-7.json", "--db", db(), "-o", out},
                  {{"TMPDIR", tmp}}, std::chrono::seconds(240));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(out + "/index.html");
  const std::string page((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // One trend figure per experiment of the history (the fixture's two), PNG and SVG, on the page.
  int figures = 0;
  for (const auto& f : fs::directory_iterator(out)) {
    const std::string name = f.path().filename().string();
    if (name.find("-history-") == std::string::npos || f.path().extension() != ".png") continue;
    ++figures;
    EXPECT_GT(fs::file_size(f.path()), 1000u) << name;
    EXPECT_TRUE(fs::exists(out + "/" + f.path().stem().string() + ".svg")) << name;
    EXPECT_NE(page.find("src=\"" + name + "\""), std::string::npos) << name << " is not on the page";
  }
  EXPECT_EQ(figures, 2) << r.output;
  // And each benchmark's resolution over time (docs/gate.md, Resolution): the fixture has 3 runs or more.
  bool resolution_figure = false;
  for (const auto& f : fs::directory_iterator(out)) {
    const std::string name = f.path().filename().string();
    if (name.find("-resolution-over-time") != std::string::npos && f.path().extension() == ".png") {
      resolution_figure = page.find("src=\"" + name + "\"") != std::string::npos;
    }
  }
  EXPECT_TRUE(resolution_figure) << r.output;
  EXPECT_NE(page.find("16 run(s) on 2 machine(s)"), std::string::npos);
  EXPECT_NE(page.find("<h3>Change points</h3>"), std::string::npos);  // box-a stepped at its 5th run
  EXPECT_NE(page.find("+50.0 %"), std::string::npos);
  EXPECT_NE(page.find("Baselines: <code>box-a</code>: run box-a-1 (2026-01-02 00:00, git 1111111aaa)"),
            std::string::npos);
  EXPECT_EQ(page.find("No history was given"), std::string::npos);
  // The claims catalogue pairbench embeds: each claim's seed beside its text.
  EXPECT_NE(page.find("<div class=\"why\">seed 000"), std::string::npos);
  EXPECT_TRUE(fs::exists(out + "/fleet.html"));
  EXPECT_TRUE(fs::is_empty(tmp)) << "a temporary file (export, claims, judged run) was left behind";
}

// The suite's speed measurement, small: it fills the history it is given, times `history` and a
// gate from the database over it (the gate finds the planted 50 % step), and never fills one
// that already holds runs.
TEST_P(HistoryCli, SpeedFillsANewHistoryAndTimesHistoryAndGate) {
  const std::string out = dir() + "/speed.json";
  ProcessResult r = pairbench(
      {"history", "speed", "--db", db(), "--runs", "40", "--benchmarks", "7", "--samples", "3", "--out", out});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto speed = nlohmann::json::parse(std::ifstream(out));
  EXPECT_EQ(speed["runs"], 40);
  EXPECT_EQ(speed["series"], 7);
  EXPECT_EQ(speed["gate_outcome"], "regression");
  EXPECT_GT(speed["history_s"].get<double>(), 0);
  EXPECT_GT(speed["gate_s"].get<double>(), 0);
  History h(db());
  EXPECT_EQ(h.run_count(), 40);
  EXPECT_EQ(h.change_points().size(), 7u);  // `history` stored each benchmark's step
  r = pairbench({"history", "speed", "--db", db(), "--runs", "2", "--benchmarks", "1"});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("history speed fills"), std::string::npos) << r.output;
}

INSTANTIATE_TEST_SUITE_P(Backends, HistoryCli, ::testing::Values(Backend::kSqlite, Backend::kPostgres),
                         testing_backends::param_name);

// A runner whose database is unreachable retries, then keeps the run file and exits 3 naming it;
// the password in the URL shows nowhere; a later import completes the upload.
TEST(HistoryCliPostgres, AnUnreachableDatabaseKeepsTheRunForALaterImport) {
  TestDatabase database(Backend::kPostgres);
  SKIP_UNLESS_AVAILABLE(database);
  const std::string unreachable = "postgresql://runner:s3cret@/pairbench?host=" + database.dir() + "/no-server-here";
  const std::string out = database.dir() + "/run.json";
  const ProcessResult r = run_process({PAIRBENCH_EXE, "run", "--bench-dir", FAULT_BENCH_DIR, "--experiments", "faults",
                                       "--arms", "ok", "--db", unreachable, "--out", out},
                                      {{"PAIRBENCH_HISTORY_RETRY_S", "1.5"}}, kCallLimit);
  ASSERT_EQ(r.exit_code, 3) << r.output;
  EXPECT_EQ(r.output.find("s3cret"), std::string::npos) << r.output;
  const std::string said = line_with(r.output, "not recorded in history");
  EXPECT_NE(said.find("kept the run file " + out), std::string::npos) << r.output;
  EXPECT_NE(said.find("pairbench history import " + out), std::string::npos) << said;
  const auto doc = read_run_file(out);
  const auto& write_note = doc["pairbench"]["history_write"];
  EXPECT_EQ(write_note["status"], "failed");
  EXPECT_GE(write_note["attempts"].get<int>(), 2) << write_note.dump();  // retried with backoff
  EXPECT_EQ(write_note.dump().find("s3cret"), std::string::npos) << write_note.dump();

  const ProcessResult imported =
      run_process({PAIRBENCH_EXE, "history", "import", out, "--db", database.db()}, {}, kCallLimit);
  ASSERT_EQ(imported.exit_code, 0) << imported.output;
  History h(database.db());
  EXPECT_EQ(h.run_count(), 1);
  EXPECT_EQ(h.run_document(h.run_by_uid(run_identity(doc))->id)->at("benchmarks"), doc["benchmarks"]);
}

}  // namespace
}  // namespace pairbench::harness
