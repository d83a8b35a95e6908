// `pairbench bisect`'s work (bisection.h): the worktree, each commit's build, the comparisons
// through `pairbench ab`, the halving and the re-check, what it prints and its --json.
#include "harness/revisions/bisection.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "harness/exec/catalogue.h"
#include "harness/exec/exit_status.h"
#include "harness/exec/interrupt.h"
#include "harness/exec/process.h"
#include "harness/exec/say.h"
#include "harness/gate/print.h"
#include "harness/gate/read_json.h"
#include "harness/gate/text.h"
#include "harness/revisions/git.h"
#include "harness/store/file_checks.h"
#include "harness/store/json_field.h"
#include "harness/store/run_file.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

// A step gets no comparison with less than this left of the budget: ab's planned processes alone
// take longer than that for most benchmarks.
constexpr double kMinComparisonS = 10;

std::string format(const char* fmt, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, x);
  return buf;
}

// ---- What to build ------------------------------------------------------------------------

// The bench areas (bench_<area>) whose benchmarks `regex` matches, from the bench binaries beside
// this pairbench; empty where none are there or none matches.
std::set<std::string> areas_matching(const std::string& regex, const std::string& profile) {
  std::set<std::string> out;
  try {
    for (const auto& e :
         keep_benchmarks_matching(load_catalogue(find_bench_binaries(default_bench_dir()), profile), regex)) {
      out.insert(e.name.substr(0, e.name.find('.')));
    }
  } catch (const std::exception&) {
    return {};
  }
  return out;
}

// ---- The bisection's state -----------------------------------------------------------------

// One comparison's outcome, read from ab's --json (rows restricted to the bisected benchmarks).
struct Comparison {
  std::string verdict;  // regression | pass | undecided | failed_baseline | failed_candidate
  std::string why;      // failed_*: the first failure's reason
  std::string benchmark;
  double change = 0, low = 0, high = 0;  // + = slower (the gate's slowdown), fractions
  double interval_level = 0;             // of [low, high] (the gate's, 0.9)
  bool has_change = false;
  int regressed = 0, rows = 0;
  std::vector<std::string> regressed_names;
  double seconds = 0;
  std::string dir;
  // Where it got slower (the re-check only, which counts instructions): per regressed benchmark
  // with a function diff, its functions as the gate wrote them; else why there is none.
  nlohmann::json functions = nlohmann::json::array();
  std::string functions_note;
};

struct Step {
  std::string role;                         // check (good vs bad) | step | recheck
  int commit = -1;                          // the commit the step tested (index into the range)
  int baseline = -1, candidate = -1;        // the ab sides (indices), -1 where none ran
  std::string verdict;                      // good | bad | skipped | regression | unchanged | undecided ...
  std::optional<Comparison> first, second;  // against the good side; where undecided, against the bad side
  bool skipped = false;
  std::string why;
  double build_s = 0, seconds = 0;
};

class Bisection {
 public:
  Bisection(BisectOptions args, std::string repo, std::vector<Commit> commits)
      : args_(std::move(args)), repo_(std::move(repo)), commits_(std::move(commits)), start_(Clock::now()) {
    work_ = fs::absolute(args_.work_dir.empty() ? repo_ + "/.pairbench-bisect" : args_.work_dir)
                .lexically_normal()
                .string();
    regex_ = args_.benchmarks;
  }

  int run();
  // After SIGINT/SIGTERM: the range known so far, and --json, with exit 130/143.
  int interrupted() {
    return finish("interrupted", -1, interrupted_exit_status(),
                  "first_bad: none: interrupted by " + signal_name(interrupt_signal()), std::nullopt, lo_);
  }

