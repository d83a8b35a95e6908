// Load on the history: 8 concurrent `pairbench history import` processes x 100 runs each, plus
// 20 duplicate imports per writer (10 of its own runs again, 10 of the next writer's, racing), into
// PostgreSQL (and the same into SQLite). Then every run file is read back and compared: 0 lost,
// 0 duplicated, 0 corrupt. Prints the import rate (a figure to quote, not asserted).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <thread>

#include "harness/store/history.h"
#include "harness/stats/stats.h"
#include "history_backends.h"

namespace pairbench::harness {
namespace {
using testing_backends::Backend;
using testing_backends::TestDatabase;

constexpr int kWriters = 8, kRunsEach = 100, kBenchmarks = 6, kSamples = 3, kMachines = 4;
constexpr auto kLimit = std::chrono::seconds(240);  // every writer together

// A run file: the fixture's (6 benchmarks x 3 processes), its values moved by up to +-10 %.
nlohmann::json load_run(int writer, int i) {
  static const nlohmann::json fixture =
      nlohmann::json::parse(std::ifstream(std::string(FIXTURES_DIR) + "/run_cpu_a.json"));
  std::mt19937_64 rng(static_cast<std::uint64_t>(writer) * 1000 + i);
  std::uniform_real_distribution<double> noise(0.9, 1.1);
  nlohmann::json doc = fixture;
  for (auto& b : doc["benchmarks"]) b["metric_value"] = b["metric_value"].get<double>() * noise(rng);
  char started[32];
  std::snprintf(started, sizeof started, "2026-02-%02dT%02d:%02d:00Z", 1 + i % 28, writer, i % 60);
  auto& pb = doc["pairbench"];
  pb["run_id"] = "load-w" + std::to_string(writer) + "-r" + std::to_string(i);
  pb["started_at"] = started;
  pb["environment"]["machine_key"] = "load-m" + std::to_string((writer + i) % kMachines);
  return doc;
}

std::string file_of(const std::string& dir, int writer, int i) {
  return dir + "/w" + std::to_string(writer) + "-r" + std::to_string(i) + ".json";
}

class HistoryLoad : public ::testing::TestWithParam<Backend> {};

TEST_P(HistoryLoad, EightConcurrentImportersLoseDuplicateAndCorruptNothing) {
  TestDatabase database(GetParam());
  SKIP_UNLESS_AVAILABLE(database);
  const std::string& dir = database.dir();
  std::map<std::string, nlohmann::json> written;  // run id -> document
  for (int w = 0; w < kWriters; ++w) {
    for (int i = 0; i < kRunsEach; ++i) {
      const nlohmann::json doc = load_run(w, i);
      std::ofstream(file_of(dir, w, i)) << doc.dump();
      written[doc["pairbench"]["run_id"]] = doc;
    }
  }
  { History create(database.db()); }  // the schema exists before the race: the race is on runs

  // Each writer: its own runs, 10 of them again and 10 of the next writer's, in a shuffled order.
  std::vector<pid_t> writers;
  int imports = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int w = 0; w < kWriters; ++w) {
    std::vector<std::string> files;
    for (int i = 0; i < kRunsEach; ++i) files.push_back(file_of(dir, w, i));
    for (int i = 0; i < 10; ++i) {
      files.push_back(file_of(dir, w, i * 7));
      files.push_back(file_of(dir, (w + 1) % kWriters, i * 9));
    }
    std::shuffle(files.begin(), files.end(), std::mt19937(w));
    imports += static_cast<int>(files.size());
    std::vector<std::string> args = {PAIRBENCH_EXE, "history", "import"};
    args.insert(args.end(), files.begin(), files.end());
    args.insert(args.end(), {"--db", database.db()});
    const std::string log = dir + "/writer" + std::to_string(w) + ".log";
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
    writers.push_back(pid);
  }
  const auto deadline = t0 + kLimit;
  for (std::size_t k = 0; k < writers.size(); ++k) {
    int status = 0;
    while (waitpid(writers[k], &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        for (pid_t p : writers) kill(p, SIGKILL);
        waitpid(writers[k], &status, 0);
        ADD_FAILURE() << "writer " << k << " still running after " << kLimit.count() << " s";
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::ifstream log(dir + "/writer" + std::to_string(k) + ".log");
    const std::string said((std::istreambuf_iterator<char>(log)), std::istreambuf_iterator<char>());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "writer " << k << ":\n" << said;
  }
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // Read everything back through a fresh connection and compare with what was written.
  History h(database.db());
  int lost = 0, corrupt = 0;
  for (const auto& [id, doc] : written) {
    const auto run = h.run_by_uid(id);
    if (!run) {
      ++lost;
      continue;
    }
    const auto stored = h.run_document(run->id);
    if (!stored || *stored != doc || run->machine_key != doc["pairbench"]["environment"]["machine_key"]) ++corrupt;
  }
  const std::int64_t runs = h.run_count();
  // Per run and benchmark: exactly one row, with the median of that run's samples.
  std::int64_t points = 0;
  for (int m = 0; m < kMachines; ++m) {
    for (const auto& s : h.series("load-m" + std::to_string(m))) {
      for (const auto& p : s.points) {
        ++points;
        const auto& doc = written.at(p.run->run_uid);
        std::vector<double> values;
        for (const auto& b : doc["benchmarks"]) {
          if (b["name"] == s.benchmark) values.push_back(b["metric_value"]);
        }
        if (p.values != values || p.median != stats::median(values)) ++corrupt;
      }
    }
  }
  const std::int64_t duplicated = runs - static_cast<std::int64_t>(written.size()) + lost;
  EXPECT_EQ(lost, 0);
  EXPECT_EQ(duplicated, 0);
  EXPECT_EQ(corrupt, 0);
  EXPECT_EQ(runs, kWriters * kRunsEach);
  EXPECT_EQ(points, static_cast<std::int64_t>(kWriters) * kRunsEach * kBenchmarks);
  std::printf(
      "[load] %s: %d writers x %d runs (+%d duplicate imports; %d benchmarks x %d samples each): "
      "%lld stored, %d lost, %lld duplicated, %d corrupt; %d imports in %.2f s = %.0f imports/s\n",
      testing_backends::backend_name(GetParam()).c_str(), kWriters, kRunsEach, imports - kWriters * kRunsEach,
      kBenchmarks, kSamples, static_cast<long long>(runs), lost, static_cast<long long>(duplicated), corrupt, imports,
      wall_s, imports / wall_s);
}

INSTANTIATE_TEST_SUITE_P(Backends, HistoryLoad, ::testing::Values(Backend::kSqlite, Backend::kPostgres),
                         testing_backends::param_name);

}  // namespace
}  // namespace pairbench::harness
