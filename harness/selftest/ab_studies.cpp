// `pairbench selftest --ab-aa N` (selftest_ab.h): the A/A evidence for `ab` at its defaults.
#include "harness/selftest/ab_studies.h"
#include "harness/exec/say.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>

#include "harness/exec/interrupt.h"
#include "harness/exec/process.h"
#include "harness/gate/read_json.h"
#include "harness/store/run_file.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

namespace {
// A JSON number, or null where not finite (an interval's open end).
nlohmann::json finite_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(); }
}  // namespace

namespace {

// One child `pairbench ARGV` (an ab whose gate JSON goes to OUT_DIR/gate.json): its gate read back,
// none where it was interrupted or where it or its JSON failed (said as "pairbench: WHO: WHICH ..."),
// and its wall time.
struct ChildAb {
  std::optional<GateJson> gate;
  double wall_s = 0;
  bool interrupted = false;
};
ChildAb run_child_ab(const std::vector<std::string>& argv, const std::string& out_dir, const std::string& who,
                     const std::string& which) {
  const ProcessResult r = run_process(argv, {}, std::chrono::hours(2));
  ChildAb out{std::nullopt, r.wall_s, r.status == ProcessResult::Status::kInterrupted};
  if (out.interrupted) return out;
  if (r.status != ProcessResult::Status::kExited || (r.exit_code != 0 && r.exit_code != 1)) {
    sayf(Verbosity::quiet, "pairbench: %s: %s %s:\n%s\n", who.c_str(), which.c_str(), r.describe().c_str(),
         r.output.c_str());
    return out;
  }
  try {
    out.gate = read_gate_json(out_dir + "/gate.json");
  } catch (const std::exception& e) {
    sayf(Verbosity::quiet, "pairbench: %s: %s\n", who.c_str(), e.what());
  }
  return out;
}

// A study's child ab of `baseline` against `candidate`: its outputs in `out_dir` (the gate JSON
// read back by run_child_ab), undecided rows passing, its seed given.
std::vector<std::string> child_ab_argv(const std::string& self, const std::string& baseline,
                                       const std::string& candidate, const std::string& profile,
                                       const std::string& out_dir, const std::string& seed) {
  return {self,
          "ab",
          "--baseline-build",
          baseline,
          "--candidate-build",
          candidate,
          "--profile",
          profile,
          "--out-dir",
          out_dir,
          "--json",
          out_dir + "/gate.json",
          "--undecided",
          "pass",
          "--seed",
          seed};
}

}  // namespace