 private:
  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }
  double remaining() const { return args_.budget_s - elapsed(); }

  void prepare_worktree();
  // Builds commit i (or finds its binaries from an earlier bisection): "" where it built, else why not.
  std::string build(int i, double* seconds);
  std::string bench_dir(int i) const { return work_ + "/commits/" + commits_[i].sha; }
  Comparison compare(int baseline, int candidate, double budget_s, const std::string& label,
                     bool count_instructions = false);
  std::string first_failure(const std::string& run_file) const;
  void print_step(const Step& s) const;
  nlohmann::json comparison_json(const std::optional<Comparison>& c) const;
  int finish(const std::string& outcome, int first_bad, int exit_status, const std::string& line,
             const std::optional<Comparison>& change = std::nullopt, int last_good = -1);
  // An ab's budget: what is left, less what is kept for the re-check unless this is it.
  double ab_budget(bool recheck) const { return std::min(args_.ab_budget_s, remaining() - (recheck ? 0 : reserve_)); }
  // The bisection's three steps (run): the two ends, where the bisection may already end (its
  // exit status); the halving, which narrows [lo, hi]; the re-check of hi against lo.
  std::optional<int> check_ends(int n);
  void halve(int& lo, int& hi);
  int recheck(int lo, int hi);

  BisectOptions args_;
  std::string repo_, work_, regex_;
  std::vector<Commit> commits_;
  std::set<std::string> areas_;
  std::vector<std::string> bisected_;  // the benchmarks good vs bad found regressed
  std::vector<Step> steps_;
  Clock::time_point start_;
  bool configured_ = false;
  int comparisons_ = 0;
  int lo_ = 0;          // the last commit known good so far
  double reserve_ = 0;  // seconds of the budget kept for the re-check
};

void Bisection::prepare_worktree() {
  fs::create_directories(work_ + "/logs");
  fs::create_directories(work_ + "/commits");
  const std::string wt = work_ + "/worktree";
  // One worktree, reused by later bisections of this repository (its build directory with it).
  if (fs::exists(wt + "/.git")) {
    const ProcessResult r = git(wt, {"rev-parse", "--git-common-dir"});
    const std::string common = git_out(repo_, {"rev-parse", "--git-common-dir"});
    if (r.exit_code == 0 &&
        fs::weakly_canonical(fs::path(wt) / trimmed(r.output)) == fs::weakly_canonical(fs::path(repo_) / common)) {
      return;
    }
    throw RevisionFailed(wt + " is a worktree of another repository: give another --work-dir");
  }
  git(repo_, {"worktree", "prune"});
  git_out(repo_, {"worktree", "add", "--detach", "--force", wt, commits_.front().sha});
}

