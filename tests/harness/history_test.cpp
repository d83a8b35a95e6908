// The history store, the same tests against both back ends (SQLite, and PostgreSQL on the ctest
// fixture's throw-away server): append and read back, per-run medians, runs stored once,
// concurrent writers from separate processes, baselines, change points, claims and documents,
// questions across machines, identity checks and migrations. Change-point detection on
// synthetic series.
#include "harness/store/history.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "harness/analysis/change_points.h"
#include "harness/stats/stats.h"
#include "history_backends.h"

namespace pairbench::harness {
namespace {
namespace fs = std::filesystem;
using testing_backends::Backend;
using testing_backends::TestDatabase;

nlohmann::json run_doc(const std::string& started, double value, int samples = 3, const std::string& machine = "m1",
                       const std::string& sha = "abc") {
  nlohmann::json doc = {{"context", nlohmann::json::object()}, {"benchmarks", nlohmann::json::array()}};
  for (int i = 0; i < samples; ++i) {
    doc["benchmarks"].push_back({{"name", "demo.x/a/n:1"},
                                 {"experiment", "demo.x"},
                                 {"arm", "a"},
                                 {"repetition_index", i},
                                 {"metric_value", value + i}});
  }
  doc["pairbench"] = {
      {"schema_version", 1},
      {"started_at", started},
      {"profile", "quick"},
      {"environment", {{"machine_key", machine}, {"git_sha", sha}, {"cpu_model", "Test CPU"}}},
      {"experiments", {{{"name", "demo.x"}, {"metric", "ns_per_op"}, {"unit", "ns"}, {"better", "lower"}}}}};
  return doc;
}

class HistoryTest : public ::testing::TestWithParam<Backend> {
 protected:
  void SetUp() override {
    database_ = std::make_unique<TestDatabase>(GetParam());
    SKIP_UNLESS_AVAILABLE(*database_);
  }
  const std::string& db() const { return database_->db(); }
  std::unique_ptr<TestDatabase> database_;
};

TEST_P(HistoryTest, AppendsAndReadsPerRunMedians) {
  History h(db());
  h.append_run(run_doc("2026-01-01T00:00:00Z", 10), "r1.json");
  h.append_run(run_doc("2026-01-02T00:00:00Z", 20), "r2.json");
  const auto series = h.series("m1");
  ASSERT_EQ(series.size(), 1u);
  ASSERT_EQ(series[0].points.size(), 2u);
  EXPECT_EQ(series[0].points[0].median, 11);  // median of 10, 11, 12
  EXPECT_EQ(series[0].points[1].median, 21);
  EXPECT_EQ(series[0].points[1].samples, 3);
  EXPECT_EQ(series[0].points[1].values, (std::vector<double>{20, 21, 22}));
  EXPECT_EQ(series[0].unit, "ns");
  EXPECT_EQ(series[0].better, "lower");
  EXPECT_TRUE(h.series("other-machine").empty());
  const auto last = h.series("m1", "demo.x/a/n:1", /*last_runs=*/1);
  ASSERT_EQ(last.size(), 1u);
  ASSERT_EQ(last[0].points.size(), 1u);
  EXPECT_EQ(last[0].points[0].median, 21);  // the last run, not the first
  // Without samples, a whole machine is read from each run's packed medians: the same points.
  const auto packed = h.series("m1", "", 0, /*with_values=*/false);
  ASSERT_EQ(packed.size(), 1u);
  ASSERT_EQ(packed[0].points.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(packed[0].points[i].median, series[0].points[i].median);
    EXPECT_EQ(packed[0].points[i].samples, series[0].points[i].samples);
    EXPECT_EQ(packed[0].points[i].run_id, series[0].points[i].run_id);
    EXPECT_TRUE(packed[0].points[i].values.empty());
  }
  EXPECT_EQ(h.series("m1", "", /*last_runs=*/1, false)[0].points.at(0).median, 21);
  EXPECT_TRUE(h.series("m1", "no.such/benchmark").empty());
}

TEST_P(HistoryTest, ValuesReadBackExactly) {
  History h(db());
  nlohmann::json doc = run_doc("2026-01-01T00:00:00Z", 0, 2);
  doc["benchmarks"][0]["metric_value"] = 0.1 + 0.2;  // not a short decimal
  doc["benchmarks"][1]["metric_value"] = 1.0 / 3.0;
  h.append_run(doc, "r.json");
  const auto s = h.series("m1");
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].points[0].values, (std::vector<double>{0.1 + 0.2, 1.0 / 3.0}));
  EXPECT_EQ(s[0].points[0].median, (0.1 + 0.2 + 1.0 / 3.0) / 2);
}

