// `pairbench ab`: two builds' benchmarks in one run (duet pairs on two cores by default, or
// sequentially interleaved), then compared.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <unistd.h>

#include "harness/cli/command.h"
#include "harness/cli/gate_inputs.h"
#include "harness/cli/options.h"
#include "harness/cli/run_record.h"
#include "harness/exec/interrupt.h"
#include "harness/exec/process.h"
#include "harness/store/file_checks.h"
#include "harness/store/run_file.h"
#include "pairbench/build_info.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

namespace {

// A build directory's bench binaries live in DIR/bin (CMake build tree) or DIR itself.
std::string bench_dir_of(const std::string& build) {
  if (fs::is_directory(build + "/bin")) return build + "/bin";
  if (fs::is_directory(build)) return build;
  throw UsageError("build directory " + build + " does not exist");
}

// The build's own fingerprint (its compiler, flags, build type), asked from its own pairbench;
// falls back to this harness's where that build has none.
Environment environment_of(const std::string& bench_dir) {
  const std::string exe = bench_dir + "/pairbench";
  if (fs::exists(exe)) {
    const ProcessResult r = run_process({exe, "env", "--format", "json"}, {}, std::chrono::seconds(60));
    if (r.status == ProcessResult::Status::kExited && r.exit_code == 0) {
      try {
        Environment env;
        env.fingerprint = nlohmann::json::parse(r.output);
        env.warnings = env.fingerprint.value("warnings", std::vector<std::string>{});
        env.fingerprint.erase("warnings");
        return env;
      } catch (const nlohmann::json::exception&) {
      }
    }
  }
  return capture_environment(PAIRBENCH_SOURCE_DIR);
}

// One line naming the benchmarks whose sides ran one at a time in the duet, and why; then every
// benchmark and side above the calibration limit (the rule that ab measures code, not its regime).
void report_regime(const AbResult& r, const std::vector<Side>& sides) {
  if (!r.sequential_in_duet.empty()) {
    std::map<std::string, int> by_reason;
    for (const auto& q : r.sequential_in_duet) ++by_reason[q.reason];
    std::string why;
    for (const auto& [reason, n] : by_reason) why += (why.empty() ? "" : "; ") + reason + " (" + std::to_string(n) + ")";
    std::cerr << "pairbench: " << r.sequential_in_duet.size() << " benchmark"
              << (r.sequential_in_duet.size() == 1 ? "" : "s")
              << " ran their two sides one after the other, not in duet pairs: " << why
              << " (sampling.sequential_in_duet in the run files)\n";
  }
  for (std::size_t side = 0; side < r.against_calibration.size(); ++side) {
    const RunRecord::CalibrationCheck& check = r.against_calibration[side];
    for (const auto& c : check.over) {
      std::fprintf(stderr, "pairbench: %s (%s) ran %.2fx its calibrated time per iteration (limit %.1fx)\n",
                   c.name.c_str(), sides[side].name.c_str(), c.ratio, check.limit);
    }
    if (check.max) {
      std::fprintf(stderr, "pairbench: %s: %zu benchmark%s above %.1fx the calibrated time per iteration; highest %.2fx (%s)\n",
                   sides[side].name.c_str(), check.over.size(), check.over.size() == 1 ? "" : "s", check.limit,
                   check.max->ratio, check.max->name.c_str());
    }
  }
}

struct AbArgs {
  std::string baseline_build, candidate_build, experiments, arms, profile = "quick", out_dir;
  std::string pairing = "duet";  // duet (both sides at once, a core per thread each) | sequential
  int repetitions = 0;
  double min_time_s = 0, timeout_s = 0;
  std::uint64_t seed = 0;
  GateArgs gate;
};

int cmd_ab(const AbArgs& args, const std::string& command_line) {
  RunArgs run_args;
  run_args.profile = args.profile;
  run_args.repetitions = args.repetitions;
  run_args.min_time_s = args.min_time_s;
  run_args.timeout_s = args.timeout_s;
  run_args.seed = args.seed;
  run_args.pairing = args.pairing;
  const RunOptions options = run_options(run_args, capture_environment(PAIRBENCH_SOURCE_DIR).fingerprint.value("machine_key", ""));
  const std::string out_dir = args.out_dir.empty() ? "results/ab-" + utc_stamp("%Y%m%dT%H%M%SZ") : args.out_dir;
  // Every output is checked before either build runs a benchmark.
  check_gate_outputs(args.gate);
  try {
    require_directory_or_absent(out_dir, "--out-dir");
    require_regular_file_or_absent(out_dir + "/baseline.json", "--out-dir");
    require_regular_file_or_absent(out_dir + "/candidate.json", "--out-dir");
    check_writable(out_dir + "/baseline.json");
  } catch (const std::exception& e) {
    throw UsageError(e.what());
  }

  std::vector<Side> sides;
  std::vector<Environment> envs;
  for (const auto& [name, build] : {std::pair{"baseline", args.baseline_build}, {"candidate", args.candidate_build}}) {
    const std::string dir = bench_dir_of(build);
    sides.push_back({name, select_experiments(load_catalogue(find_bench_binaries(dir), args.profile), args.experiments,
                                              args.arms), {}, {}, {}});
    envs.push_back(environment_of(dir));
  }
  const AbResult r = run_ab(sides, envs, options, command_line);
  report_regime(r, sides);
  write_json_atomically(out_dir + "/baseline.json", r.baseline);
  write_json_atomically(out_dir + "/candidate.json", r.candidate);
  std::cout << "wrote " << out_dir << "/baseline.json and candidate.json\n";
  GateArgs gate = args.gate;
  gate.options.force = true;  // two builds differ by design; the differences are listed
  const GateReport report = compare_runs(r.baseline, r.candidate, gate.options, args.baseline_build + " (baseline)",
                                         args.candidate_build + " (candidate)");
  return finish_gate(report, gate);
}

}  // namespace