std::string Bisection::build(int i, double* seconds) {
  const auto t0 = Clock::now();
  const Commit& c = commits_[i];
  const std::string dest = bench_dir(i) + "/bin", stamp = bench_dir(i) + "/built";
  std::string targets;
  for (const auto& a : areas_) targets += (targets.empty() ? "" : " ") + ("bench_" + a);
  const std::string key =
      (args_.build_command.empty() ? "cmake" : "command " + args_.build_command) + "\ntargets " + targets;
  auto done = [&](std::string why) {
    *seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    return why;
  };
  {  // Built by an earlier bisection the same way: its binaries are kept per commit.
    std::ifstream in(stamp);
    std::stringstream text;
    text << in.rdbuf();
    if (in && text.str() == key && fs::is_directory(dest)) return done("");
  }
  say() << "bisect: building " << c.short_sha() << " " << quoted_for_message(c.subject, 60) << "\n";
  std::error_code ec;
  fs::remove_all(bench_dir(i), ec);
  const std::string wt = work_ + "/worktree", build_dir = work_ + "/build";
  git_out(wt, {"checkout", "--detach", "--force", "--quiet", c.sha});
  const std::string log_path = work_ + "/logs/build-" + c.short_sha() + ".log";
  std::ofstream log(log_path);
  auto step = [&](const std::vector<std::string>& argv, const std::map<std::string, std::string>& env) -> std::string {
    const double limit = std::max(remaining(), 1.0);
    const ProcessResult r = run_process(argv, env, std::chrono::duration<double>(limit), -1, 4u << 20);
    log << r.output;
    log.flush();
    if (r.status == ProcessResult::Status::kInterrupted) throw RevisionInterrupted{};
    if (r.status == ProcessResult::Status::kExited && r.exit_code == 0) return "";
    if (r.status == ProcessResult::Status::kTimedOut) return "budget spent while building (log: " + log_path + ")";
    return "does not build: " + r.describe() + ": " + quoted_for_message(last_line_of(r.output), 160) +
           " (log: " + log_path + ")";
  };
  std::string why;
  if (!args_.build_command.empty()) {
    // `sh -c` in the worktree; the build directory and what to build in the environment.
    why = step({"/bin/sh", "-c", "cd -- \"$0\" || exit 1; eval \"$1\"", wt, args_.build_command},
               {{kBisectBuildDirEnv, build_dir}, {kBisectCommitEnv, c.sha}, {kBisectTargetsEnv, targets}});
  } else {
    std::map<std::string, std::string> env;
    if (!configured_ && !fs::exists(build_dir + "/CMakeCache.txt")) {
      std::vector<std::string> argv{program("cmake"), "-S", wt, "-B", build_dir};
      for (const auto& a : configure_args_like_this_build()) argv.push_back(a);
      if (!on_path("ccache").empty()) {
        for (const char* lang : {"C", "CXX", "CUDA"})
          argv.push_back(std::string("-DCMAKE_") + lang + "_COMPILER_LAUNCHER=ccache");
      }
      why = step(argv, env);
    }
    configured_ = why.empty();
    if (why.empty()) {
      std::vector<std::string> argv{program("cmake"), "--build", build_dir,
                                    "-j" + std::to_string(std::max(1u, std::thread::hardware_concurrency()))};
      if (!areas_.empty()) {
        argv.push_back("--target");
        for (const auto& a : areas_) argv.push_back("bench_" + a);
      }
      if (!on_path("ccache").empty()) env["CCACHE_BASEDIR"] = wt;  // paths inside the worktree hash alike
      why = step(argv, env);
    }
  }
  if (!why.empty()) return done(why);
  // The bench binaries (and their layout variants and files beside them) of the areas needed, or
  // every bench_* where the areas are not known, copied to the commit's own directory.
  const std::string from = fs::is_directory(build_dir + "/bin") ? build_dir + "/bin" : build_dir;
  fs::create_directories(dest);
  int copied = 0;
  for (const auto& entry : fs::directory_iterator(from, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("bench_", 0) != 0 || !entry.is_regular_file()) continue;
    const std::string area =
        name.substr(6, name.find('.') == std::string::npos ? std::string::npos : name.find('.') - 6);
    if (!areas_.empty() && !areas_.count(area)) continue;
    fs::copy_file(entry.path(), dest + "/" + name, fs::copy_options::overwrite_existing);
    ++copied;
  }
  if (copied == 0)
    return done("its build left no bench_" + (targets.empty() ? std::string("*") : targets) + " in " + from);
  try {
    if (keep_benchmarks_matching(load_catalogue(find_bench_binaries(dest), args_.profile), regex_).empty()) {
      return done("has no benchmark matching " + quoted_for_message(regex_));
    }
  } catch (const std::exception& e) {
    return done(std::string("its bench binaries do not list their experiments: ") + e.what());
  }
  std::ofstream(stamp) << key;
  return done("");
}

// The first failed or wrong benchmark (of those bisected) a side's run file names, "" where none.
std::string Bisection::first_failure(const std::string& run_file) const {
  std::ifstream in(run_file);
  if (!in) return "";
  try {
    const nlohmann::json doc = nlohmann::json::parse(in);
    const std::regex re(regex_, std::regex::ECMAScript);
    for (const auto& n : doc.at("pairbench").value("not_run", nlohmann::json::array())) {
      const std::string v = n.value("verification", "");
      const std::string name = n.value("name", "");
      if ((v == "failed" || v == "incorrect") && std::regex_search(name, re))
        return name + ": " + v + ": " + n.value("reason", "");
    }
  } catch (const std::exception&) {
  }
  return "";
}

