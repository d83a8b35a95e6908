// `pairbench selftest --ab-aa N` (selftest_ab.h): the A/A evidence for `ab` at its defaults.
#include "harness/cli/selftest_ab.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "harness/cli/command.h"
#include "harness/exec/interrupt.h"
#include "harness/exec/process.h"
#include "harness/store/run_file.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

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
    std::vector<std::string> argv = {self, "ab", "--baseline-build", args.bench_dir, "--candidate-build", args.bench_dir,
                                     "--profile", args.profile, "--out-dir", out_dir, "--json", out_dir + "/gate.json",
                                     "--undecided", "pass", "--seed", std::to_string(1000 + k)};
    if (!args.experiments.empty()) argv.insert(argv.end(), {"--experiments", args.experiments});
    if (args.budget_s >= 0) argv.insert(argv.end(), {"--budget", std::to_string(args.budget_s)});
    const ProcessResult r = run_process(argv, {}, std::chrono::hours(2));
    if (r.status == ProcessResult::Status::kInterrupted) break;
    if (r.status != ProcessResult::Status::kExited || (r.exit_code != 0 && r.exit_code != 1)) {
      std::fprintf(stderr, "pairbench: selftest --ab-aa: ab %d %s:\n%s\n", k, r.describe().c_str(), r.output.c_str());
      return 3;
    }
    nlohmann::json gate;
    try {
      std::ifstream in(out_dir + "/gate.json");
      gate = nlohmann::json::parse(in);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "pairbench: selftest --ab-aa: %s/gate.json: %s\n", out_dir.c_str(), e.what());
      return 3;
    }
    std::map<std::string, int> count;
    nlohmann::json changes = nlohmann::json::array();
    for (const auto& b : gate["benchmarks"]) {
      if (b.value("instrument", "") != "time") continue;
      const std::string v = b.value("verdict", "");
      ++count[v];
      if (v == "regression" || v == "improvement") {
        changes.push_back({{"name", b.value("name", "")}, {"verdict", v}, {"slowdown", b["slowdown"]},
                           {"low", b["slowdown_low"]}, {"high", b["slowdown_high"]}});
      }
    }
    int n = 0;
    for (const auto& [v, c] : count) n += c, totals[v] += c;
    rows += n;
    decided_changes += static_cast<int>(changes.size());
    wall += r.wall_s;
    std::printf("  ab %2d: %3d unchanged, %3d undecided, %d regressions, %d improvements of %d (%.0f%% unchanged), %.0f s\n",
                k, count["unchanged"], count["undecided"], count["regression"], count["improvement"], n,
                n ? 100.0 * count["unchanged"] / n : 0.0, r.wall_s);
    for (const auto& c : changes) {
      std::printf("         %s: %s %+.1f%% [%+.1f%%, %+.1f%%]\n", c["name"].get<std::string>().c_str(),
                  c["verdict"].get<std::string>().c_str(), 100 * c["slowdown"].get<double>(),
                  c["low"].is_number() ? 100 * c["low"].get<double>() : -100.0,
                  c["high"].is_number() ? 100 * c["high"].get<double>() : 1e9);
    }
    std::fflush(stdout);  // one line per ab as it ends, also into a file
    runs.push_back({{"unchanged", count["unchanged"]}, {"undecided", count["undecided"]},
                    {"regression", count["regression"]}, {"improvement", count["improvement"]}, {"rows", n},
                    {"wall_s", r.wall_s}, {"decided_changes", changes}});
  }
  const int done = static_cast<int>(runs.size());
  std::printf("%d ab runs of identical builds: %d decided changes (false alarms); %d of %d benchmark verdicts "
              "unchanged (%.1f%%), %d undecided; %.0f s of ab (%.0f s each)\n",
              done, decided_changes, totals["unchanged"], rows, rows ? 100.0 * totals["unchanged"] / rows : 0.0,
              totals["undecided"], wall, done ? wall / done : 0.0);
  if (!args.out.empty()) {
    write_json_atomically(args.out, {{"ab_aa", {{"bench_dir", args.bench_dir},
                                                {"experiments", args.experiments},
                                                {"budget_s", args.budget_s},
                                                {"runs", runs},
                                                {"decided_changes", decided_changes},
                                                {"unchanged_share", rows ? double(totals["unchanged"]) / rows : 0.0}}}});
  }
  if (interrupt_signal()) return exit_status_after_interrupt(0);
  return decided_changes ? 1 : 0;
}

}  // namespace pairbench::harness