TEST_P(HistoryTest, ARunIsStoredOnceByItsIdentity) {
  History h(db());
  nlohmann::json doc = run_doc("2026-01-01T00:00:00Z", 10);
  doc["pairbench"]["run_id"] = "run-one";
  bool before = true;
  const auto id = h.append_run(doc, "a.json", &before);
  EXPECT_FALSE(before);
  doc["pairbench"]["history_write"] = {{"status", "failed"}};  // the same run, its write note changed
  EXPECT_EQ(h.append_run(doc, "renamed.json", &before), id);
  EXPECT_TRUE(before);
  EXPECT_EQ(h.run_count(), 1);
  EXPECT_EQ(h.series("m1")[0].points.size(), 1u);
  EXPECT_EQ(h.run_by_uid("run-one")->id, id);
}

TEST_P(HistoryTest, ConcurrentWritersInSeparateProcessesLoseNothing) {
  constexpr int kWriters = 4, kRunsEach = 25;
  { History init(db()); }
  std::vector<pid_t> children;
  for (int w = 0; w < kWriters; ++w) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      alarm(60);  // a writer that hangs ends the child, and the test fails below
      try {
        History h(db());
        for (int i = 0; i < kRunsEach; ++i) h.append_run(run_doc("2026-01-01T00:00:00Z", 100 * w + i), "w.json");
      } catch (...) {
        _exit(1);
      }
      _exit(0);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  History h(db());
  EXPECT_EQ(h.run_count(), kWriters * kRunsEach);
  const auto series = h.series("m1");
  ASSERT_EQ(series.size(), 1u);
  EXPECT_EQ(series[0].points.size(), static_cast<std::size_t>(kWriters * kRunsEach));
  for (const auto& p : series[0].points) EXPECT_EQ(p.samples, 3);  // no run half-written
}

TEST_P(HistoryTest, BaselinesAndChangePointsAreStored) {
  History h(db());
  nlohmann::json doc = run_doc("2026-01-01T00:00:00Z", 10);
  doc["pairbench"]["run_id"] = "base";
  const auto id = h.append_run(doc, "r1.json");
  EXPECT_EQ(h.baseline_run("m1"), 0);
  h.set_baseline("m1", id);
  EXPECT_EQ(h.baseline_run("m1"), id);
  const auto id2 = h.append_run(run_doc("2026-01-02T00:00:00Z", 10), "r2.json");
  h.set_baseline("m1", id2);  // one per machine: replaced
  EXPECT_EQ(h.baseline_run("m1"), id2);
  h.store_change_points("demo.x/a/n:1", "m1", {{id, 10, 12}});
  auto stored = h.change_points();
  ASSERT_EQ(stored.size(), 1u);
  EXPECT_EQ(stored[0].run_uid, "base");
  EXPECT_EQ(stored[0].before, 10);
  EXPECT_EQ(stored[0].after, 12);
  h.store_change_points("demo.x/a/n:1", "m1", {});  // replaces, does not accumulate
  EXPECT_TRUE(h.change_points().empty());
}

