// The self-test's studies that make runs (runs.h).
#include "harness/selftest/runs.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "harness/analysis/run_document.h"
#include "harness/exec/exit_status.h"
#include "harness/exec/interrupt.h"
#include "harness/exec/say.h"
#include "harness/sampling/ab_runs.h"
#include "harness/selftest/gate_draws.h"
#include "harness/stats/stats.h"
#include "harness/store/file_checks.h"
#include "harness/store/run_file.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

namespace {
using Clock = std::chrono::steady_clock;
}  // namespace

// `ab` of a build against itself, and against itself with 5 % planted work, in both pairings:
// the noise of the comparison (median standard error of the log change), whole-gate A/A false
// regressions and the planted change's detection, per pairing.
int pairing_study(const SelftestPlan& plan, const std::vector<ExperimentEntry>& experiments, const RunOptions& profile,
                  const Environment& env) {
  GateOptions gate = plan.gate;
  gate.force = true;
  gate.undecided = UndecidedPolicy::pass;
  nlohmann::json result;
  result["machine"] = {{"cpu_model", env.fingerprint.value("cpu_model", "")},
                       {"cpu_count", env.fingerprint.value("cpu_count", 0)}};
  result["processes_per_side"] = profile.repetitions;
  std::printf("\npairbench selftest --pairing-study: %d processes per side, on %s\n", profile.repetitions,
              env.fingerprint.value("cpu_model", "").c_str());
  for (const std::string pairing : {"sequential", "duet"}) {
    for (const bool planted : {false, true}) {
      RunOptions o = profile;
      o.progress_tty = false;
      o.instruction_processes = 0;
      o.pairing = pairing;
      std::vector<Side> sides = {Side{"A", experiments, {}, {}, {}},
                                 Side{planted ? "A+5%" : "A'", experiments, {}, {}, {}}};
      if (planted) {
        for (const auto& e : experiments) {
          for (const auto& b : e.benchmarks) sides[1].benchmark_env[b.name]["PAIRBENCH_INJECT_SLOWDOWN_PCT"] = "5";
        }
      }
      say() << "selftest: ab " << pairing << (planted ? ", 5 % planted" : ", A/A") << "\n";
      const auto t0 = Clock::now();
      const AbResult r = run_ab(sides, {env, env}, o, "selftest --pairing-study");
      if (interrupt_signal()) break;  // a cut-short pair of runs says nothing; what is done is written below
      const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
      const GateReport report = compare_runs(r.baseline, r.candidate, gate, "A", sides[1].name);
      std::vector<double> se;
      for (const auto& v : report.rows) {
        if (v.instrument == Instrument::time && v.se > 0 && std::isfinite(v.se)) se.push_back(v.se);
      }
      const std::string key = std::string(planted ? "planted_5pct" : "aa");
      result[pairing][key] = {{"regressions", report.count(Verdict::regression)},
                              {"unchanged", report.count(Verdict::unchanged)},
                              {"undecided", report.count(Verdict::undecided)},
                              {"benchmarks", report.rows.size()},
                              {"median_se_of_log_change", se.empty() ? 0.0 : stats::median(se)},
                              {"wall_s", wall},
                              {"headline", report.headline()}};
      std::printf("  %-10s %-12s %s; median SE of the change %.2f%%; %.0f s\n", pairing.c_str(),
                  planted ? "planted 5%:" : "A/A:", report.headline().c_str(),
                  se.empty() ? 0.0 : 100 * stats::median(se), wall);
    }
  }
  if (interrupt_signal()) result["interrupted"] = signal_name(interrupt_signal());
  if (!plan.out.empty()) {
    write_json_atomically(plan.out, result);
    std::printf("wrote %s\n", plan.out.c_str());
  }
  return kExitOk;
}

