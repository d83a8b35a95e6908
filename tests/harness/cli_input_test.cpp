// Bad input to the pairbench CLI and its stores (issue 15): every numeric option finite and in
// range, filters that select nothing, machine keys that would steer a path out of results/,
// histories that are not ours, FIFOs, and JSON of the wrong shape. Each is refused with one line
// naming the option, file or field, exit 2, never nlohmann's raw "[json.exception" text, and
// without touching the file it refused. Every pairbench call has its own time limit.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <sstream>

#include "harness/exec/calibration.h"
#include "harness/exec/catalogue.h"
#include "harness/exec/environment.h"
#include "harness/store/file_checks.h"
#include "harness/store/history.h"
#include "harness/store/json_field.h"
#include "harness/exec/process.h"

namespace pairbench::harness {
namespace {
namespace fs = std::filesystem;

constexpr auto kCallLimit = std::chrono::seconds(30);
// A FIFO must be refused at once; blocking on it would take the whole limit.
constexpr auto kFifoLimit = std::chrono::seconds(10);

const std::string kGoodRun = std::string(FIXTURES_DIR) + "/run_cpu_a.json";

ProcessResult pairbench(std::vector<std::string> args, std::chrono::seconds limit = kCallLimit) {
  args.insert(args.begin(), PAIRBENCH_EXE);
  return run_process(args, {}, limit);
}

int line_count(const std::string& s) {
  int n = 0;
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);) n += !line.empty();
  return n;
}

std::string joined(const std::vector<std::string>& args) {
  std::string out;
  for (const auto& a : args) out += (out.empty() ? "" : " ") + a;
  return out;
}

// Refused as bad input: exit 2, one line, naming `what`, no raw nlohmann text.
void expect_refused(const std::vector<std::string>& args, const std::string& what,
                    std::chrono::seconds limit = kCallLimit) {
  SCOPED_TRACE(joined(args));
  const ProcessResult r = pairbench(args, limit);
  ASSERT_EQ(r.status, ProcessResult::Status::kExited) << r.describe() << "\n" << r.output;
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(line_count(r.output), 1) << r.output;
  EXPECT_NE(r.output.find(what), std::string::npos) << "expected '" << what << "' in: " << r.output;
  EXPECT_EQ(r.output.find("[json.exception"), std::string::npos) << r.output;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

nlohmann::json good_run() {
  std::ifstream in(kGoodRun);
  return nlohmann::json::parse(in);
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/pairbench-cli-input-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TempDir() { fs::remove_all(path); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path + "/" + name, std::ios::binary) << text;
    return path + "/" + name;
  }
  std::string path;
};

// Runs SQL on a database file outside pairbench (to build other programs' databases and old histories).
void sql(const std::string& db_path, const std::string& statements) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(db_path.c_str(), &db), SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, statements.c_str(), nullptr, nullptr, &err);
  const std::string why = err ? err : "";
  sqlite3_free(err);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << why;
}

std::int64_t sql_integer(const std::string& db_path, const std::string& query) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READWRITE, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  std::int64_t value = -1;
  if (sqlite3_prepare_v2(db, query.c_str(), -1, &stmt, nullptr) == SQLITE_OK && sqlite3_step(stmt) == SQLITE_ROW) {
    value = sqlite3_column_int64(stmt, 0);
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return value;
}

// Every file and directory under `dir`, relative to it.
std::set<std::string> tree(const std::string& dir) {
  std::set<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(dir)) out.insert(fs::relative(e.path(), dir).string());
  return out;
}

// --- 1: numeric options -------------------------------------------------------------------------