TEST_P(HistoryTest, KeepsTheRunFileItsClaimsAndWhatItRanOn) {
  History h(db());
  nlohmann::json cpu = run_doc("2026-01-01T00:00:00Z", 10, 3, "cpu-box", "1111111");
  cpu["pairbench"]["run_id"] = "cpu-run";
  nlohmann::json gpu = run_doc("2026-01-02T00:00:00Z", 10, 3, "gpu-box", "1111111");
  gpu["pairbench"]["run_id"] = "gpu-run";
  gpu["pairbench"]["environment"]["gpu_name"] = "NVIDIA H100 80GB HBM3";
  gpu["pairbench"]["claims"] = {{{"id", "C6"},
                                 {"claim", "pinned copies are faster"},
                                 {"verdict", "held"},
                                 {"detail", "1.9x"},
                                 {"analogue", false},
                                 {"experiments", {"copy.h2d"}}}};
  const auto gpu_id = h.append_run(gpu, "gpu.json");
  h.append_run(cpu, "cpu.json");
  EXPECT_EQ(h.run_document(gpu_id), gpu);
  const auto claims = h.latest_claims();
  ASSERT_EQ(claims.size(), 1u);  // the CPU run has none
  EXPECT_EQ(claims[0].first.machine_key, "gpu-box");
  EXPECT_EQ(claims[0].first.machine_kind, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(claims[0].second, gpu["pairbench"]["claims"]);
  const auto machines = h.machines();
  ASSERT_EQ(machines.size(), 2u);
  EXPECT_EQ(machines[0].machine_key, "cpu-box");
  EXPECT_EQ(machines[0].machine_kind, "Test CPU");
  EXPECT_EQ(machines[1].machine_kind, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(machines[1].last_run.run_uid, "gpu-run");
}

TEST_P(HistoryTest, LatestRunOfACommitOnEachMachine) {
  History h(db());
  auto add = [&](const std::string& id, const std::string& started, const std::string& machine,
                 const std::string& sha) {
    nlohmann::json doc = run_doc(started, 10, 3, machine, sha);
    doc["pairbench"]["run_id"] = id;
    h.append_run(doc, id + ".json");
  };
  add("a1", "2026-01-01T00:00:00Z", "a", "aaaaaaa1");
  add("a2", "2026-01-02T00:00:00Z", "a", "aaaaaaa1");
  add("a3", "2026-01-03T00:00:00Z", "a", "bbbbbbb2");
  add("b1", "2026-01-01T00:00:00Z", "b", "bbbbbbb2");
  const auto of_a = h.latest_runs_of_commit("aaaaaaa");  // a prefix
  ASSERT_EQ(of_a.size(), 1u);
  EXPECT_EQ(of_a[0].run_uid, "a2");
  const auto of_b = h.latest_runs_of_commit("bbbbbbb2");
  ASSERT_EQ(of_b.size(), 2u);
  EXPECT_EQ(of_b[0].run_uid, "a3");
  EXPECT_EQ(of_b[1].run_uid, "b1");
  EXPECT_TRUE(h.latest_runs_of_commit("%").empty());  // not a SHA: no wildcard
}

TEST_P(HistoryTest, ANewerSchemaIsRefused) {
  { History h(db()); }
  if (GetParam() == Backend::kSqlite) {
    sqlite3* c = nullptr;
    ASSERT_EQ(sqlite3_open(db().c_str(), &c), SQLITE_OK);
    sqlite3_exec(c, "PRAGMA user_version = 99", nullptr, nullptr, nullptr);
    sqlite3_close(c);
  } else {
    ASSERT_EQ(database_->exec("UPDATE pairbench_meta SET value = '99' WHERE key = 'schema_version'"), "");
  }
  try {
    History h(db());
    ADD_FAILURE() << "opened";
  } catch (const NotAHistory& e) {
    EXPECT_NE(std::string(e.what()).find("newer pairbench"), std::string::npos) << e.what();
  }
}

TEST(HistoryPostgres, AnotherProgramsDatabaseIsRefusedAndLeftAlone) {
  TestDatabase other(Backend::kPostgres);
  SKIP_UNLESS_AVAILABLE(other);
  ASSERT_EQ(other.exec("CREATE TABLE notes(id SERIAL PRIMARY KEY, text TEXT); INSERT INTO notes(text) VALUES('keep')"),
            "");
  try {
    History h(other.db());
    ADD_FAILURE() << "opened";
  } catch (const NotAHistory& e) {
    EXPECT_NE(std::string(e.what()).find("with tables notes, not a pairbench history"), std::string::npos) << e.what();
  }
  EXPECT_EQ(other.exec("SELECT 1 FROM notes WHERE text = 'keep'"), "");
  EXPECT_NE(other.exec("SELECT 1 FROM pairbench_meta"), "");  // nothing of ours was made

  TestDatabase foreign(Backend::kPostgres);
  ASSERT_EQ(foreign.exec("CREATE TABLE pairbench_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL); "
                         "INSERT INTO pairbench_meta VALUES('application_id', '0x12345678')"),
            "");
  EXPECT_THROW(History{foreign.db()}, NotAHistory);
}

TEST(HistoryPostgres, AnUnreachableServerIsWorthRetryingAndItsPasswordIsNotShown) {
  const std::string url = "postgresql://pb:s3cret@/nodb?host=/nonexistent-pairbench-socket-dir";
  try {
    History h(url, 2000);
    ADD_FAILURE() << "connected";
  } catch (const HistoryBusy& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find("s3cret"), std::string::npos) << what;
    EXPECT_NE(what.find("postgresql://pb:***@/nodb"), std::string::npos) << what;
  }
  EXPECT_THROW(History::check_path("postgresql://host/db?no_such_option=1"), NotAHistory);
  History::check_path(url);  // well-formed: judged when opened
}

// A connection the server drops between runs (a restart, a network cut): the next write fails
// as worth retrying, stores nothing half-way, and a new connection stores the run.
TEST(HistoryPostgres, AConnectionLostMidUploadIsWorthRetryingAndStoresNothingHalfWay) {
  TestDatabase database(Backend::kPostgres);
  SKIP_UNLESS_AVAILABLE(database);
  History h(database.db());
  h.append_run(run_doc("2026-01-01T00:00:00Z", 10), "first.json");
  ASSERT_EQ(database.exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE datname = current_database() AND application_name = 'pairbench'"),
            "");
  nlohmann::json doc = run_doc("2026-01-02T00:00:00Z", 20);
  doc["pairbench"]["run_id"] = "after-the-cut";
  EXPECT_THROW(h.append_run(doc, "second.json"), HistoryBusy);
  History again(database.db());
  EXPECT_EQ(again.run_count(), 1);  // nothing of the second run
  bool before = true;
  again.append_run(doc, "second.json", &before);
  EXPECT_FALSE(before);
  EXPECT_EQ(again.run_count(), 2);
}

TEST(HistoryNames, PasswordsAreRedactedAndPathsKept) {
  EXPECT_EQ(redact_db("postgresql://u:pw@h:5432/db"), "postgresql://u:***@h:5432/db");
  EXPECT_EQ(redact_db("postgres://u@h/db?password=pw&sslmode=require"),
            "postgres://u@h/db?password=***&sslmode=require");
  EXPECT_EQ(redact_db("postgresql:///db?host=/tmp/x&user=u"), "postgresql:///db?host=/tmp/x&user=u");
  EXPECT_EQ(redact_db("results/history.sqlite"), "results/history.sqlite");
  EXPECT_TRUE(is_postgres_url("postgres://h/db"));
  EXPECT_FALSE(is_postgres_url("postgresql.sqlite"));
}

// A history written by the first schema (user_version 1, one row per sample) is migrated on open
// (inside one transaction): the samples become per-run medians, and `samples` stays readable.
TEST(HistorySqlite, SchemaVersion1IsMigratedKeepingEverySample) {
  char tmpl[] = "/tmp/pairbench-history-test-XXXXXX";
  const std::string dir = mkdtemp(tmpl), path = dir + "/history.sqlite";
  sqlite3* c = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &c), SQLITE_OK);
  const char* v1 = R"sql(
    PRAGMA application_id = 1346521137; PRAGMA user_version = 1;
    CREATE TABLE runs(id INTEGER PRIMARY KEY, started_at TEXT NOT NULL, git_sha TEXT NOT NULL,
      machine_key TEXT NOT NULL, profile TEXT NOT NULL, fingerprint TEXT NOT NULL, run_file TEXT NOT NULL,
      run_uid TEXT);
    CREATE UNIQUE INDEX runs_by_uid ON runs(run_uid);
    CREATE TABLE samples(run_id INTEGER NOT NULL REFERENCES runs(id), benchmark TEXT NOT NULL,
      experiment TEXT NOT NULL, arm TEXT NOT NULL, repetition INTEGER NOT NULL, metric TEXT NOT NULL,
      unit TEXT NOT NULL, better TEXT NOT NULL, value REAL NOT NULL);
    CREATE TABLE baselines(machine_key TEXT PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id),
      updated_at TEXT NOT NULL);
    CREATE TABLE change_points(benchmark TEXT NOT NULL, machine_key TEXT NOT NULL, run_id INTEGER NOT NULL,
      before REAL NOT NULL, after REAL NOT NULL, PRIMARY KEY(benchmark, machine_key, run_id));
    INSERT INTO runs VALUES(1, '2026-01-01T00:00:00Z', 'abc', 'm1', 'quick', '{"cpu_model":"Old CPU"}', 'r1.json', 'old-1');
    INSERT INTO samples VALUES(1, 'demo.x/a/n:1', 'demo.x', 'a', 1, 'ns_per_op', 'ns', 'lower', 14.0);
    INSERT INTO samples VALUES(1, 'demo.x/a/n:1', 'demo.x', 'a', 0, 'ns_per_op', 'ns', 'lower', 10.0);
    INSERT INTO samples VALUES(1, 'demo.x/a/n:1', 'demo.x', 'a', 2, 'ns_per_op', 'ns', 'lower', 12.0);
    INSERT INTO baselines VALUES('m1', 1, '2026-01-01T00:00:00Z');
  )sql";
  ASSERT_EQ(sqlite3_exec(c, v1, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(c);
  sqlite3_close(c);
  {
    History h(path);
    const auto s = h.series("m1");
    ASSERT_EQ(s.size(), 1u);
    ASSERT_EQ(s[0].points.size(), 1u);
    EXPECT_EQ(s[0].points[0].median, 12);
    EXPECT_EQ(s[0].points[0].values, (std::vector<double>{10, 14, 12}));  // repetition order
    EXPECT_EQ(s[0].points[0].run->run_uid, "old-1");
    EXPECT_EQ(h.series("m1", "", 0, /*with_values=*/false).at(0).points.at(0).median, 12);  // packed by the migration
    EXPECT_EQ(h.baseline_run("m1"), 1);
    EXPECT_EQ(h.machines().at(0).machine_kind, "Old CPU");
    EXPECT_FALSE(h.run_document(1).has_value());  // stored before documents were kept
    // Importing the run again completes it with its document, still once.
    nlohmann::json doc = run_doc("2026-01-01T00:00:00Z", 10);
    doc["pairbench"]["run_id"] = "old-1";
    bool before = false;
    EXPECT_EQ(h.append_run(doc, "r1.json", &before), 1);
    EXPECT_TRUE(before);
    EXPECT_EQ(h.run_document(1), doc);
  }
  ASSERT_EQ(sqlite3_open(path.c_str(), &c), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(c, "SELECT count(*), sum(value), min(repetition), max(repetition) FROM samples", -1, &q,
                               nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(q, 0), 3);  // plots/ reads samples: still one row per sample
  EXPECT_EQ(sqlite3_column_double(q, 1), 36.0);
  EXPECT_EQ(sqlite3_column_int(q, 2), 0);
  EXPECT_EQ(sqlite3_column_int(q, 3), 2);
  sqlite3_finalize(q);
  sqlite3_close(c);
  fs::remove_all(dir);
}

TEST(HistorySqlite, UnopenablePathIsOneClearError) {
  try {
    History h("/proc/no/such/dir/history.sqlite");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("/proc/no/such/dir/history.sqlite"), std::string::npos);
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, HistoryTest, ::testing::Values(Backend::kSqlite, Backend::kPostgres),
                         testing_backends::param_name);

TEST(ChangePoints, FindsAStepAndIgnoresNoise) {
  std::vector<double> series;
  for (int i = 0; i < 30; ++i) series.push_back(100 * (1 + 0.005 * ((i * 7) % 5 - 2)));
  EXPECT_TRUE(detect_change_points(series).empty());
  for (int i = 0; i < 30; ++i) series.push_back(110 * (1 + 0.005 * ((i * 3) % 5 - 2)));
  const auto cps = detect_change_points(series);
  ASSERT_EQ(cps.size(), 1u);
  EXPECT_EQ(cps[0], 30u);
}

TEST(ChangePoints, FindsTwoSteps) {
  std::vector<double> series;
  for (int i = 0; i < 20; ++i) series.push_back(100 + (i % 3));
  for (int i = 0; i < 20; ++i) series.push_back(130 + (i % 3));
  for (int i = 0; i < 20; ++i) series.push_back(90 + (i % 3));
  const auto cps = detect_change_points(series);
  ASSERT_EQ(cps.size(), 2u);
  EXPECT_EQ(cps[0], 20u);
  EXPECT_EQ(cps[1], 40u);
}

TEST(ChangePoints, OfASeriesWithTheSegmentMediansAround) {
  History::Series s{"b", "ns_per_op", "ns", "lower", {}};
  for (int i = 0; i < 20; ++i)
    s.points.push_back({100 + i, nullptr, i < 10 ? 100.0 + (i % 2) : 150.0 + (i % 2), 3, {}});
  const auto found = find_change_points(s);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].index, 10u);
  EXPECT_EQ(found[0].point.run_id, 110);
  EXPECT_EQ(found[0].point.before, 100.5);
  EXPECT_EQ(found[0].point.after, 150.5);
  s.points[3].median = 0;  // a metric that can be zero: no logarithm, no change points
  EXPECT_TRUE(find_change_points(s).empty());
}