// Runs A1..A<baseline_runs> of the same build, one after another as nights would be, then run Y:
// A' and the build with 5, 10 and 20 % planted, interleaved. Time: work worth L % of each region's
// time; instructions: L % of A1's count per iteration, as whole work loops of the known size.
// Returns 0, or the exit status of an interrupted run (kept, marked partial).
int measure_selftest_runs(const SelftestPlan& plan, const std::vector<ExperimentEntry>& experiments,
                          const RunOptions& profile, const Environment& env, const std::string& dir) {
  check_writable(selftest_run_path(dir, "A1"));
  RunOptions o = profile;
  o.progress_tty = false;
  o.repetitions = 2 * profile.repetitions;
  o.instruction_processes = std::max(2, plan.instruction_processes);
  o.pairing = "sequential";
  nlohmann::json first;
  for (int k = 1; k <= plan.baseline_runs; ++k) {
    say() << "selftest: run A" << k << " of " << plan.baseline_runs << ", " << o.repetitions
          << " processes per benchmark\n";
    const std::string started = utc_stamp("%Y-%m-%dT%H:%M:%SZ");
    const RunOutcome r = run_sides({Side{"A", experiments, {}, {}, {}}}, o);
    nlohmann::json doc = build_run_doc(experiments, r.samples, o, r, env, started, "selftest A" + std::to_string(k), 0);
    write_json_atomically(selftest_run_path(dir, "A" + std::to_string(k)), doc);
    if (r.interrupted_by) return interrupted_exit_status();  // no analysis of part of a run
    if (k == 1) first = doc;
  }
  const Pool p1 = pool_of(first);
  std::vector<Side> sides = {Side{"A'", experiments, {}, {}, {}}};
  for (int level : kPlantedLevels) {
    Side side{"planted" + std::to_string(level), experiments, {}, {}, {}};
    for (const auto& e : experiments) {
      for (const auto& b : e.benchmarks)
        side.benchmark_env[b.name]["PAIRBENCH_INJECT_SLOWDOWN_PCT"] = std::to_string(level);
    }
    for (const auto& [name, entries] : p1.instructions) {
      std::vector<double> counts;
      for (const auto& e : entries) counts.push_back(e["instructions_per_iteration"].get<double>());
      char v[64];
      std::snprintf(v, sizeof v, "%.6f", level / 100.0 * stats::median(counts) / kInjectedInstructionsPerLoop);
      side.instruction_env[name]["PAIRBENCH_INJECT_LOOPS"] = v;
    }
    sides.push_back(std::move(side));
  }
  say() << "selftest: run Y, " << o.repetitions << " processes per benchmark and side: A' and planted 5/10/20 %\n";
  const std::string started = utc_stamp("%Y-%m-%dT%H:%M:%SZ");
  const RunOutcome y = run_sides(sides, o);
  for (std::size_t side = 0; side < sides.size(); ++side) {
    nlohmann::json doc =
        build_run_doc(experiments, y.samples, o, y, env, started, "selftest Y", static_cast<int>(side));
    write_json_atomically(selftest_run_path(dir, side == 0 ? "Y-A'" : "Y-" + sides[side].name), doc);
  }
  return y.interrupted_by ? interrupted_exit_status() : 0;
}