// `pairbench ab` of two commits' binaries, restricted to the bisected benchmarks, its gate as JSON.
Comparison Bisection::compare(int baseline, int candidate, double budget_s, const std::string& label,
                              bool count_instructions) {
  Comparison c;
  const auto t0 = Clock::now();
  c.dir = work_ + "/ab/" + std::to_string(++comparisons_) + "-" + label + "-" + commits_[baseline].short_sha() + "-" +
          commits_[candidate].short_sha();
  std::error_code ec;
  fs::remove_all(c.dir, ec);
  fs::create_directories(fs::path(c.dir).parent_path());
  std::vector<std::string> argv{fs::read_symlink("/proc/self/exe").string(),
                                "ab",
                                "--baseline-build",
                                bench_dir(baseline),
                                "--candidate-build",
                                bench_dir(candidate),
                                "--benchmarks",
                                regex_,
                                "--profile",
                                args_.profile,
                                "--budget",
                                format("%.0f", std::max(1.0, budget_s)),
                                "--out-dir",
                                c.dir,
                                "--json",
                                c.dir + "/gate.json",
                                "--undecided",
                                "fail"};
  if (args_.threshold > 0) argv.insert(argv.end(), {"--threshold", format("%g", args_.threshold)});
  // The re-check also counts instructions (callgrind where there is no PMU), where the experiments
  // declare counts meaningful: its regressions then carry the functions that added the most.
  if (count_instructions) argv.insert(argv.end(), {"--instruction-processes", "2"});
  say() << "bisect: pairbench ab " << commits_[baseline].short_sha() << " (baseline) vs "
        << commits_[candidate].short_sha() << ", budget " << format("%.0f", std::max(1.0, budget_s))
        << " s (log: " << c.dir << ".log)\n";
  // ab's planned processes and probe may run past its budget; a hung one is stopped well after.
  const double limit = std::max(remaining(), 0.0) + 300;
  const ProcessResult r = run_process(argv, {}, std::chrono::duration<double>(limit), -1, 16u << 20);
  std::ofstream(c.dir + ".log") << r.output;
  c.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (r.status == ProcessResult::Status::kInterrupted || interrupt_signal()) throw RevisionInterrupted{};
  if (r.status == ProcessResult::Status::kExited && (r.exit_code == 130 || r.exit_code == 143))
    throw RevisionInterrupted{};
  const std::string failed_base = first_failure(c.dir + "/baseline.json"),
                    failed_cand = first_failure(c.dir + "/candidate.json");
  if (!failed_cand.empty()) return c.verdict = "failed_candidate", c.why = failed_cand, c;
  if (!failed_base.empty()) return c.verdict = "failed_baseline", c.why = failed_base, c;
  GateJson gate;
  try {
    gate = read_gate_json(c.dir + "/gate.json");
  } catch (const std::exception& e) {
    throw RevisionFailed("pairbench ab " + r.describe() + " without a comparison (" + e.what() +
                         "): " + quoted_for_message(last_line_of(r.output), 200) + " (log: " + c.dir + ".log)");
  }
  bool all_pass = true;
  const BenchmarkVerdict* worst = nullptr;
  auto num = [](double x) { return std::isfinite(x) ? x : 0.0; };
  for (const BenchmarkVerdict& row : gate.rows) {
    ++c.rows;
    if (fails_gate(row.verdict)) {
      ++c.regressed;
      if (row.instrument == Instrument::time) c.regressed_names.push_back(row.benchmark);
      if (!worst || worst->verdict != Verdict::regression || num(row.slowdown) > num(worst->slowdown)) worst = &row;
    } else if (row.verdict != Verdict::unchanged && row.verdict != Verdict::improvement) {
      all_pass = false;
      if (!c.regressed && (!worst || num(row.slowdown_high) > num(worst->slowdown_high))) worst = &row;
    } else if (all_pass && !c.regressed && (!worst || num(row.slowdown_high) > num(worst->slowdown_high))) {
      worst = &row;
    }
  }
  if (c.rows == 0) throw RevisionFailed("pairbench ab compared no benchmark (log: " + c.dir + ".log)");
  for (const BenchmarkVerdict& row : gate.rows) {
    if (row.verdict != Verdict::regression) continue;
    if (!row.functions.empty()) {
      c.functions.push_back({{"benchmark", row.benchmark},
                             {"instrument", to_string(row.instrument)},
                             {"total_change", row.functions_total_change},
                             {"functions", function_diff_json(row.functions)}});
    } else if (c.functions_note.empty() &&
               row.functions_note.find("under its [instructions] row") == std::string::npos) {
      c.functions_note = row.benchmark + ": " + (row.functions_note.empty() ? "no function diff" : row.functions_note);
    }
  }
  c.verdict = c.regressed ? "regression" : all_pass ? "pass" : "undecided";
  c.interval_level = gate.interval_level;
  if (worst) {
    c.benchmark = worst->benchmark;
    c.has_change = std::isfinite(worst->slowdown);
    c.change = num(worst->slowdown);
    c.low = std::isfinite(worst->slowdown_low) ? worst->slowdown_low : -INFINITY;
    c.high = std::isfinite(worst->slowdown_high) ? worst->slowdown_high : INFINITY;
  }
  return c;
}