Command command_ab() {
  return {"ab", "run two builds interleaved process by process and compare them",
          "0 no regression; 1 a regression; 2 bad input; 3 a build's benchmark process failed; 4 some benchmark "
          "undecided (--undecided fail); 130/143 interrupted by SIGINT/SIGTERM (what was measured is kept)",
          "a bench binary's output, a calibration cache or a run file (ab)", [](CLI::App& cmd) -> CommandAction {
            auto a = std::make_shared<AbArgs>();
            cmd.add_option("--baseline-build", a->baseline_build, "build directory of the baseline (e.g. main)")->required();
            cmd.add_option("--candidate-build", a->candidate_build, "build directory of the candidate")->required();
            cmd.add_option("--experiments", a->experiments, "comma-separated experiment names or areas")
                ->check(name_list("experiment names or areas"));
            cmd.add_option("--arms", a->arms, "comma-separated arm names to keep")->check(name_list("arm names"));
            cmd.add_option("--profile", a->profile)->check(CLI::IsMember(kProfiles));
            cmd.add_option("--repetitions", a->repetitions, "processes per benchmark and side")->check(CLI::Range(2, 1000));
            cmd.add_option("--min-time", a->min_time_s)->check(finite_in(0.001, 600.0));
            cmd.add_option("--timeout", a->timeout_s)->check(finite_in(1.0, 86400.0));
            cmd.add_option("--seed", a->seed)->check(unsigned_64());
            cmd.add_option("--pairing", a->pairing,
                           "duet: both sides' processes at once, each pinned to its own cores (one per thread it "
                           "declares), cores swapped each round; a benchmark whose two sides do not fit runs them one "
                           "at a time; sequential: one process at a time")
                ->check(CLI::IsMember({"duet", "sequential"}));
            cmd.add_option("--out-dir", a->out_dir, "where baseline.json and candidate.json go (default results/ab-<time>)")
                ->check(path_is(directory_or_absent_problem, "DIR"));
            add_gate_options(&cmd, a->gate);
            return [a](const std::string& command_line) {
              finish_up_on_interrupt();
              return exit_status_after_interrupt(cmd_ab(*a, command_line));
            };
          }};
}

}  // namespace pairbench::harness
