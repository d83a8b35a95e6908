// `pairbench ab` (two builds, interleaved process by process, then compared) and
// `pairbench selftest` (the gate's own false-alarm and detection rates on this machine).
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>

#include "harness/commands.h"
#include "harness/history.h"
#include "harness/stats.h"
#include "harness/process.h"
#include "harness/run_file.h"
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

struct AbResult {
  nlohmann::json baseline, candidate;
};

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

// Times `history` (per-run medians and change points of every benchmark) and `gate` (one
// comparison) over a synthetic history of `runs` nightly runs, to check they stay interactive.
nlohmann::json time_history_and_gate(int runs, int benchmarks, int samples) {
  using Clock = std::chrono::steady_clock;
  char tmpl[] = "/tmp/pairbench-selftest-history-XXXXXX";
  const std::string dir = mkdtemp(tmpl);
  const std::string db_path = dir + "/history.sqlite";
  nlohmann::json doc = {{"context", nlohmann::json::object()}, {"benchmarks", nlohmann::json::array()}};
  doc["pairbench"] = {{"schema_version", 1}, {"profile", "nightly"}, {"environment", {{"machine_key", "selftest"}}},
                      {"experiments", {{{"name", "synthetic.x"}, {"metric", "ns_per_op"}, {"unit", "ns"}, {"better", "lower"}}}}};
  {
    History db(db_path);
    for (int r = 0; r < runs; ++r) {
      doc["benchmarks"] = nlohmann::json::array();
      for (int b = 0; b < benchmarks; ++b) {
        for (int i = 0; i < samples; ++i) {
          doc["benchmarks"].push_back({{"name", "synthetic.x/a/n:" + std::to_string(b)}, {"experiment", "synthetic.x"},
                                       {"arm", "a"}, {"repetition_index", i}, {"real_time", 1.0},
                                       {"metric_value", 100.0 + (r >= runs / 2 ? 10 : 0) + (i * 7 + b + r) % 5}});
        }
      }
      char stamp[32];
      std::snprintf(stamp, sizeof stamp, "2026-01-01T%02d:%02d:%02dZ", r / 3600, (r / 60) % 60, r % 60);
      doc["pairbench"]["started_at"] = stamp;
      db.append_run(doc, "synthetic.json");
    }
  }
  const auto t0 = Clock::now();
  {
    History db(db_path);
    for (const auto& s : db.series("selftest")) {
      std::vector<double> medians;
      for (const auto& p : s.points) medians.push_back(p.median);
      std::vector<History::ChangePoint> cps;
      for (std::size_t k : stats::detect_change_points(medians)) cps.push_back({s.points[k].run_id, 0, 0});
      db.store_change_points(s.benchmark, "selftest", cps);
    }
  }
  const double history_s = std::chrono::duration<double>(Clock::now() - t0).count();
  const auto t1 = Clock::now();
  compare_runs(doc, doc, GateOptions{}, "a", "b");
  const double gate_s = std::chrono::duration<double>(Clock::now() - t1).count();
  fs::remove_all(dir);
  return {{"runs", runs}, {"benchmarks", benchmarks}, {"samples_per_run", samples},
          {"history_s", history_s}, {"gate_s", gate_s}};
}

}  // namespace