std::string change_text(const Comparison& c) {
  if (!c.has_change) return c.benchmark.empty() ? "" : c.benchmark;
  using gate_text::percent;
  return percent(c.change) + " [" + (std::isfinite(c.low) ? percent(c.low) : "-inf") + ", " +
         (std::isfinite(c.high) ? percent(c.high) : "+inf") + "] " + c.benchmark +
         (c.rows > 1 ? " (" + std::to_string(c.regressed) + " of " + std::to_string(c.rows) + " regressed)" : "");
}

std::string verdict_text(const Comparison& c) {
  if (c.verdict == "pass") return "unchanged";
  if (c.verdict == "failed_candidate" || c.verdict == "failed_baseline") return "failed";
  return c.verdict;
}

void Bisection::print_step(const Step& s) const {
  const Commit& c = commits_[s.commit];
  std::string subject = c.subject.size() > 40 ? c.subject.substr(0, 37) + "..." : c.subject;
  std::string detail;
  if (s.skipped) {
    detail = s.why;
  } else {
    // A step's verdict is the commit's (good/bad); the check's and re-check's is the comparison's.
    if (s.first) {
      detail = (s.role == "step" ? verdict_text(*s.first) + " " : "") + "against " + commits_[s.baseline].short_sha() +
               " " + change_text(*s.first);
    }
    if (s.second) {
      detail += "; as baseline of " + commits_[s.candidate].short_sha() + ": " + verdict_text(*s.second) + " " +
                change_text(*s.second);
    }
  }
  std::printf("%-7s %s  %-40s  %-10s %s  (%.0f s)\n", s.role.c_str(), c.short_sha().c_str(), subject.c_str(),
              s.verdict.c_str(), detail.c_str(), s.seconds);
  std::fflush(stdout);
}

nlohmann::json Bisection::comparison_json(const std::optional<Comparison>& c) const {
  if (!c) return nullptr;
  auto num = [](double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); };
  return {{"verdict", verdict_text(*c)},
          {"benchmark", c->benchmark},
          {"change", c->has_change ? num(c->change) : nlohmann::json(nullptr)},
          {"change_low", c->has_change ? num(c->low) : nlohmann::json(nullptr)},
          {"change_high", c->has_change ? num(c->high) : nlohmann::json(nullptr)},
          {"interval_level", c->interval_level},
          {"benchmarks_compared", c->rows},
          {"benchmarks_regressed", c->regressed},
          {"failure", c->why},
          {"seconds", c->seconds},
          {"ab_dir", c->dir},
          {"functions", c->functions},
          {"functions_note", c->functions_note}};
}

// Prints the final line, writes --json, returns the exit status.
int Bisection::finish(const std::string& outcome, int first_bad, int exit_status, const std::string& line,
                      const std::optional<Comparison>& change, int last_good) {
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  if (args_.json.empty()) return exit_status;
  nlohmann::json j = {
      {"format", "pairbench-bisect/1"},
      {"outcome", outcome},
      {"exit_status", exit_status},
      {"summary", line},
      {"good", commits_.front().sha},
      {"bad", commits_.back().sha},
      {"benchmarks", args_.benchmarks},
      {"bisected_benchmarks", bisected_},
      {"commits_in_range", commits_.size() - 1},
      {"first_bad", first_bad >= 0 ? nlohmann::json(commits_[first_bad].sha) : nlohmann::json(nullptr)},
      {"first_bad_subject", first_bad >= 0 ? nlohmann::json(commits_[first_bad].subject) : nlohmann::json(nullptr)},
      {"change", comparison_json(change)},
      {"budget_s", args_.budget_s},
      {"elapsed_s", elapsed()},
      {"work_dir", work_},
      {"steps", nlohmann::json::array()}};
  if (last_good >= 0) {
    nlohmann::json candidates = nlohmann::json::array();
    for (int i = last_good + 1; i < static_cast<int>(commits_.size()); ++i) {
      if (commits_[i].state == "bad") {
        candidates.push_back(commits_[i].sha);
        break;
      }
      candidates.push_back(commits_[i].sha);
    }
    j["range"] = {{"last_good", commits_[last_good].sha}, {"first_bad_candidates", candidates}};
  }
  for (const Step& s : steps_) {
    j["steps"].push_back(
        {{"role", s.role},
         {"commit", commits_[s.commit].sha},
         {"subject", commits_[s.commit].subject},
         {"verdict", s.verdict},
         {"skipped", s.skipped},
         {"why", s.why},
         {"baseline", s.baseline >= 0 ? nlohmann::json(commits_[s.baseline].sha) : nlohmann::json(nullptr)},
         {"against_good_side", comparison_json(s.first)},
         {"against_bad_side", comparison_json(s.second)},
         {"change", comparison_json(s.second && s.first && s.first->verdict == "undecided" ? s.second : s.first)},
         {"build_s", s.build_s},
         {"seconds", s.seconds}});
  }
  try {
    write_json_atomically(args_.json, j);
  } catch (const std::exception& e) {
    say(Verbosity::quiet) << "pairbench: " << e.what() << "\n";
    return exit_status == kExitOk ? kExitBenchmarkFailed : exit_status;
  }
  return exit_status;
}