TEST(CliInput, EveryFloatingPointOptionMustBeFiniteAndInRange) {
  TempDir tmp;
  const std::string empty_dir = tmp.path + "/no-benches";
  fs::create_directory(empty_dir);
  // Enough for each command to get past parsing; an empty bench directory makes any command that
  // wrongly accepted the value fail fast, and without naming the option.
  const std::vector<std::vector<std::string>> gate_commands = {
      {"compare", kGoodRun, kGoodRun},
      {"gate", "--baseline", kGoodRun, "--current", kGoodRun},
      {"ab", "--baseline-build", empty_dir, "--candidate-build", empty_dir},
      {"selftest", "--bench-dir", empty_dir},
  };
  struct Case {
    std::string option;
    std::vector<std::string> values;
  };
  const std::vector<std::string> non_finite = {"nan", "NaN", "-nan", "inf", "-inf", "infinity", "1e999"};
  auto with = [&](std::vector<std::string> extra) {
    extra.insert(extra.end(), non_finite.begin(), non_finite.end());
    return extra;
  };
  const std::vector<Case> gate_cases = {
      {"--threshold", with({"-0.05", "0", "11", "5%", ""})},
      {"--instructions-threshold", with({"-0.01", "0", "x"})},
      {"--alpha", with({"-0.01", "0", "1", "1.5", "0.51"})},
  };
  for (const auto& command : gate_commands) {
    for (const Case& c : gate_cases) {
      for (const std::string& v : c.values) {
        auto args = command;
        args.insert(args.end(), {c.option, v});
        expect_refused(args, c.option);
      }
    }
  }
  const std::vector<std::pair<std::vector<std::string>, std::vector<Case>>> own_options = {
      {{"run", "--bench-dir", empty_dir, "--no-history", "--out", tmp.path + "/run.json"},
       {{"--min-time", with({"-1", "0", "601"})}, {"--timeout", with({"-1", "0", "0.5", "86401"})}}},
      {{"ab", "--baseline-build", empty_dir, "--candidate-build", empty_dir},
       {{"--min-time", with({"-1", "0"})}, {"--timeout", with({"-1", "0"})}}},
      {{"selftest", "--bench-dir", empty_dir}, {{"--min-time", with({"-1", "0"})}}},
      {{"report", "--run", kGoodRun, "-o", tmp.path + "/report"}, {{"--timeout", with({"-1", "0"})}}},
  };
  for (const auto& [command, cases] : own_options) {
    for (const Case& c : cases) {
      for (const std::string& v : c.values) {
        auto args = command;
        args.insert(args.end(), {c.option, v});
        expect_refused(args, c.option);
      }
    }
  }
  EXPECT_TRUE(tree(tmp.path) == std::set<std::string>{"no-benches"}) << "a refused command wrote something";
}

TEST(CliInput, WholeNumberOptionsRefuseWhatIsNotAWholeNumberInRange) {
  TempDir tmp;
  const std::vector<std::string> run = {"run", "--bench-dir", tmp.path, "--no-history", "--out", tmp.path + "/r.json"};
  for (const auto& [option, value] :
       std::vector<std::pair<std::string, std::string>>{{"--repetitions", "nan"},
                                                        {"--repetitions", "0"},
                                                        {"--repetitions", "-3"},
                                                        {"--repetitions", "1.5"},
                                                        {"--batches", "inf"},
                                                        {"--instruction-processes", "-1"},
                                                        {"--seed", "-1"},
                                                        {"--seed", "nan"},
                                                        {"--seed", "1e3"},
                                                        {"--seed", "18446744073709551616"}}) {
    auto args = run;
    args.insert(args.end(), {option, value});
    expect_refused(args, option);
  }
  expect_refused({"history", "--db", tmp.path + "/h.sqlite", "--last", "nan"}, "--last");
  expect_refused({"selftest", "--bench-dir", tmp.path, "--seed", "-5"}, "--seed");
  expect_refused({"ab", "--baseline-build", tmp.path, "--candidate-build", tmp.path, "--seed", "x"}, "--seed");
}