int selftest_ab_aa(const AbAaArgs& args) {
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  const std::string dir = args.runs_dir.empty() ? "results/selftest-ab-aa" : args.runs_dir;
  fs::create_directories(dir);
  std::map<std::string, int> totals;  // verdict -> rows over every ab
  int decided_changes = 0, rows = 0;
  double wall = 0;
  nlohmann::json runs = nlohmann::json::array();
  std::printf("pairbench selftest --ab-aa: ab of %s against itself, %d times (%s%s%s)\n", args.bench_dir.c_str(),
              args.repetitions, args.experiments.empty() ? "every experiment" : args.experiments.c_str(),
              args.budget_s >= 0 ? ", --budget " : "",
              args.budget_s >= 0 ? std::to_string(static_cast<int>(args.budget_s)).c_str() : "");
  for (int k = 1; k <= args.repetitions && !interrupt_signal(); ++k) {
    const std::string out_dir = dir + "/ab-aa-" + std::to_string(k);
    fs::remove_all(out_dir);
    std::vector<std::string> argv =
        child_ab_argv(self, args.bench_dir, args.bench_dir, args.profile, out_dir, std::to_string(1000 + k));
    if (!args.experiments.empty()) argv.insert(argv.end(), {"--experiments", args.experiments});
    if (args.budget_s >= 0) argv.insert(argv.end(), {"--budget", std::to_string(args.budget_s)});
    const ChildAb r = run_child_ab(argv, out_dir, "selftest --ab-aa", "ab " + std::to_string(k));
    if (r.interrupted) break;
    if (!r.gate) return 3;
    const GateJson& gate = *r.gate;
    std::map<std::string, int> count;
    nlohmann::json changes = nlohmann::json::array();
    for (const BenchmarkVerdict& b : gate.rows) {
      if (b.instrument != Instrument::time) continue;
      ++count[to_string(b.verdict)];
      if (b.verdict == Verdict::regression || b.verdict == Verdict::improvement) {
        changes.push_back({{"name", b.benchmark},
                           {"verdict", to_string(b.verdict)},
                           {"slowdown", finite_or_null(b.slowdown)},
                           {"low", finite_or_null(b.slowdown_low)},
                           {"high", finite_or_null(b.slowdown_high)}});
      }
    }
    int n = 0;
    for (const auto& [v, c] : count) n += c, totals[v] += c;
    rows += n;
    decided_changes += static_cast<int>(changes.size());
    wall += r.wall_s;
    std::printf(
        "  ab %2d: %3d unchanged, %3d undecided, %d regressions, %d improvements of %d (%.0f%% unchanged), %.0f s\n", k,
        count["unchanged"], count["undecided"], count["regression"], count["improvement"], n,
        n ? 100.0 * count["unchanged"] / n : 0.0, r.wall_s);
    for (const auto& c : changes) {
      std::printf("         %s: %s %+.1f%% [%+.1f%%, %+.1f%%]\n", c["name"].get<std::string>().c_str(),
                  c["verdict"].get<std::string>().c_str(), 100 * c["slowdown"].get<double>(),
                  c["low"].is_number() ? 100 * c["low"].get<double>() : -100.0,
                  c["high"].is_number() ? 100 * c["high"].get<double>() : 1e9);
    }
    std::fflush(stdout);  // one line per ab as it ends, also into a file
    runs.push_back({{"unchanged", count["unchanged"]},
                    {"undecided", count["undecided"]},
                    {"regression", count["regression"]},
                    {"improvement", count["improvement"]},
                    {"rows", n},
                    {"wall_s", r.wall_s},
                    {"decided_changes", changes}});
  }
  const int done = static_cast<int>(runs.size());
  std::printf(
      "%d ab runs of identical builds: %d decided changes (false alarms); %d of %d benchmark verdicts "
      "unchanged (%.1f%%), %d undecided; %.0f s of ab (%.0f s each)\n",
      done, decided_changes, totals["unchanged"], rows, rows ? 100.0 * totals["unchanged"] / rows : 0.0,
      totals["undecided"], wall, done ? wall / done : 0.0);
  if (!args.out.empty()) {
    write_json_atomically(args.out, {{"ab_aa",
                                      {{"bench_dir", args.bench_dir},
                                       {"experiments", args.experiments},
                                       {"budget_s", args.budget_s},
                                       {"runs", runs},
                                       {"decided_changes", decided_changes},
                                       {"unchanged_share", rows ? double(totals["unchanged"]) / rows : 0.0}}}});
  }
  if (interrupt_signal()) return exit_status_after_interrupt(0);
  return decided_changes ? 1 : 0;
}

namespace {

// A benchmark name as a regular expression matching it alone (ECMAScript, searched).
std::string exact_regex(const std::string& name) {
  std::string out = "^";
  for (const char c : name) {
    if (std::string("\\^$.|?*+()[]{}/").find(c) != std::string::npos) out += '\\';
    out += c;
  }
  return out + "$";
}

// A byte-identical copy of the build's bench binaries (and its pairbench, whose fingerprint ab
// asks) in `to`: another path, other inodes, the same bytes.
void copy_build(const std::string& from, const std::string& to) {
  fs::create_directories(to);
  for (const auto& entry : fs::directory_iterator(from)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || (name.rfind("bench_", 0) != 0 && name != "pairbench")) continue;
    fs::copy_file(entry.path(), fs::path(to) / name, fs::copy_options::overwrite_existing);
  }
}