// Where it got slower: the re-check's function diff, the functions that added the most instructions
// per iteration (callgrind, self), or why there is none (time-only benchmarks, perf).
void print_functions(const Comparison& c) {
  if (c.functions.empty()) {
    std::printf("where: no function diff: %s\n",
                c.functions_note.empty() ? "no instruction counts in the re-check" : c.functions_note.c_str());
    return;
  }
  for (const auto& f : c.functions) {
    std::printf("where: %s [%s]: functions that added the most instructions per iteration (callgrind, self):\n",
                f["benchmark"].get<std::string>().c_str(), f["instrument"].get<std::string>().c_str());
    int shown = 0;
    for (const auto& fn : f["functions"]) {
      if (++shown > 5) break;
      std::printf("  %14s %14s %14s  %s\n",
                  gate_text::count_text(fn.value("baseline", 0.0), false, fn.value("baseline_bound", false)).c_str(),
                  gate_text::count_text(fn.value("current", 0.0), false, fn.value("current_bound", false)).c_str(),
                  gate_text::count_text(fn.value("change", 0.0), true).c_str(), fn.value("function", "").c_str());
    }
  }
  std::fflush(stdout);
}

std::string regex_escape(const std::string& s) {
  std::string out;
  for (const char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '/' && c != ':' && c != '-' && c != ' ')
      out += '\\';
    out += c;
  }
  return out;
}

int Bisection::run() {
  const int n = static_cast<int>(commits_.size()) - 1;  // commits after good
  areas_ = areas_matching(args_.benchmarks, args_.profile);
  if (areas_.empty() && args_.build_command.empty()) {
    throw RevisionInputError("--benchmarks: " + quoted_for_message(args_.benchmarks) +
                             " matches no benchmark of the bench "
                             "binaries beside this pairbench (" +
                             default_bench_dir() + "; pairbench list)");
  }
  std::string areas_text;
  for (const auto& a : areas_) areas_text += (areas_text.empty() ? "" : ", ") + ("bench_" + a);
  std::printf("bisect: %d commits after good %s, up to bad %s; benchmarks %s; building %s in %s\n", n,
              commits_.front().short_sha().c_str(), commits_.back().short_sha().c_str(),
              quoted_for_message(args_.benchmarks).c_str(),
              areas_text.empty() ? "what --build-command builds" : areas_text.c_str(), work_.c_str());
  std::fflush(stdout);
  prepare_worktree();
  reserve_ = std::min(args_.ab_budget_s, 0.15 * args_.budget_s);

  if (const std::optional<int> ended = check_ends(n)) return *ended;
  // 2. Halving: lo is the last good commit, hi the first bad one.
  int lo = 0, hi = n;
  halve(lo, hi);
  return recheck(lo, hi);
}