// The validators must still let good values through (else the tests above prove nothing).
TEST(CliInput, FiniteInRangeValuesAreAccepted) {
  const ProcessResult r = pairbench({"compare", kGoodRun, kGoodRun, "--threshold", "0.05", "--alpha", "1e-2",
                                     "--instructions-threshold", "0.01", "--undecided", "pass"});
  ASSERT_EQ(r.status, ProcessResult::Status::kExited) << r.describe();
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// --- 4: filters ---------------------------------------------------------------------------------

TEST(CliInput, FiltersThatSelectNothingAreRefused) {
  TempDir tmp;
  const std::string out = tmp.path + "/run.json";
  for (const std::string filter :
       {",", ",,", "faults.mixed,", ",faults", "faults,,faults.mixed", " ", "faults mixed"}) {
    expect_refused({"run", "--bench-dir", FAULT_BENCH_DIR, "--no-history", "--out", out, "--experiments", filter},
                   "--experiments");
    expect_refused({"run", "--bench-dir", FAULT_BENCH_DIR, "--no-history", "--out", out, "--arms", filter}, "--arms");
    expect_refused({"selftest", "--bench-dir", FAULT_BENCH_DIR, "--experiments", filter}, "--experiments");
    expect_refused({"ab", "--baseline-build", FAULT_BENCH_DIR, "--candidate-build", FAULT_BENCH_DIR, "--arms", filter},
                   "--arms");
  }
  // Names that match nothing, and a bench directory with nothing to list or run.
  expect_refused({"run", "--bench-dir", FAULT_BENCH_DIR, "--no-history", "--out", out, "--experiments", "nothing"},
                 "nothing");
  expect_refused({"run", "--bench-dir", FAULT_BENCH_DIR, "--no-history", "--out", out, "--arms", "unicorn"}, "unicorn");
  expect_refused({"list", "--bench-dir", tmp.path}, "no bench_* executables");
  expect_refused({"run", "--bench-dir", tmp.path, "--no-history", "--out", out}, "no bench_* executables");
  expect_refused({"list", "--bench-dir", tmp.path + "/absent"}, "--bench-dir");
  EXPECT_FALSE(fs::exists(out));
}

// --- 2: machine keys that name files ------------------------------------------------------------

TEST(CliInput, BaselineUpdateNeverWritesOutsideTheResultsDirectory) {
  // The key "/tmp/x" would name /tmp/x.json: it must not be written (nor made, where something
  // else on this machine left one there: then it must be left as it was).
  std::error_code ec;
  const bool tmp_x_existed = fs::exists("/tmp/x.json");
  const auto tmp_x_time = tmp_x_existed ? fs::last_write_time("/tmp/x.json", ec) : fs::file_time_type{};
  for (const std::string& key : std::vector<std::string>{"../../x", "../x", "/tmp/x", "a/b", ".hidden", "..", "",
                                                         "x\ny", std::string(65, 'k')}) {
    SCOPED_TRACE(quoted_for_message(key));
    TempDir tmp;
    const std::string results = tmp.path + "/deep/er/results";
    fs::create_directories(results);
    nlohmann::json doc = good_run();
    doc["pairbench"]["environment"]["machine_key"] = key;
    const std::string run = tmp.write("run.json", doc.dump());
    const auto before = tree(tmp.path);
    expect_refused({"baseline", "update", "--run", run, "--results-dir", results, "--history", "none"},
                   "pairbench.environment.machine_key");
    // The gate builds the same path to find this machine's baseline.
    expect_refused({"gate", "--current", run, "--results-dir", results, "--history", "none"},
                   "pairbench.environment.machine_key");
    EXPECT_EQ(tree(tmp.path), before);
    EXPECT_EQ(fs::exists("/tmp/x.json"), tmp_x_existed);
    if (tmp_x_existed) EXPECT_EQ(fs::last_write_time("/tmp/x.json", ec), tmp_x_time);
  }
  // A well-formed key is stored where it belongs.
  TempDir tmp;
  nlohmann::json doc = good_run();
  doc["pairbench"]["environment"]["machine_key"] = "0123abcd.gpu-1_x";
  const std::string run = tmp.write("run.json", doc.dump());
  const ProcessResult r =
      pairbench({"baseline", "update", "--run", run, "--results-dir", tmp.path + "/results", "--history", "none"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::is_regular_file(tmp.path + "/results/baselines/0123abcd.gpu-1_x.json"));
}

TEST(FileChecks, KeyedPathsStayDirectlyInsideTheirDirectory) {
  EXPECT_EQ(keyed_path_under("results/baselines", "0123abcdef012345", ".json", "key"),
            "results/baselines/0123abcdef012345.json");
  EXPECT_EQ(keyed_path_under("results/baselines/", "k", ".json", "key"), "results/baselines/k.json");
  for (const std::string key : {"../../x", "..", ".", "a/b", "/abs", ".x", "", "a b", "a\\b", "ключ"}) {
    EXPECT_FALSE(is_safe_file_key(key)) << key;
    EXPECT_THROW(keyed_path_under("results/baselines", key, ".json", "key"), FileCheckError) << key;
  }
  EXPECT_TRUE(is_safe_file_key(std::string(64, 'a')));
  EXPECT_FALSE(is_safe_file_key(std::string(65, 'a')));
  try {
    keyed_path_under("r", "../../x", ".json", "run.json: pairbench.environment.machine_key");
    ADD_FAILURE() << "no error";
  } catch (const FileCheckError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("run.json: pairbench.environment.machine_key: \"../../x\"", 0), 0u)
        << e.what();
  }
}

// --- 3: history identity ------------------------------------------------------------------------

// The schema histories had before application_id (one run of two samples on machine m1).
void make_legacy_history(const std::string& path) {
  sql(path, R"sql(
    CREATE TABLE runs(id INTEGER PRIMARY KEY, started_at TEXT NOT NULL, git_sha TEXT NOT NULL,
      machine_key TEXT NOT NULL, profile TEXT NOT NULL, fingerprint TEXT NOT NULL, run_file TEXT NOT NULL);
    CREATE TABLE samples(run_id INTEGER NOT NULL REFERENCES runs(id), benchmark TEXT NOT NULL,
      experiment TEXT NOT NULL, arm TEXT NOT NULL, repetition INTEGER NOT NULL, metric TEXT NOT NULL,
      unit TEXT NOT NULL, better TEXT NOT NULL, value REAL NOT NULL);
    CREATE TABLE baselines(machine_key TEXT PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id),
      updated_at TEXT NOT NULL);
    CREATE TABLE change_points(benchmark TEXT NOT NULL, machine_key TEXT NOT NULL, run_id INTEGER NOT NULL,
      before REAL NOT NULL, after REAL NOT NULL, PRIMARY KEY(benchmark, machine_key, run_id));
    CREATE INDEX samples_by_benchmark ON samples(benchmark, run_id);
    CREATE INDEX runs_by_machine ON runs(machine_key, started_at);
    INSERT INTO runs VALUES(1, '2026-01-01T00:00:00Z', 'abc', 'm1', 'quick', '{}', 'r1.json');
    INSERT INTO samples VALUES(1, 'demo.x/a/n:1', 'demo.x', 'a', 0, 'ns_per_op', 'ns', 'lower', 10.0);
    INSERT INTO samples VALUES(1, 'demo.x/a/n:1', 'demo.x', 'a', 1, 'ns_per_op', 'ns', 'lower', 12.0);
  )sql");
}

