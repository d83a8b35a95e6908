// Nothing measured is lost and nothing is left behind, end to end with the built pairbench and a
// bench binary whose processes are slow and hold a scratch directory (tests/bench/slow_bench.cpp):
// SIGINT/SIGTERM mid-run, an output directory that disappears, a locked history database and
// `history import`, a process killed at its time limit, the report's Python killed at its limit
// or on SIGINT, a partial run at the gate. Every wait has its own time limit.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "harness/store/history.h"
#include "harness/exec/interrupt.h"
#include "harness/exec/process.h"
#include "harness/store/run_file.h"

extern char** environ;

namespace pairbench::harness {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// A fresh directory for one test, removed afterwards.
struct TestDir {
  std::string path;
  TestDir() {
    char tmpl[] = "/tmp/pairbench-interruption-XXXXXX";
    path = mkdtemp(tmpl);
  }
  ~TestDir() { fs::remove_all(path); }
};

// pairbench started in the background (in `cwd`, with extra environment variables), its stdout
// and stderr read as they come.
class Background {
 public:
  Background(const std::vector<std::string>& args, const std::map<std::string, std::string>& extra_env,
             const std::string& cwd) {
    std::vector<std::string> argv = {PAIRBENCH_EXE}, env;
    argv.insert(argv.end(), args.begin(), args.end());
    for (char** e = environ; *e; ++e) {
      const std::string entry = *e;
      if (!extra_env.count(entry.substr(0, entry.find('=')))) env.push_back(entry);
    }
    for (const auto& [k, v] : extra_env) env.push_back(k + "=" + v);
    std::vector<char*> argv_p, env_p;
    for (auto& a : argv) argv_p.push_back(a.data());
    for (auto& e : env) env_p.push_back(e.data());
    argv_p.push_back(nullptr);
    env_p.push_back(nullptr);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], STDOUT_FILENO);
      dup2(fds[1], STDERR_FILENO);
      if (chdir(cwd.c_str()) != 0) _exit(126);
      execve(argv_p[0], argv_p.data(), env_p.data());
      _exit(127);
    }
    close(fds[1]);
    fd_ = fds[0];
  }
  // A pairbench still running (the test failed before it ended) is stopped: SIGTERM lets it kill
  // its own children; SIGKILL if it has not ended 10 s later.
  ~Background() {
    if (pid_ > 0 && !reaped_) {
      kill(pid_, SIGTERM);
      wait_exit(10s);
    }
    if (fd_ >= 0) close(fd_);
  }
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;

  // Reads output until it contains `needle` or `limit` passes; whether it appeared.
  bool wait_for(const std::string& needle, std::chrono::duration<double> limit) {
    const auto end = Clock::now() + limit;
    while (output_.find(needle) == std::string::npos) {
      if (Clock::now() > end || (read_some(50) < 0 && exited())) return output_.find(needle) != std::string::npos;
    }
    return true;
  }
  // Waits for the process to end; its exit status (128 + signal when killed by one), or -1 when
  // `limit` passed first (it is then SIGKILLed).
  int wait_exit(std::chrono::duration<double> limit) {
    const auto end = Clock::now() + limit;
    while (!exited()) {
      if (Clock::now() > end) {
        kill(pid_, SIGKILL);
        waitpid(pid_, nullptr, 0);
        reaped_ = true;
        return -1;
      }
      read_some(50);
    }
    while (read_some(0) > 0) {
    }
    return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
  }
  void send(int sig) { kill(pid_, sig); }
  // Reads what is already in the pipe.
  void drain() {
    while (read_some(0) > 0) {
    }
  }
  const std::string& output() const { return output_; }

 private:
  bool exited() {
    if (!reaped_ && pid_ > 0 && waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
    return reaped_;
  }
  // Bytes read within `timeout_ms` (0 when none came), -1 at the end of the output.
  int read_some(int timeout_ms) {
    if (fd_ < 0) return -1;
    pollfd pfd{fd_, POLLIN, 0};
    if (poll(&pfd, 1, timeout_ms) <= 0) return 0;
    char buf[4096];
    const ssize_t n = read(fd_, buf, sizeof buf);
    if (n > 0) output_.append(buf, static_cast<std::size_t>(n));
    return n > 0 ? static_cast<int>(n) : -1;
  }
  pid_t pid_ = -1;
  int fd_ = -1;
  int status_ = 0;
  bool reaped_ = false;
  std::string output_;
};