// 1. The two ends: both must build and run, and bad must be a decided regression against good.
// Their exit status where the bisection ends here.
std::optional<int> Bisection::check_ends(int n) {
  Step check{"check", n, 0, n};
  for (const int end : {0, n}) {
    double s = 0;
    const std::string why = build(end, &s);
    check.build_s += s;
    if (why.rfind("has no benchmark matching", 0) == 0) {
      throw RevisionInputError("--benchmarks: " + (end ? std::string("bad ") : std::string("good ")) +
                               commits_[end].short_sha() + " " + why);
    }
    if (!why.empty()) {
      check.skipped = true, check.verdict = "failed",
      check.why = (end ? "bad " : "good ") + commits_[end].short_sha() + " " + why;
      check.seconds = check.build_s;
      steps_.push_back(check);
      print_step(check);
      return finish("failed", -1, kExitBenchmarkFailed, "first_bad: none: the " + check.why);
    }
  }
  if (ab_budget(false) < kMinComparisonS) {
    return finish("budget_spent", -1, kExitUndecided, "first_bad: none: the budget was spent building good and bad");
  }
  check.first = compare(0, n, ab_budget(false), "check");
  check.seconds = check.build_s + check.first->seconds;
  if (check.first->verdict.rfind("failed", 0) == 0) {
    check.verdict = "failed", check.why = (check.first->verdict == "failed_baseline" ? "good" : "bad") +
                                          std::string("'s benchmarks fail: ") + check.first->why;
    steps_.push_back(check);
    print_step(check);
    return finish("failed", -1, kExitBenchmarkFailed, "first_bad: none: " + check.why);
  }
  check.verdict = verdict_text(*check.first);
  steps_.push_back(check);
  print_step(check);
  if (check.first->verdict != "regression") {
    return finish(check.first->verdict == "pass" ? "no_regression" : "inconclusive", -1, kExitUndecided,
                  "first_bad: none: bad is not a decided regression against good (" + verdict_text(*check.first) + " " +
                      change_text(*check.first) + ")" +
                      (check.first->verdict == "pass" ? ": nothing to bisect"
                                                      : ": a larger --ab-budget may decide it (docs/bisect.md)"));
  }
  commits_[n].state = "bad";
  // From here on only the benchmarks that regressed between good and bad are compared.
  bisected_ = check.first->regressed_names;
  if (!bisected_.empty()) {
    regex_ = "^(?:";
    for (std::size_t i = 0; i < bisected_.size(); ++i) regex_ += (i ? "|" : "") + regex_escape(bisected_[i]);
    regex_ += ")$";
  }

  return std::nullopt;
}

void Bisection::halve(int& lo, int& hi) {
  while (true) {
    std::vector<int> candidates;
    for (int i = lo + 1; i < hi; ++i) {
      if (commits_[i].state == "untested") candidates.push_back(i);
    }
    if (candidates.empty()) break;
    const double mid = (lo + hi) / 2.0;
    const int m = *std::min_element(candidates.begin(), candidates.end(), [&](int a, int b) {
      return std::abs(a - mid) < std::abs(b - mid) || (std::abs(a - mid) == std::abs(b - mid) && a < b);
    });
    Step s{"step", m, lo, hi};
    const std::string why = build(m, &s.build_s);
    if (!why.empty() && why.rfind("budget spent", 0) == 0) break;
    auto skip = [&](const std::string& reason) {
      commits_[m].state = "skipped", commits_[m].why = reason;
      s.skipped = true, s.verdict = "skipped", s.why = reason;
    };
    if (!why.empty()) {
      skip(why);
    } else {
      if (ab_budget(false) < kMinComparisonS) break;
      s.first = compare(lo, m, ab_budget(false), "step");
      if (s.first->verdict == "failed_candidate") {
        skip("its benchmarks fail: " + s.first->why);
      } else if (s.first->verdict == "regression") {
        commits_[m].state = "bad";
      } else if (s.first->verdict == "pass") {
        commits_[m].state = "good";
      } else if (ab_budget(false) >= kMinComparisonS) {
        // Undecided against the last good commit: is it still faster than the first bad one?
        s.second = compare(m, hi, ab_budget(false), "step");
        if (s.second->verdict == "failed_baseline") {
          skip("its benchmarks fail: " + s.second->why);
        } else if (s.second->verdict == "regression") {
          commits_[m].state = "good";
        } else if (s.second->verdict == "pass") {
          commits_[m].state = "bad";
        } else {
          skip("undecided against both " + commits_[lo].short_sha() + " and " + commits_[hi].short_sha());
        }
      } else {
        skip("undecided against " + commits_[lo].short_sha() + ", and no budget left to compare it with " +
             commits_[hi].short_sha());
      }
    }
    if (!s.skipped) s.verdict = commits_[m].state;
    s.seconds = s.build_s + (s.first ? s.first->seconds : 0) + (s.second ? s.second->seconds : 0);
    steps_.push_back(s);
    print_step(s);
    if (commits_[m].state == "bad") hi = m;
    if (commits_[m].state == "good") lo_ = lo = m;
  }
}