// Every command that takes a history, with `db` as it.
std::vector<std::vector<std::string>> history_commands(const std::string& db, const std::string& dir) {
  return {{"history", "--db", db, "--machine", "m1"},
          {"run", "--bench-dir", FAULT_BENCH_DIR, "--experiments", "faults", "--arms", "ok", "--history", db, "--out",
           dir + "/run.json"},
          {"compare", kGoodRun, kGoodRun, "--history", db},
          {"gate", "--baseline", kGoodRun, "--current", kGoodRun, "--history", db},
          {"baseline", "update", "--run", kGoodRun, "--results-dir", dir + "/results", "--history", db}};
}

TEST(CliInput, FilesThatAreNotOurHistoryAreRefusedAndLeftUntouched) {
  TempDir tmp;
  const std::string other_db = tmp.path + "/other.sqlite";
  sql(other_db, "CREATE TABLE notes(id INTEGER PRIMARY KEY, text TEXT); INSERT INTO notes(text) VALUES('keep me');");
  const std::string foreign_id = tmp.path + "/foreign-id.sqlite";
  make_legacy_history(foreign_id);
  sql(foreign_id, "PRAGMA application_id = 1234;");
  const std::string newer = tmp.path + "/newer.sqlite";
  make_legacy_history(newer);
  sql(newer, "PRAGMA application_id = " + std::to_string(kHistoryApplicationId) + "; PRAGMA user_version = 99;");
  const std::string bare = tmp.path + "/bare.sqlite";
  sql(bare, "CREATE TABLE t(x); DROP TABLE t;");  // a valid, non-empty SQLite file with no tables
  struct Case {
    std::string path, expected;
  };
  const std::vector<Case> cases = {
      {other_db, "not a pairbench history"},
      {tmp.write("empty.sqlite", ""), "an empty file"},
      {tmp.write("notes.txt", "just some text, not a database\n"), "not an SQLite database"},
      {foreign_id, "application_id 0x000004d2"},
      {newer, "newer pairbench"},
      {bare, "not a pairbench history"},
  };
  for (const Case& c : cases) {
    const std::string bytes = read_bytes(c.path);
    for (const auto& args : history_commands(c.path, tmp.path)) expect_refused(args, c.expected);
    EXPECT_THROW(History{c.path}, NotAHistory) << c.path;
    EXPECT_THROW(History::check_path(c.path), NotAHistory) << c.path;
    EXPECT_EQ(read_bytes(c.path), bytes) << c.path << " was changed";
  }
  EXPECT_FALSE(fs::exists(tmp.path + "/run.json"));
  EXPECT_FALSE(fs::exists(tmp.path + "/results"));  // baseline update refused before writing
}