int cmd_ab(const AbArgs& args, const std::string& command_line) {
  RunArgs run_args;
  run_args.profile = args.profile;
  run_args.repetitions = args.repetitions;
  run_args.min_time_s = args.min_time_s;
  run_args.timeout_s = args.timeout_s;
  run_args.seed = args.seed;
  const RunOptions options = run_options(run_args);
  const std::string out_dir = args.out_dir.empty() ? "results/ab-" + utc_stamp("%Y%m%dT%H%M%SZ") : args.out_dir;
  check_writable(out_dir + "/baseline.json");

  std::vector<Side> sides;
  std::vector<Environment> envs;
  for (const auto& [name, build] : {std::pair{"baseline", args.baseline_build}, {"candidate", args.candidate_build}}) {
    const std::string dir = bench_dir_of(build);
    sides.push_back({name, select_experiments(load_catalogue(find_bench_binaries(dir), args.profile), args.experiments,
                                              args.arms), {}});
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

int cmd_selftest(const SelftestArgs& args, const std::string& bench_dir) {
  RunArgs run_args;
  run_args.profile = args.profile;
  run_args.repetitions = args.repetitions;
  run_args.min_time_s = args.min_time_s;
  RunOptions options = run_options(run_args);
  options.progress_tty = false;
  const auto experiments =
      select_experiments(load_catalogue(find_bench_binaries(bench_dir), args.profile), args.experiments, args.arms);
  const Environment env = capture_environment(PAIRBENCH_SOURCE_DIR);
  GateOptions gate = args.gate.options;
  gate.force = true;

  int runnable = 0;
  for (const auto& e : experiments) {
    for (const auto& b : e.benchmarks) runnable += b.available;
  }
  std::cerr << "selftest: timing history and gate over 1000 synthetic nightly runs\n";
  const nlohmann::json speed = time_history_and_gate(1000, std::max(runnable, 50), 9);

  char pct[32];
  std::snprintf(pct, sizeof pct, "%g", args.slowdown_pct);
  int aa_failed = 0, aa_flags = 0, aa_compared = 0;
  int eligible = 0, caught = 0, injected_total = 0, caught_any_noise = 0;
  std::vector<double> injected_noise;
  nlohmann::json trials = nlohmann::json::array();
  for (int t = 0; t < 2 * args.trials; ++t) {
    const bool inject = t % 2 == 1;  // alternate A/A and injected trials so drift hits both alike
    std::vector<Side> sides = {{"A", experiments, {}}, {inject ? "B+slow" : "A'", experiments, {}}};
    if (inject) sides[1].extra_env["PAIRBENCH_INJECT_SLOWDOWN_PCT"] = pct;
    std::cerr << "selftest: trial " << t + 1 << "/" << 2 * args.trials << (inject ? " (injected " : " (A/A")
              << (inject ? std::string(pct) + " % slowdown)" : ")") << "\n";
    const AbResult r = run_ab(sides, {env, env}, options, "selftest");
    const GateReport report = compare_runs(r.baseline, r.candidate, gate, "A", inject ? "B+slow" : "A'");
    nlohmann::json jt = {{"trial", t}, {"injected", inject}, {"gate_failed", report.failed()}};
    if (!inject) {
      aa_failed += report.failed();
      aa_flags += report.count("regression");
      aa_compared += static_cast<int>(report.rows.size());
    } else {
      // Only benchmarks whose timer applied the injection, and quiet enough to hold a 5% change.
      std::map<std::string, bool> applied;
      for (const auto& b : r.candidate["benchmarks"]) {
        if (b.value("injected_slowdown_pct", 0.0) > 0) applied[b["name"]] = true;
      }
      int trial_eligible = 0, trial_caught = 0;
      for (const auto& v : report.rows) {
        if (!applied.count(v.benchmark)) continue;
        ++injected_total;
        caught_any_noise += v.verdict == "regression";
        injected_noise.push_back(v.noise_cv);
        if (v.noise_cv > args.max_noise) continue;
        ++trial_eligible;
        trial_caught += v.verdict == "regression";
      }
      eligible += trial_eligible;
      caught += trial_caught;
      jt["eligible"] = trial_eligible;
      jt["caught"] = trial_caught;
    }
    trials.push_back(jt);
  }
  nlohmann::json result = {{"profile", args.profile},
                           {"repetitions", options.repetitions},
                           {"trials_per_kind", args.trials},
                           {"slowdown_pct", args.slowdown_pct},
                           {"max_noise_cv", args.max_noise},
                           {"threshold", gate.threshold},
                           {"alpha", gate.alpha},
                           {"correction", gate.correction},
                           {"aa_gate_failure_rate", args.trials ? double(aa_failed) / args.trials : 0.0},
                           {"aa_false_flags", aa_flags},
                           {"aa_benchmark_comparisons", aa_compared},
                           {"injected_benchmark_comparisons", injected_total},
                           {"eligible_injected", eligible},
                           {"caught_injected", caught},
                           {"detection_rate", eligible ? double(caught) / eligible : 0.0},
                           {"caught_injected_any_noise", caught_any_noise},
                           {"injected_noise_cv_median", injected_noise.empty() ? 0.0 : stats::median(injected_noise)},
                           {"history_and_gate_speed", speed},
                           {"environment", env.to_json()},
                           {"trials", trials}};
  std::printf("\npairbench selftest (%s profile, %d processes per benchmark per side, %d trials of each kind)\n",
              args.profile.c_str(), options.repetitions, args.trials);
  std::printf("  A/A: %d of %d gate runs failed (%.0f%%; target <= 1%%); %d false regression flags in %d comparisons\n",
              aa_failed, args.trials, 100.0 * result["aa_gate_failure_rate"].get<double>(), aa_flags, aa_compared);
  std::printf("  injected %g%% slowdown: caught %d of %d benchmarks with noise <= %.1f%% (%.0f%%; target >= 95%%); "
              "%d injected comparisons in all\n",
              args.slowdown_pct, caught, eligible, 100 * args.max_noise, 100.0 * result["detection_rate"].get<double>(),
              injected_total);
  std::printf("  at any noise: caught %d of %d injected comparisons (median noise %.1f%% robust CV)\n", caught_any_noise,
              injected_total, 100.0 * result["injected_noise_cv_median"].get<double>());
  std::printf("  history over %d runs x %d benchmarks x %d samples: %.2f s; gate: %.3f s (target <= 5 s each)\n",
              speed["runs"].get<int>(), speed["benchmarks"].get<int>(), speed["samples_per_run"].get<int>(),
              speed["history_s"].get<double>(), speed["gate_s"].get<double>());
  if (!args.out.empty()) {
    write_json_atomically(args.out, result);
    std::printf("wrote %s\n", args.out.c_str());
  }
  return kExitOk;
}

}  // namespace pairbench::harness