// Where --ab-deep's ab of a benchmark takes its two sides from.
struct Arrangement {
  const char* name;
  std::string baseline, candidate;
};

// The ab of the study's benchmark `i`, its run `k`, in arrangement `a`.
std::vector<std::string> ab_deep_argv(const std::string& self, const AbDeepArgs& args, const Arrangement& a,
                                      std::size_t i, int k, const std::string& out_dir) {
  std::vector<std::string> argv =
      child_ab_argv(self, a.baseline, a.candidate, args.profile, out_dir,
                    std::to_string(args.seed * 100003 + i * 101 + static_cast<std::size_t>(k)));
  argv.insert(argv.end(), {"--benchmarks", exact_regex(args.benchmarks[i])});
  if (args.budget_s >= 0) argv.insert(argv.end(), {"--budget", std::to_string(args.budget_s)});
  return argv;
}

// One time row of a child ab's gate, as the study's JSON keeps it.
nlohmann::json ab_deep_row(const BenchmarkVerdict& v, const char* arrangement, double wall_s) {
  return {{"benchmark", v.benchmark},
          {"arrangement", arrangement},
          {"verdict", to_string(v.verdict)},
          {"slowdown", v.slowdown},
          {"low", v.slowdown_low},
          {"high", std::isfinite(v.slowdown_high) ? nlohmann::json(v.slowdown_high) : nlohmann::json()},
          {"processes_per_side", v.current_samples},
          {"wall_s", wall_s},
          {"note", v.note}};
}

// The study's tally: its decided changes (false alarms), unchanged and undecided rows, per arrangement.
void print_ab_deep_tally(int done, const nlohmann::json& changes, std::map<std::string, int> totals,
                         std::map<std::string, std::map<std::string, int>> by_arrangement,
                         const std::vector<Arrangement>& arrangements, double wall) {
  int rows = 0;
  for (const auto& [v, c] : totals) rows += c;
  std::printf(
      "%d ab runs of identical builds, one benchmark each: %zu decided changes (false alarms); "
      "%d unchanged, %d undecided of %d; %.0f s of ab\n",
      done, changes.size(), totals["unchanged"], totals["undecided"], rows, wall);
  for (const auto& a : arrangements) {
    auto& c = by_arrangement[a.name];
    std::printf("  %-15s %3d unchanged, %3d undecided, %d regressions, %d improvements\n", a.name, c["unchanged"],
                c["undecided"], c["regression"], c["improvement"]);
  }
  for (const auto& c : changes) {
    std::printf("  decided: %s (%s) %s %+.1f%%\n", c["benchmark"].get<std::string>().c_str(),
                c["arrangement"].get<std::string>().c_str(), c["verdict"].get<std::string>().c_str(),
                100 * c["slowdown"].get<double>());
  }
}

}  // namespace