TEST(CliInput, FifoDirectoryOrDeviceAsAnyFileArgumentIsRefusedAtOnce) {
  TempDir tmp;
  const std::string fifo = tmp.path + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& odd : {fifo, tmp.path, std::string("/dev/null")}) {
    for (const auto& args : history_commands(odd, tmp.path)) expect_refused(args, odd, kFifoLimit);
    expect_refused({"compare", odd, kGoodRun}, odd, kFifoLimit);
    expect_refused({"compare", kGoodRun, odd}, odd, kFifoLimit);
    expect_refused({"gate", "--baseline", odd, "--current", kGoodRun, "--history", "none"}, odd, kFifoLimit);
    expect_refused({"baseline", "update", "--run", odd, "--results-dir", tmp.path + "/results"}, odd, kFifoLimit);
    expect_refused({"report", "--run", odd, "-o", tmp.path + "/report"}, odd, kFifoLimit);
    expect_refused({"run", "--bench-dir", FAULT_BENCH_DIR, "--no-history", "--calibration", odd}, "--calibration",
                   kFifoLimit);
    for (const std::string output : {"--markdown", "--junit", "--json"}) {
      expect_refused({"compare", kGoodRun, kGoodRun, output, odd}, output, kFifoLimit);
    }
  }
  EXPECT_FALSE(fs::exists(tmp.path + "/results"));
}

TEST(CliInput, HistoriesFromBeforeTheStampStillOpenAndGetStamped) {
  TempDir tmp;
  const std::string legacy = tmp.path + "/legacy.sqlite";
  make_legacy_history(legacy);
  ASSERT_EQ(sql_integer(legacy, "PRAGMA application_id"), 0);
  History::check_path(legacy);  // accepted without being written
  EXPECT_EQ(sql_integer(legacy, "PRAGMA application_id"), 0);

  const ProcessResult r = pairbench({"history", "--db", legacy, "--machine", "m1", "--format", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto out = nlohmann::json::parse(r.output);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0]["benchmark"], "demo.x/a/n:1");
  EXPECT_EQ(out[0]["points"][0]["median"], 11.0);
  EXPECT_EQ(sql_integer(legacy, "PRAGMA application_id"), kHistoryApplicationId);
  EXPECT_EQ(sql_integer(legacy, "PRAGMA user_version"), kHistorySchemaVersion);
  EXPECT_EQ(sql_integer(legacy, "SELECT count(*) FROM samples"), 2);
}

TEST(CliInput, NewHistoriesAreCreatedStamped) {
  TempDir tmp;
  const std::string path = tmp.path + "/history.sqlite";
  { History created(path); }
  EXPECT_EQ(sql_integer(path, "PRAGMA application_id"), kHistoryApplicationId);
  EXPECT_EQ(sql_integer(path, "PRAGMA user_version"), kHistorySchemaVersion);
  History::check_path(path);
  { History again(path); }  // ours: opens
  // Only the history itself is left (no temporary file beside it).
  for (const auto& name : tree(tmp.path)) EXPECT_EQ(name.find(".new-"), std::string::npos) << name;
}

// --- 5: JSON of the wrong shape -----------------------------------------------------------------