// Polls `done` every 5 ms for up to `limit`.
bool eventually(const std::function<bool()>& done, std::chrono::duration<double> limit) {
  const auto end = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() > end) return done();
    std::this_thread::sleep_for(5ms);
  }
  return true;
}

// Live processes whose command line mentions `text` (a test's own directory: bench processes
// name their output files there, the report's Python its run file).
std::vector<std::string> processes_mentioning(const std::string& text) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    std::ifstream stat(entry.path() / "stat");
    std::string pid, comm, state;
    if (!(stat >> pid >> comm >> state) || state == "Z") continue;  // gone, or a zombie
    std::ifstream in(entry.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (char& c : cmdline) c = c ? c : ' ';
    if (cmdline.find(text) != std::string::npos) out.push_back(pid + ": " + cmdline);
  }
  return out;
}

// Whether some file or directory under `dir` has a name starting with `prefix`.
bool has_entry(const std::string& dir, const std::string& prefix) {
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, fs::directory_options::skip_permission_denied, ec)) {
    if (e.path().filename().string().rfind(prefix, 0) == 0) return true;
  }
  return false;
}

std::string listing(const std::string& dir) {
  std::string out;
  std::error_code ec;
  for (const auto& e : fs::recursive_directory_iterator(dir, ec)) out += e.path().string() + "\n";
  return out;
}

std::vector<std::string> lines_with(const std::string& output, const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);) {
    if (line.find(text) != std::string::npos) out.push_back(line);
  }
  return out;
}

// `run` over the slow bench's sleepy arm: no calibration cache, no history unless asked.
std::vector<std::string> sleepy_run(const std::string& repetitions, const std::string& out) {
  return {"run",  "--bench-dir",   SLOW_BENCH_DIR, "--arms",    "sleepy", "--repetitions", repetitions, "--min-time",
          "0.01", "--calibration", "none",         "--timeout", "30",     "--out",         out};
}

// SIGINT or SIGTERM after two processes finished: the exit status, a valid partial run file with
// exactly the finished processes' samples, one line saying so, no temporary and no process left.
void interrupt_mid_run(int sig, int expected_status, const std::string& name) {
  TestDir dir;
  const std::string tmp = dir.path + "/tmp", out = dir.path + "/run.json";
  fs::create_directories(tmp);
  auto args = sleepy_run("40", out);
  args.push_back("--no-history");
  Background run(args, {{"TMPDIR", tmp}}, dir.path);
  ASSERT_TRUE(run.wait_for("[2/40]", 60s)) << run.output();
  // Signalled while a process sits in its set-up holding its scratch directory (300 ms), after
  // the progress lines of those before it (printed before it started) have all been read.
  ASSERT_TRUE(eventually([&] { return has_entry(tmp, "pairbench-slow-bench-"); }, 30s)) << listing(tmp);
  run.send(sig);
  run.drain();
  const std::size_t finished_before = lines_with(run.output(), "/40] slow.scratch").size();
  ASSERT_EQ(run.wait_exit(30s), expected_status) << run.output();

  nlohmann::json doc = read_run_file(out);
  auto& interrupted = doc["pairbench"]["interrupted"];
  EXPECT_EQ(interrupted["signal"], name);
  EXPECT_EQ(interrupted["planned_processes"], 40);
  const int completed = interrupted["completed_processes"];
  EXPECT_GE(completed, 2);
  EXPECT_LT(completed, 40);
  // Every finished process is kept; the one running was killed (it never finished) and is no
  // failure: it measured nothing.
  EXPECT_EQ(static_cast<std::size_t>(completed), finished_before) << run.output();
  EXPECT_EQ(doc["benchmarks"].size(), static_cast<std::size_t>(completed));
  for (const auto& b : doc["benchmarks"]) EXPECT_EQ(b["verification"], "passed");
  EXPECT_TRUE(doc["pairbench"]["not_run"].empty()) << doc["pairbench"]["not_run"].dump();
  const auto said = lines_with(run.output(), "pairbench: interrupted by " + name);
  ASSERT_EQ(said.size(), 1u) << run.output();
  EXPECT_NE(said[0].find(out), std::string::npos) << said[0];
  // Neither the harness's run directory nor a bench process's scratch directory is left.
  EXPECT_TRUE(fs::is_empty(tmp)) << listing(tmp);
  EXPECT_TRUE(processes_mentioning(dir.path).empty());
}