// 3. The re-check: hi against its parent (where commits between were skipped: against lo), fresh;
// the bisection's end and its exit status.
int Bisection::recheck(int lo, int hi) {
  std::vector<int> between;  // untested or skipped commits left between lo and hi
  for (int i = lo + 1; i < hi; ++i) between.push_back(i);
  const bool budget_spent =
      std::any_of(between.begin(), between.end(), [&](int i) { return commits_[i].state == "untested"; });
  auto range_text = [&] {
    return "the first bad commit is one of " + std::to_string(between.size() + 1) + " after " +
           commits_[lo].short_sha() + ", up to " + commits_[hi].short_sha();
  };
  if (budget_spent) {
    return finish("budget_spent", -1, kExitUndecided,
                  "first_bad: none: the budget (" + format("%.0f", args_.budget_s) + " s) was spent; " + range_text(),
                  std::nullopt, lo);
  }

  Step step{"recheck", hi, lo, hi};
  if (ab_budget(true) < kMinComparisonS) {
    return finish("budget_spent", -1, kExitUndecided,
                  "first_bad: none: no budget left for the re-check; " + range_text(), std::nullopt, lo);
  }
  step.first = compare(lo, hi, ab_budget(true), "recheck", /*count_instructions=*/true);
  step.seconds = step.first->seconds;
  step.verdict = verdict_text(*step.first);
  steps_.push_back(step);
  print_step(step);
  if (step.first->verdict != "regression") {
    return finish("inconclusive", -1, kExitUndecided,
                  "first_bad: none: inconclusive: the re-check of " + commits_[hi].short_sha() + " against " +
                      commits_[lo].short_sha() + " was " + verdict_text(*step.first) + " (" + change_text(*step.first) +
                      "), not a decided regression",
                  step.first, lo);
  }
  if (!between.empty()) {
    std::string skipped;
    for (const int i : between) skipped += " " + commits_[i].short_sha() + " (" + commits_[i].why + ")";
    return finish("ambiguous", -1, kExitUndecided,
                  "first_bad: none: ambiguous because of skipped commits: " + range_text() + " (" +
                      change_text(*step.first) + "); skipped:" + skipped,
                  step.first, lo);
  }
  print_functions(*step.first);
  return finish("named", hi, kExitOk,
                "first_bad: " + commits_[hi].sha + " " + commits_[hi].subject + ": " + change_text(*step.first) +
                    " against its parent, re-checked",
                step.first, lo);
}

}  // namespace

int run_bisection(const BisectOptions& args) {
  const std::string git_exe = on_path("git");
  if (git_exe.empty()) throw RevisionInputError("bisect: git is not on PATH");
  const ProcessResult top = run_process({git_exe, "rev-parse", "--show-toplevel"}, {}, std::chrono::seconds(60));
  if (top.status != ProcessResult::Status::kExited || top.exit_code != 0) {
    throw RevisionInputError("bisect: the current directory is not in a git repository (" + last_line_of(top.output) +
                             ")");
  }
  const std::string repo = trimmed(top.output);
  std::optional<Bisection> bisection;
  try {
    const std::string good = resolve(repo, args.good, "--good"), bad = resolve(repo, args.bad, "--bad");
    bisection.emplace(args, repo, first_parent_range(repo, good, bad, args.good, args.bad));
    return bisection->run();
  } catch (const RevisionInterrupted&) {
    if (bisection) return bisection->interrupted();
    std::cout << "first_bad: none: interrupted by " << signal_name(interrupt_signal()) << "\n";
    return interrupted_exit_status();
  } catch (const RevisionFailed& e) {
    say(Verbosity::quiet) << "pairbench: bisect: " << e.what() << "\n";
    return kExitBenchmarkFailed;
  }
}

}  // namespace pairbench::harness