TEST(CliInput, RunFileFieldsOfTheWrongTypeNameTheFieldNotNlohmann) {
  TempDir tmp;
  nlohmann::json doc = good_run();
  doc["pairbench"]["environment"]["machine_key"] = 42;
  const std::string numeric_key = tmp.write("numeric-key.json", doc.dump());
  // The run-file reader may refuse these first; either way the message names the file and field.
  expect_refused(
      {"baseline", "update", "--run", numeric_key, "--results-dir", tmp.path + "/results", "--history", "none"},
      numeric_key + ": pairbench.environment.machine_key");
  expect_refused({"gate", "--current", numeric_key, "--results-dir", tmp.path + "/results", "--history", "none"},
                 "pairbench.environment.machine_key");
  doc = good_run();
  doc["pairbench"]["environment"]["machine_key"] = "k1";
  doc["pairbench"]["started_at"] = nlohmann::json::array();
  const std::string odd_start = tmp.write("odd-start.json", doc.dump());
  expect_refused(
      {"baseline", "update", "--run", odd_start, "--results-dir", tmp.path + "/results", "--history", "none"},
      "pairbench.started_at");
  doc = good_run();
  doc["pairbench"]["environment"].erase("machine_key");
  const std::string no_key = tmp.write("no-key.json", doc.dump());
  expect_refused({"gate", "--current", no_key, "--results-dir", tmp.path + "/results", "--history", "none"},
                 "pairbench.environment.machine_key");
  EXPECT_FALSE(fs::exists(tmp.path + "/results"));
}

// A bench binary's catalogue: each field named by its path inside the listing.
TEST(JsonInput, CatalogueErrorsNameTheBinaryAndTheFieldPath) {
  const nlohmann::json good = nlohmann::json::parse(R"({
    "schema_version": 1,
    "experiments": [{
      "name": "demo.x", "claim": "C1", "question": "q?", "timing": "wall", "kind": "cpu",
      "metric": {"name": "ns_per_op", "unit": "ns", "better": "lower"},
      "axes": [{"name": "n", "values": ["1"]}],
      "arms": [{"name": "a", "role": "baseline", "env": {}}],
      "targets": [],
      "benchmarks": [{"name": "demo.x/a/n:1", "arm": "a", "params": {"n": "1"}, "available": true, "reason": ""}]
    }]})");
  ASSERT_EQ(parse_catalogue(good, "bench_demo").size(), 1u);
  struct Case {
    std::function<void(nlohmann::json&)> edit;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {[](auto& j) { j["schema_version"] = "1"; }, "schema_version: expected an integer"},
      {[](auto& j) { j["schema_version"] = 2; }, "schema_version: expected 1"},
      {[](auto& j) { j["experiments"] = nlohmann::json::object(); }, "experiments: expected an array, is an object"},
      {[](auto& j) { j["experiments"][0]["metric"]["unit"] = 7; }, "experiments[0].metric.unit: expected a string"},
      {[](auto& j) { j["experiments"][0]["benchmarks"][0]["available"] = "yes"; },
       "experiments[0].benchmarks[0].available: expected true or false"},
      {[](auto& j) { j["experiments"][0]["benchmarks"][0]["params"].erase("n"); },
       "experiments[0].benchmarks[0].params.n: missing"},
      {[](auto& j) {
         j["experiments"][0]["arms"][0]["env"] = {{"X", 1}};
       },
       "experiments[0].arms[0].env.X: expected a string"},
      {[](auto& j) { j["experiments"][0]["axes"][0]["values"] = "1"; },
       "experiments[0].axes[0].values: expected an array"},
      {[](auto& j) { j["experiments"][0]["gate_threshold"] = "5%"; },
       "experiments[0].gate_threshold: expected a number"},
      {[](auto& j) { j["experiments"][0]["metric"]["time_relation"] = "square"; },
       "experiments[0].metric.time_relation: expected proportional, inverse or none"},
  };
  for (const Case& c : cases) {
    nlohmann::json bad = good;
    c.edit(bad);
    try {
      parse_catalogue(bad, "bench_demo");
      ADD_FAILURE() << "accepted: " << c.expected;
    } catch (const nlohmann::json::exception& e) {
      ADD_FAILURE() << "raw nlohmann error for " << c.expected << ": " << e.what();
    } catch (const std::runtime_error& e) {
      const std::string what = e.what();
      EXPECT_EQ(what.rfind("bench_demo --pairbench_list: ", 0), 0u) << what;
      EXPECT_NE(what.find(c.expected), std::string::npos) << what;
    }
  }
}

