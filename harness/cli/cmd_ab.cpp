// `pairbench ab`: two builds' benchmarks in one run (duet pairs on two cores by default, or
// sequentially interleaved), then compared.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>

#include "harness/cli/commands.h"
#include "harness/gate/print.h"
#include "harness/store/file_checks.h"
#include "harness/store/history.h"
#include "harness/stats/stats.h"
#include "harness/exec/process.h"
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

}  // namespace

AbResult run_ab(const std::vector<Side>& sides, const std::vector<Environment>& envs, const RunOptions& options,
                const std::string& command) {
  const std::string started = utc_stamp("%Y-%m-%dT%H:%M:%SZ");
  const RunOutcome outcome = run_sides(sides, options);
  AbResult r{build_run_doc(sides[0].experiments, outcome.samples, options, outcome, envs[0], started, command, 0),
             build_run_doc(sides[1].experiments, outcome.samples, options, outcome, envs[1], started, command, 1)};
  // The two halves of one run: the gate may compare duet pairs pair by pair only between these.
  char id[40];
  std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(outcome.seed));
  for (auto* doc : {&r.baseline, &r.candidate}) (*doc)["pairbench"]["ab_run_id"] = std::string(id) + "-" + started;
  r.baseline["pairbench"]["ab_side"] = sides[0].name;
  r.candidate["pairbench"]["ab_side"] = sides[1].name;
  return r;
}

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
  write_json_atomically(out_dir + "/baseline.json", r.baseline);
  write_json_atomically(out_dir + "/candidate.json", r.candidate);
  std::cout << "wrote " << out_dir << "/baseline.json and candidate.json\n";
  GateArgs gate = args.gate;
  gate.options.force = true;  // two builds differ by design; the differences are listed
  const GateReport report = compare_runs(r.baseline, r.candidate, gate.options, args.baseline_build + " (baseline)",
                                         args.candidate_build + " (candidate)");
  print_gate_table(std::cout, report);
  if (!gate.markdown.empty()) write_text_atomically(gate.markdown, gate_markdown(report));
  if (!gate.junit.empty()) write_text_atomically(gate.junit, gate_junit(report));
  if (!gate.json.empty()) write_text_atomically(gate.json, gate_json(report).dump(2) + "\n");
  return report.exit_status();
}

}  // namespace pairbench::harness