namespace {

// The runs night1.. of the same build at the profile's own plan, written to `dir`; 0, or the exit
// status of an interrupted run (kept, marked partial).
int make_nights(const SelftestPlan& plan, const std::vector<ExperimentEntry>& experiments, const RunOptions& profile,
                const Environment& env, const std::string& dir) {
  check_writable(selftest_run_path(dir, "night1"));
  RunOptions o = profile;
  o.progress_tty = false;
  for (int k = 1; k <= plan.nights; ++k) {
    say() << "selftest: night " << k << " of " << plan.nights << " (" << plan.profile << " profile, " << o.repetitions
          << " processes per benchmark within its budget)\n";
    o.seed = plan.seed + static_cast<std::uint64_t>(k);  // a fresh order each night
    const std::string started = utc_stamp("%Y-%m-%dT%H:%M:%SZ");
    const RunOutcome r = run_sides({Side{"A", experiments, {}, {}, {}}}, o);
    nlohmann::json doc =
        build_run_doc(experiments, r.samples, o, r, env, started, "selftest night " + std::to_string(k), 0);
    write_json_atomically(selftest_run_path(dir, "night" + std::to_string(k)), doc);
    if (r.interrupted_by) return interrupted_exit_status();
  }
  return 0;
}

// The gate night j would have: the runs before it and after it are the same build, but a real night
// has only those before; all of them but j keeps K-1 runs of run-to-run noise.
GateOptions night_gate(const SelftestPlan& plan, const std::vector<Pool>& pools, std::size_t j) {
  GateOptions g = plan.gate;
  g.force = true;
  std::map<std::string, std::vector<std::vector<double>>> per_run;
  for (std::size_t k = 0; k < pools.size(); ++k) {
    if (k == j) continue;
    for (const auto& [name, entries] : pools[k].time) {
      std::vector<double> v;
      for (const auto& e : entries) v.push_back(process_value(e));
      per_run[name].push_back(v);
    }
  }
  for (const auto& [name, values] : per_run) add_history_noise(g, name, values);
  g.run_variance_source = "the selftest's other " + std::to_string(pools.size() - 1) + " runs of the same build";
  return g;
}

// What the nightly gates of every pair counted, over all of them.
struct NightTotals {
  int passed = 0, with_regression = 0, total = 0;
  long regressions = 0, undecided = 0, rows = 0;
};

// One pair's gate (night i+1 as the baseline of night j+1): its table row printed, its entry of
// the result's `gates`, its counts added to `t`.
nlohmann::json night_pair(const std::vector<nlohmann::json>& runs, std::size_t i, std::size_t j, const GateOptions& g,
                          NightTotals& t) {
  const std::string base = "night" + std::to_string(i + 1), cur = "night" + std::to_string(j + 1);
  const GateReport report = compare_runs(runs[i], runs[j], g, base, cur);
  const int status = report.exit_status();
  std::vector<double> gated_at;
  int at_threshold = 0;
  for (const auto& v : report.rows) {
    if (v.instrument != Instrument::time || !(v.gated_at > 0)) continue;
    gated_at.push_back(v.gated_at);
    at_threshold += v.gated_at <= v.threshold * (1 + 1e-12);
  }
  const int reg = report.count(Verdict::regression), und = report.count(Verdict::undecided);
  // Suspects: what ci/nightly.sh would measure again in its same-runner `ab` (docs/gate.md).
  const int suspects = static_cast<int>(std::count_if(report.rows.begin(), report.rows.end(), [](const auto& v) {
    return is_suspect(v) && v.verdict != Verdict::regression && v.verdict != Verdict::undecided;
  }));
  ++t.total;
  t.passed += status == kExitOk;
  t.with_regression += reg > 0;
  t.regressions += reg, t.undecided += und, t.rows += static_cast<long>(report.rows.size());
  std::vector<std::string> names;
  for (const auto& v : report.rows) {
    if (v.verdict == Verdict::regression || v.verdict == Verdict::undecided) {
      names.push_back(v.benchmark + " (" + to_string(v.instrument) + ", " + to_string(v.verdict) + ")");
    }
  }
  const double median = gated_at.empty() ? 0 : stats::median(gated_at);
  const double largest = gated_at.empty() ? 0 : *std::max_element(gated_at.begin(), gated_at.end());
  std::printf("  %-9s %-9s %5d %11d %9d %10d %8d %8d %6zu  %d of %zu / \u00b1%.1f%% / \u00b1%.1f%%\n", base.c_str(),
              cur.c_str(), status, reg, und, report.count(Verdict::unchanged), report.count(Verdict::missing), suspects,
              report.rows.size(), at_threshold, gated_at.size(), 100 * median, 100 * largest);
  for (const auto& n : names) std::printf("      %s\n", n.c_str());
  return {{"baseline", base},
          {"current", cur},
          {"exit_status", status},
          {"regressions", reg},
          {"undecided", und},
          {"unchanged", report.count(Verdict::unchanged)},
          {"improvements", report.count(Verdict::improvement)},
          {"missing", report.count(Verdict::missing)},
          {"suspects", suspects},
          {"rows", report.rows.size()},
          {"time_rows_gated_at_threshold", at_threshold},
          {"time_rows", gated_at.size()},
          {"gated_at_median", median},
          {"gated_at_largest", largest},
          {"not_passed", names}};
}

}  // namespace