TEST(MultipleTesting, HolmAndBenjaminiHochbergKnownAnswers) {
  // Textbook example: p = 0.01, 0.04, 0.03, 0.005 (m = 4).
  const std::vector<double> p = {0.01, 0.04, 0.03, 0.005};
  const auto holm = stats::holm_adjust(p);
  // Sorted 0.005, 0.01, 0.03, 0.04 -> 4*0.005=0.02, 3*0.01=0.03, 2*0.03=0.06, 1*0.04 -> max(0.06, 0.04) = 0.06.
  EXPECT_DOUBLE_EQ(holm[3], 0.02);
  EXPECT_DOUBLE_EQ(holm[0], 0.03);
  EXPECT_DOUBLE_EQ(holm[2], 0.06);
  EXPECT_DOUBLE_EQ(holm[1], 0.06);
  const auto bh = stats::benjamini_hochberg_adjust(p);
  // Sorted: 0.005*4/1=0.02, 0.01*4/2=0.02, 0.03*4/3=0.04, 0.04*4/4=0.04 (then running minimum from the top).
  EXPECT_DOUBLE_EQ(bh[3], 0.02);
  EXPECT_DOUBLE_EQ(bh[0], 0.02);
  EXPECT_DOUBLE_EQ(bh[2], 0.04);
  EXPECT_DOUBLE_EQ(bh[1], 0.04);
  EXPECT_THROW(stats::holm_adjust(std::vector<double>{1.5}), std::invalid_argument);
  EXPECT_TRUE(stats::holm_adjust(std::vector<double>{}).empty());
}

}  // namespace
}  // namespace pairbench::harness