TEST(Interruption, SigintKeepsFinishedSamplesAndLeavesNothingBehind) { interrupt_mid_run(SIGINT, 130, "SIGINT"); }

TEST(Interruption, SigtermKeepsFinishedSamplesAndLeavesNothingBehind) { interrupt_mid_run(SIGTERM, 143, "SIGTERM"); }

// A second SIGINT ends pairbench at once (_exit from the handler), before it can remove its run
// directory with the bench processes' scratch inside, as SIGKILL does; the next run removes what a
// dead pairbench left, and nothing else. SIGKILL here: two SIGINTs sent together merge into one
// pending signal, and apart they race the first one's clean finish.
TEST(Interruption, TheNextRunRemovesWhatAKilledRunLeft) {
  TestDir dir;
  const std::string tmp = dir.path + "/tmp";
  fs::create_directories(tmp);
  // Somebody else's directory that merely looks like ours, and one of a live pairbench (this test).
  fs::create_directories(tmp + "/pairbench-run-notapid-x");
  const std::string live = tmp + "/pairbench-run-" + std::to_string(getpid()) + "-live";
  fs::create_directories(live);
  auto args = sleepy_run("40", dir.path + "/run.json");
  args.push_back("--no-history");
  Background run(args, {{"TMPDIR", tmp}}, dir.path);
  ASSERT_TRUE(run.wait_for("[2/40]", 60s)) << run.output();
  ASSERT_TRUE(eventually([&] { return has_entry(tmp, "pairbench-slow-bench-"); }, 30s)) << listing(tmp);
  run.send(SIGKILL);
  run.drain();
  run.wait_exit(30s);
  // Its bench process (its own process group) is orphaned, not killed: wait for it to end.
  EXPECT_TRUE(eventually([&] { return processes_mentioning(dir.path).empty(); }, 30s));
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(tmp)) ++entries;
  ASSERT_EQ(entries, 3u) << "the killed run's directory is left (else this test shows nothing)\n" << listing(tmp);

  auto next = sleepy_run("1", dir.path + "/next.json");
  next.push_back("--no-history");
  const ProcessResult r = run_process(
      [&] {
        std::vector<std::string> argv = {PAIRBENCH_EXE};
        argv.insert(argv.end(), next.begin(), next.end());
        return argv;
      }(),
      {{"TMPDIR", tmp}}, 120s);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> left;
  for (const auto& e : fs::directory_iterator(tmp)) left.push_back(e.path().filename().string());
  std::sort(left.begin(), left.end());
  const std::vector<std::string> expected = {"pairbench-run-" + std::to_string(getpid()) + "-live",
                                             "pairbench-run-notapid-x"};
  EXPECT_EQ(left, expected) << listing(tmp);
}