// --nights K: the gate as the nightly meets it, on whole runs rather than draws. K runs of the same
// build at the profile's own plan (its processes, time budget and counting cover, as `run
// --profile` does), then every pair of them gated as ci/nightly.sh gates a night: the earlier run
// as the baseline, the run-to-run noise from the history it would have (every run but the current
// one), unchanged at the larger of the threshold and the benchmark's resolution, --undecided fail.
// The gates share runs (K runs give K(K-1)/2 pairs), so they are not independent draws; each one is
// a complete nightly-shaped comparison of real processes.
int selftest_nights(const SelftestPlan& plan, const std::vector<ExperimentEntry>* experiments,
                    const RunOptions& profile, const Environment& env, const std::string& dir) {
  const auto start = Clock::now();
  if (experiments) {
    if (const int status = make_nights(plan, *experiments, profile, env, dir)) return status;
  }
  std::vector<nlohmann::json> runs;
  for (int k = 1; fs::exists(selftest_run_path(dir, "night" + std::to_string(k))); ++k) {
    runs.push_back(read_run_file(selftest_run_path(dir, "night" + std::to_string(k))));
  }
  if (runs.size() < 3)
    throw SelftestInputError(dir + ": --nights needs at least 3 runs night1.. (run without --from first)");
  std::vector<Pool> pools;
  for (const auto& d : runs) pools.push_back(pool_of(d));
  std::printf(
      "\npairbench selftest --nights: %zu runs of the same build (%s profile, as `run --profile %s` plans them), "
      "every pair gated as the nightly gates it, on %s\n",
      runs.size(), plan.profile.c_str(), plan.profile.c_str(), env.fingerprint.value("cpu_model", "").c_str());
  std::printf("  %-9s %-9s %5s %11s %9s %10s %8s %8s %6s  %s\n", "baseline", "current", "exit", "regressions",
              "undecided", "unchanged", "missing", "suspects", "rows",
              "time rows gated at: threshold / median / largest");
  nlohmann::json gates = nlohmann::json::array();
  NightTotals t;
  for (std::size_t j = 1; j < runs.size(); ++j) {
    const GateOptions g = night_gate(plan, pools, j);
    for (std::size_t i = 0; i < j; ++i) gates.push_back(night_pair(runs, i, j, g, t));
  }
  std::printf(
      "  %d of %d nightly-shaped A/A gates passed (exit 0 without --undecided pass); %d with a false regression "
      "(%ld regression and %ld undecided verdicts over %ld rows)\n",
      t.passed, t.total, t.with_regression, t.regressions, t.undecided, t.rows);
  std::set<std::string> benchmarks;
  for (const auto& p : pools) {
    for (const auto& [name, e] : p.time) benchmarks.insert(name);
  }
  nlohmann::json result;
  result["machine"] = {{"cpu_model", env.fingerprint.value("cpu_model", "")},
                       {"cpu_count", env.fingerprint.value("cpu_count", 0)},
                       {"machine_key", env.fingerprint.value("machine_key", "")}};
  result["mode"] = "nights";
  result["profile"] = plan.profile;
  result["runs"] = {{"directory", dir}, {"count", runs.size()}};
  result["benchmarks"] = benchmarks.size();
  result["processes_per_benchmark"] = profile.repetitions;
  result["gates"] = gates;
  result["summary"] = {{"gates", t.total},
                       {"passed", t.passed},
                       {"with_a_false_regression", t.with_regression},
                       {"regression_verdicts", t.regressions},
                       {"undecided_verdicts", t.undecided},
                       {"rows", t.rows}};
  result["wall_s"] = std::chrono::duration<double>(Clock::now() - start).count();
  result["note"] =
      "Every pair of the runs gated as ci/nightly.sh gates a night (the earlier as baseline, run-to-run noise "
      "from every run but the current); the gates share runs, so they are not independent.";
  if (!plan.out.empty()) {
    write_json_atomically(plan.out, result);
    std::printf("wrote %s (run files in %s)\n", plan.out.c_str(), dir.c_str());
  }
  return t.passed == t.total ? kExitOk : 1;
}

}  // namespace pairbench::harness