TEST(JsonInput, ABadCalibrationCacheIsReportedByFieldAndIgnored) {
  TempDir tmp;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"schema_version": 1, "benchmarks": {"a.b/x:1": {"measured_s_per_iteration": "fast", "wall_s_per_iteration": 1}}})",
       "benchmarks[\"a.b/x:1\"].measured_s_per_iteration: expected a number, is the string \"fast\""},
      {R"({"schema_version": 1, "benchmarks": []})", "benchmarks: expected an object, is an array"},
      {R"({"schema_version": "one", "benchmarks": {}})", "schema_version: expected an integer"},
      {R"({"schema_version": 1, "benchmarks": {"k": {"wall_s_per_iteration": 1}}})",
       "benchmarks.k.measured_s_per_iteration: missing"},
      {R"({"schema_version": 1, "benchm)", "not valid JSON at byte"},
  };
  for (const auto& [text, expected] : cases) {
    const std::string path = tmp.write("cache.json", text);
    const CalibrationCache cache(path);
    EXPECT_EQ(cache.find("a.b/x:1"), nullptr);
    EXPECT_EQ(cache.load_problem().rfind(path + ": ", 0), 0u) << cache.load_problem();
    EXPECT_NE(cache.load_problem().find(expected), std::string::npos) << cache.load_problem();
    EXPECT_EQ(cache.load_problem().find("[json.exception"), std::string::npos) << cache.load_problem();
  }
  // A FIFO as the cache is never opened (that would block the run).
  const std::string fifo = tmp.path + "/fifo.json";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const CalibrationCache from_fifo(fifo);
  EXPECT_NE(from_fifo.load_problem().find("FIFO"), std::string::npos) << from_fifo.load_problem();
}

TEST(JsonInput, MessagesQuoteStringsFromFilesOnOneLine) {
  EXPECT_EQ(quoted_for_message("a\nb"), "\"a\\nb\"");
  EXPECT_EQ(quoted_for_message(std::string(100, 'x'), 10), "\"xxxxxxxxxx...\"");
  EXPECT_EQ(quoted_for_message("\xff"), "\"\xef\xbf\xbd\"");  // invalid UTF-8 replaced, not thrown
  try {
    (void)nlohmann::json::parse("[1]").at(3);
  } catch (const nlohmann::json::exception& e) {
    EXPECT_EQ(json_exception_text(e).find("[json.exception"), std::string::npos) << json_exception_text(e);
  }
}

// --- 6: git by argv, never through a shell ------------------------------------------------------

std::string find_on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::istringstream dirs(path ? path : "");
  for (std::string dir; std::getline(dirs, dir, ':');) {
    if (!dir.empty() && access((dir + "/" + name).c_str(), X_OK) == 0) return dir + "/" + name;
  }
  return "";
}

TEST(Environment, GitRunsWithoutAShellInADirectoryNamedWithQuotes) {
  const std::string git = find_on_path("git");
  if (git.empty()) GTEST_SKIP() << "git is not installed";
  TempDir tmp;
  // A shell would end the quoted argument at the quote and run the $(...) in the old `git -C '...'`.
  const std::string repo = tmp.path + "/it's $(touch injected) `true`";
  fs::create_directories(repo);
  auto run_git = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {git, "-C", repo, "-c", "user.name=pairbench", "-c", "user.email=test@invalid"});
    const ProcessResult r = run_process(args, {}, std::chrono::seconds(30));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return r.output;
  };
  run_git({"init", "-q"});
  std::ofstream(repo + "/tracked.txt") << "one\n";
  run_git({"add", "tracked.txt"});
  run_git({"commit", "-q", "-m", "init"});
  std::string sha = run_git({"rev-parse", "HEAD"});
  sha.erase(sha.find_last_not_of("\n") + 1);
  ASSERT_EQ(sha.size(), 40u) << sha;

  const Environment clean = capture_environment(repo);
  EXPECT_EQ(clean.fingerprint["git_sha"], sha);
  EXPECT_EQ(clean.fingerprint["git_dirty"], false);
  std::ofstream(repo + "/tracked.txt") << "two\n";
  EXPECT_EQ(capture_environment(repo).fingerprint["git_dirty"], true);
  EXPECT_FALSE(fs::exists("injected"));
  EXPECT_FALSE(fs::exists(tmp.path + "/injected"));
}

}  // namespace
}  // namespace pairbench::harness