int selftest_ab_deep(const AbDeepArgs& args) {
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  const std::string dir = args.runs_dir.empty() ? "results/selftest-ab-deep" : args.runs_dir;
  const std::string copy = dir + "/copy";
  fs::create_directories(dir);
  copy_build(args.bench_dir, copy);
  const std::vector<Arrangement> arrangements = {{"same directory", args.bench_dir, args.bench_dir},
                                                 {"two copies", args.bench_dir, copy},
                                                 {"copies swapped", copy, args.bench_dir}};
  std::printf(
      "pairbench selftest --ab-deep: ab of %s against itself, each of %zu benchmarks alone, %d times "
      "(same directory, a copy in %s, the copy as baseline, in turn%s%s)\n",
      args.bench_dir.c_str(), args.benchmarks.size(), args.runs_per_benchmark, copy.c_str(),
      args.budget_s >= 0 ? ", --budget " : "",
      args.budget_s >= 0 ? std::to_string(static_cast<int>(args.budget_s)).c_str() : "");
  // Runs in random order over benchmarks and repetitions, so that the machine's drift over the
  // study does not fall on one benchmark or one arrangement.
  std::vector<std::pair<std::size_t, int>> order;
  for (std::size_t i = 0; i < args.benchmarks.size(); ++i) {
    for (int k = 0; k < args.runs_per_benchmark; ++k) order.emplace_back(i, k);
  }
  std::mt19937_64 rng(args.seed);
  std::shuffle(order.begin(), order.end(), rng);
  std::map<std::string, int> totals;
  std::map<std::string, std::map<std::string, int>> by_arrangement;
  nlohmann::json runs = nlohmann::json::array(), changes = nlohmann::json::array();
  double wall = 0;
  int done = 0;
  for (const auto& [i, k] : order) {
    if (interrupt_signal()) break;
    const std::string& name = args.benchmarks[i];
    const Arrangement& a = arrangements[(i + static_cast<std::size_t>(k)) % arrangements.size()];
    const std::string out_dir = dir + "/" + std::to_string(i) + "-" + std::to_string(k);
    fs::remove_all(out_dir);
    const std::vector<std::string> argv = ab_deep_argv(self, args, a, i, k, out_dir);
    const ChildAb r = run_child_ab(argv, out_dir, "selftest --ab-deep", "ab of " + name + " (" + a.name + ")");
    if (r.interrupted) break;
    if (!r.gate) return 3;
    const GateJson& gate = *r.gate;
    for (const BenchmarkVerdict& v : gate.rows) {
      if (v.instrument != Instrument::time) continue;
      const std::string verdict = to_string(v.verdict);
      ++totals[verdict];
      ++by_arrangement[a.name][verdict];
      const bool change = v.verdict == Verdict::regression || v.verdict == Verdict::improvement;
      std::printf("  %3d/%zu %-15s %-70s %-10s %+6.1f%% [%+.1f%%, %+.1f%%] %d processes per side, %.0f s\n", ++done,
                  order.size(), a.name, v.benchmark.c_str(), verdict.c_str(), 100 * v.slowdown, 100 * v.slowdown_low,
                  std::isfinite(v.slowdown_high) ? 100 * v.slowdown_high : 1e9, v.current_samples, r.wall_s);
      const nlohmann::json row = ab_deep_row(v, a.name, r.wall_s);
      if (change) changes.push_back(row);
      runs.push_back(row);
    }
    wall += r.wall_s;
    std::fflush(stdout);
  }
  print_ab_deep_tally(done, changes, totals, by_arrangement, arrangements, wall);
  if (!args.out.empty()) {
    write_json_atomically(args.out, {{"ab_deep",
                                      {{"bench_dir", args.bench_dir},
                                       {"benchmarks", args.benchmarks},
                                       {"runs_per_benchmark", args.runs_per_benchmark},
                                       {"budget_s", args.budget_s},
                                       {"runs", runs},
                                       {"decided_changes", changes},
                                       {"wall_s", wall}}}});
  }
  if (interrupt_signal()) return exit_status_after_interrupt(0);
  return changes.empty() ? 0 : 1;
}

std::vector<std::string> ab_deep_benchmarks(const std::vector<ExperimentEntry>& selected, int per_experiment,
                                            std::uint64_t seed) {
  std::vector<std::string> names;
  std::mt19937_64 rng(seed);
  for (const auto& e : selected) {
    std::vector<std::string> here;
    for (const auto& b : e.benchmarks) {
      if (b.available) here.push_back(b.name);
    }
    if (here.empty()) continue;
    if (per_experiment > 0 && here.size() > static_cast<std::size_t>(per_experiment)) {
      std::shuffle(here.begin(), here.end(), rng);
      here.resize(static_cast<std::size_t>(per_experiment));
    }
    names.insert(names.end(), here.begin(), here.end());
  }
  return names;
}

}  // namespace pairbench::harness