// The handler itself, in a forked child: the first signal is recorded and stops any launch; the
// second kills the tracked child groups and exits 130 at once.
[[noreturn]] void signal_twice(const std::string& pid_file) {
  install_interrupt_handlers(OnInterrupt::kFinishUp);
  raise(SIGINT);
  if (interrupt_signal() != SIGINT) _exit(10);
  if (run_process({"/bin/true"}, {}, 5s).status != ProcessResult::Status::kInterrupted) _exit(11);
  const pid_t child = fork();
  if (child == 0) {
    setpgid(0, 0);
    execl("/bin/sleep", "sleep", "60", static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(child, child);
  track_child_group(child);
  std::ofstream(pid_file) << child;
  raise(SIGINT);
  _exit(12);  // not reached: the second signal exits
}

TEST(InterruptHandlerDeathTest, SecondSignalKillsTrackedChildrenAndExits) {
  TestDir dir;
  const std::string pid_file = dir.path + "/child.pid";
  EXPECT_EXIT(signal_twice(pid_file), testing::ExitedWithCode(130), "second interrupt");
  std::ifstream in(pid_file);
  pid_t child = 0;
  ASSERT_TRUE(in >> child);
  EXPECT_TRUE(eventually(
      [&] {
        std::ifstream stat("/proc/" + std::to_string(child) + "/stat");
        std::string pid, comm, state;
        return !(stat >> pid >> comm >> state) || state == "Z";
      },
      10s))
      << "sleep " << child << " still running";
}

// The output directory replaced by a regular file during the run: the run file goes to the
// current directory instead, with every sample, and the exit status says something went wrong.
TEST(OutputFallback, RunFileGoesToTheCurrentDirectory) {
  TestDir dir;
  const std::string tmp = dir.path + "/tmp", cwd = dir.path + "/cwd", out_dir = dir.path + "/out";
  for (const auto& d : {tmp, cwd, out_dir}) fs::create_directories(d);
  auto args = sleepy_run("6", out_dir + "/run.json");
  args.push_back("--no-history");
  // Replaced while the run's first process is held in its set-up (PAIRBENCH_SLOW_HOLD), then
  // released: during the run on any machine (issue 44: after "[1/6]" a test descheduled for the
  // other five processes' 1.5 s replaced it after the run file was written).
  const std::string release = dir.path + "/release";
  Background run(args, {{"TMPDIR", tmp}, {"PAIRBENCH_SLOW_HOLD", release}}, cwd);
  ASSERT_TRUE(eventually([&] { return has_entry(tmp, "pairbench-slow-bench-"); }, 60s)) << run.output();
  fs::remove_all(out_dir);
  std::ofstream(out_dir) << "not a directory any more";
  std::ofstream(release) << "go";
  ASSERT_EQ(run.wait_exit(60s), 3) << run.output();
  const auto said = lines_with(run.output(), "cannot write the run file");
  ASSERT_EQ(said.size(), 1u) << run.output();
  EXPECT_NE(said[0].find(cwd + "/run.json"), std::string::npos) << said[0];
  nlohmann::json doc = read_run_file(cwd + "/run.json");
  EXPECT_EQ(doc["benchmarks"].size(), 6u);
  EXPECT_FALSE(doc["pairbench"].contains("interrupted"));
  EXPECT_TRUE(fs::is_empty(tmp)) << listing(tmp);
}

// The current directory removed as well: the run file goes to $TMPDIR.
TEST(OutputFallback, RunFileGoesToTmpdirWhenTheCurrentDirectoryIsGone) {
  TestDir dir;
  const std::string tmp = dir.path + "/tmp", cwd = dir.path + "/cwd", out_dir = dir.path + "/out";
  for (const auto& d : {tmp, cwd, out_dir}) fs::create_directories(d);
  auto args = sleepy_run("6", out_dir + "/run.json");
  args.push_back("--no-history");
  // Replaced while the run's first process is held in its set-up (PAIRBENCH_SLOW_HOLD), then
  // released: during the run on any machine (issue 44: after "[1/6]" a test descheduled for the
  // other five processes' 1.5 s replaced it after the run file was written).
  const std::string release = dir.path + "/release";
  Background run(args, {{"TMPDIR", tmp}, {"PAIRBENCH_SLOW_HOLD", release}}, cwd);
  ASSERT_TRUE(eventually([&] { return has_entry(tmp, "pairbench-slow-bench-"); }, 60s)) << run.output();
  fs::remove_all(out_dir);
  std::ofstream(out_dir) << "not a directory any more";
  fs::remove_all(cwd);
  std::ofstream(release) << "go";
  ASSERT_EQ(run.wait_exit(60s), 3) << run.output();
  const auto said = lines_with(run.output(), "cannot write the run file");
  ASSERT_EQ(said.size(), 1u) << run.output();
  EXPECT_NE(said[0].find(tmp + "/run.json"), std::string::npos) << said[0];
  EXPECT_EQ(read_run_file(tmp + "/run.json")["benchmarks"].size(), 6u);
  // The fallback file is all that is left in the temporary directory.
  EXPECT_EQ(listing(tmp), tmp + "/run.json\n");
}

// A history database locked by another connection for longer than the retries last: the run
// exits 3 and its run file names the failed write; `history import` then stores it, once.
TEST(HistoryWrite, LockedDatabaseIsNamedInTheRunFileAndImportedOnce) {
  TestDir dir;
  const std::string db = dir.path + "/history.sqlite", out = dir.path + "/run.json", tmp = dir.path + "/tmp";
  fs::create_directories(tmp);
  { History create(db); }
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  auto args = sleepy_run("2", out);
  args.insert(args.end(), {"--history", db});
  Background run(args, {{"TMPDIR", tmp}, {"PAIRBENCH_HISTORY_RETRY_S", "1.5"}}, dir.path);
  const int status = run.wait_exit(60s);
  sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  ASSERT_EQ(status, 3) << run.output();
  const auto said = lines_with(run.output(), "not recorded in history");
  ASSERT_EQ(said.size(), 1u) << run.output();
  EXPECT_NE(said[0].find("pairbench history import " + out + " --db " + db), std::string::npos) << said[0];

  nlohmann::json doc = read_run_file(out);
  auto& write = doc["pairbench"]["history_write"];
  EXPECT_EQ(write["db"], db);
  EXPECT_EQ(write["status"], "failed");
  EXPECT_NE(write["error"].get<std::string>().find("locked"), std::string::npos) << write.dump();
  EXPECT_GE(write["attempts"].get<int>(), 2) << write.dump();  // retried, not given up at once
  EXPECT_EQ(doc["benchmarks"].size(), 2u);
  EXPECT_EQ(History(db).run_count(), 0);

  // Imported twice, and once more under another name: stored once.
  fs::copy_file(out, dir.path + "/renamed.json");
  for (const auto& [file, expected] : {std::pair{out, "stored in"}, std::pair{out, "already in"},
                                       std::pair{dir.path + "/renamed.json", "already in"}}) {
    Background import({"history", "import", file, "--db", db}, {}, dir.path);
    ASSERT_EQ(import.wait_exit(30s), 0) << import.output();
    EXPECT_NE(import.output().find(expected), std::string::npos) << import.output();
  }
  EXPECT_EQ(History(db).run_count(), 1);

  // A partial run is refused: one line naming the file and the field, exit 2, nothing stored.
  nlohmann::json partial = doc;
  partial["pairbench"]["run_id"] = "partial-run";
  partial["pairbench"]["interrupted"] = {{"signal", "SIGINT"}, {"completed_processes", 1}, {"planned_processes", 2}};
  write_json_atomically(dir.path + "/partial.json", partial);
  Background refused({"history", "import", dir.path + "/partial.json", "--db", db}, {}, dir.path);
  ASSERT_EQ(refused.wait_exit(30s), 2) << refused.output();
  EXPECT_EQ(lines_with(refused.output(), "partial.json: pairbench.interrupted").size(), 1u) << refused.output();
  EXPECT_EQ(History(db).run_count(), 1);
}

// Run files from before run ids are known by their content: the same file twice is stored once,
// a different run beside it.
TEST(HistoryWrite, RunFilesWithoutRunIdAreStoredOnceByContent) {
  TestDir dir;
  nlohmann::json doc = read_run_file(std::string(FIXTURES_DIR) + "/run_cpu_a.json");
  ASSERT_FALSE(doc["pairbench"].contains("run_id"));
  History history(dir.path + "/history.sqlite");
  bool stored_before = true;
  const std::int64_t first = history.append_run(doc, "a.json", &stored_before);
  EXPECT_FALSE(stored_before);
  doc["pairbench"]["history_write"] = {{"status", "failed"}};  // a note about the write, not the run
  EXPECT_EQ(history.append_run(doc, "renamed.json", &stored_before), first);
  EXPECT_TRUE(stored_before);
  doc["benchmarks"][0]["metric_value"] = doc["benchmarks"][0]["metric_value"].get<double>() * 2;
  EXPECT_NE(history.append_run(doc, "other.json", &stored_before), first);
  EXPECT_FALSE(stored_before);
  EXPECT_EQ(history.run_count(), 2);
}

// A process that made its scratch directory and hangs is SIGKILLed at its time limit (its
// destructor never runs): the harness removes what it left.
TEST(TimeLimit, KilledProcessLeavesNoTemporary) {
  TestDir dir;
  const std::string tmp = dir.path + "/tmp", out = dir.path + "/run.json";
  fs::create_directories(tmp);
  Background run({"run", "--bench-dir", SLOW_BENCH_DIR, "--arms", "hang", "--repetitions", "1", "--timeout", "1",
                  "--calibration", "none", "--no-history", "--out", out},
                 {{"TMPDIR", tmp}}, dir.path);
  ASSERT_EQ(run.wait_exit(60s), 3) << run.output();
  nlohmann::json doc = read_run_file(out);
  ASSERT_FALSE(doc["pairbench"]["not_run"].empty());
  EXPECT_NE(doc["pairbench"]["not_run"][0]["reason"].get<std::string>().find("timed out"), std::string::npos);
  EXPECT_TRUE(fs::is_empty(tmp)) << listing(tmp);
  EXPECT_TRUE(processes_mentioning(dir.path).empty());
}

// The report's Python: killed with its process group at --timeout (exit 3), and on SIGINT to
// pairbench (exit 130); no process of it remains either way.
TEST(Report, PythonIsKilledAtItsTimeLimit) {
  TestDir dir;
  const std::string run_file = dir.path + "/run.json";
  fs::copy_file(std::string(FIXTURES_DIR) + "/run_cpu_a.json", run_file);
  Background report({"report", "--run", run_file, "-o", dir.path + "/report", "--timeout", "0.05"},
                    {{"PYTHONDONTWRITEBYTECODE", "1"}}, dir.path);
  ASSERT_EQ(report.wait_exit(60s), 3) << report.output();
  EXPECT_EQ(lines_with(report.output(), "timed out").size(), 1u) << report.output();
  EXPECT_TRUE(processes_mentioning(dir.path).empty());
}

TEST(Report, SigintKillsPythonAndExits130) {
  TestDir dir;
  const std::string run_file = dir.path + "/run.json";
  fs::copy_file(std::string(FIXTURES_DIR) + "/run_cpu_a.json", run_file);
  Background report({"report", "--run", run_file, "-o", dir.path + "/report", "--timeout", "120"},
                    {{"PYTHONDONTWRITEBYTECODE", "1"}}, dir.path);
  // Found by its output folder: report.py reads a copy of the run file with the harness's verdicts.
  ASSERT_TRUE(eventually(
      [&] {
        for (const auto& p : processes_mentioning(dir.path)) {
          if (p.find("report.py") != std::string::npos) return true;
        }
        return false;
      },
      30s))
      << "plots/report.py never started";
  report.send(SIGINT);
  ASSERT_EQ(report.wait_exit(30s), 130) << report.output();
  EXPECT_EQ(lines_with(report.output(), "interrupted by SIGINT").size(), 1u) << report.output();
  EXPECT_TRUE(processes_mentioning(dir.path).empty());
}

// compare/gate on a partial run: said on its own line, and the gate cannot pass (undecided, exit
// 4), although the same runs whole pass. --undecided pass accepts it and still says it is partial.
TEST(PartialRun, GateSaysSoAndCannotPass) {
  TestDir dir;
  const std::string whole = dir.path + "/whole.json", partial = dir.path + "/partial.json";
  nlohmann::json doc = read_run_file(std::string(FIXTURES_DIR) + "/run_cpu_a.json");
  // Without the one benchmark whose few processes are too noisy to call unchanged even at 500 %.
  std::erase_if(doc["benchmarks"].get_ref<nlohmann::json::array_t&>(), [](const nlohmann::json& b) {
    return b["name"] == "dispatch.sync_vs_async/async/device:cpu/ops:10000";
  });
  write_json_atomically(whole, doc);
  doc["pairbench"]["interrupted"] = {{"signal", "SIGINT"}, {"completed_processes", 3}, {"planned_processes", 12}};
  write_json_atomically(partial, doc);
  // Thresholds far above this fixture's noise: the whole runs are unchanged everywhere.
  const std::vector<std::string> loose = {"--threshold", "5", "--instructions-threshold", "5"};
  auto compare = [&](const std::string& current, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"compare", whole, current};
    args.insert(args.end(), loose.begin(), loose.end());
    args.insert(args.end(), extra.begin(), extra.end());
    Background b(args, {}, dir.path);
    const int status = b.wait_exit(60s);
    return std::pair{status, b.output()};
  };
  const auto [whole_status, whole_output] = compare(whole, {});
  ASSERT_EQ(whole_status, 0) << whole_output;
  EXPECT_TRUE(lines_with(whole_output, "PARTIAL").empty()) << whole_output;
  const auto [status, output] = compare(partial, {});
  EXPECT_EQ(status, 4) << output;
  EXPECT_EQ(lines_with(output, "PARTIAL RUN: current run interrupted by SIGINT after 3 of 12 processes").size(), 1u)
      << output;
  EXPECT_EQ(lines_with(output, "GATE UNDECIDED: a partial (interrupted) run cannot pass").size(), 1u) << output;
  const auto [lenient_status, lenient_output] = compare(partial, {"--undecided", "pass"});
  EXPECT_EQ(lenient_status, 0) << lenient_output;
  EXPECT_EQ(lines_with(lenient_output, "PARTIAL RUN").size(), 1u) << lenient_output;
}

}  // namespace
}  // namespace pairbench::harness
