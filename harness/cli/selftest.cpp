// `pairbench selftest`: the gate measured as users meet it, with real benchmarks of this suite on
// this machine.
//   1. A run X of the selected benchmarks (2n processes each, n = the profile's processes per
//      benchmark), then, later, a run Y interleaving four sides: A' (the same build again) and
//      the same build with 5, 10 and 20 % of real work planted inside every timed region (2n each).
//      Instruction counts the same way: 3 counting processes in X, 2 per side in Y, the planted
//      work there an exact number of work loops per region (5/10/20 % of X's count).
//   2. Gates are drawn from these processes as users would meet them: baseline n processes of X,
//      current n processes of A' (A/A) or of a planted side, many times over; each draw is a
//      whole gate over every selected benchmark (Holm over all of them).
//   3. Reported per instrument: whole-gate A/A false-regression rate, detection rate of each
//      planted change (by noise band), seconds of processes per decision; and Google Benchmark's
//      compare.py rule (two-sided U test, p < 0.05, no correction) on the same draws.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <numeric>
#include <random>
#include <set>

#include "harness/analysis/change_points.h"
#include "harness/cli/command.h"
#include "harness/cli/gate_inputs.h"
#include "harness/cli/history_access.h"
#include "harness/cli/options.h"
#include "harness/cli/run_record.h"
#include "harness/exec/interrupt.h"
#include "harness/exec/say.h"
#include "harness/selftest/ab_studies.h"
#include "harness/stats/stats.h"
#include "harness/store/file_checks.h"
#include "harness/store/history.h"
#include "harness/store/run_file.h"
#include "pairbench/build_info.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

struct SelftestArgs {
  std::string experiments, arms, profile = "quick", out;
  int trials = 200, repetitions = 0, instruction_processes = 2;  // trials: A/A gate draws (planted: half)
  double min_time_s = 0;
  std::uint64_t seed = 0;
  bool pairing_study = false;  // measure ab's duet pairing against sequential interleaving instead
  int baseline_runs = 4;       // runs of the same build (A1..): A/A pairs and the run-to-run noise
  std::string runs_dir;        // where the run files go (default results/selftest)
  bool from_runs = false;      // analyse the run files already in runs_dir; run nothing
  int ab_aa = 0;               // > 0: ab of the build against itself this many times instead
  int nights = 0;              // > 0: this many runs at the profile's own plan, every pair gated as the nightly gates
  int ab_deep = 0;             // > 0: ab of the build against itself, each benchmark alone, this many times each
  std::string benchmarks;      // --ab-deep: a regular expression the benchmarks' names must match
  int per_experiment = 0;      // --ab-deep: > 0: this many benchmarks of each experiment, drawn with --seed
  double ab_budget_s = -1;     // their --budget (< 0: ab's default)
  GateArgs gate;
};

// Process entries of one run file, by benchmark: the time instrument (`benchmarks`) and
// instruction counts (`pairbench.instructions`).
struct Pool {
  std::map<std::string, std::vector<nlohmann::json>> time, instructions;
};

Pool pool_of(const nlohmann::json& doc) {
  Pool p;
  for (const auto& b : doc["benchmarks"]) p.time[b["name"]].push_back(b);
  for (const auto& b : doc["pairbench"].value("instructions", nlohmann::json::array())) {
    p.instructions[b["name"]].push_back(b);
  }
  return p;
}

// A run file holding n processes of each benchmark drawn without replacement from `doc`.
nlohmann::json draw(const nlohmann::json& doc, const Pool& pool, int n, int instruction_n, std::mt19937_64& rng) {
  nlohmann::json out = doc;
  out["benchmarks"] = nlohmann::json::array();
  out["pairbench"]["instructions"] = nlohmann::json::array();
  out["pairbench"].erase("ab_run_id");
  for (const auto* by : {&pool.time, &pool.instructions}) {
    const int k = by == &pool.time ? n : instruction_n;
    auto& target = by == &pool.time ? out["benchmarks"] : out["pairbench"]["instructions"];
    for (const auto& [name, entries] : *by) {
      std::vector<std::size_t> idx(entries.size());
      std::iota(idx.begin(), idx.end(), 0);
      std::shuffle(idx.begin(), idx.end(), rng);
      for (int i = 0; i < std::min<int>(k, static_cast<int>(idx.size())); ++i) {
        nlohmann::json e = entries[idx[static_cast<std::size_t>(i)]];
        for (const char* key : {"duet_pair", "duet_lead", "duet_start_gate"}) e.erase(key);
        target.push_back(std::move(e));
      }
    }
  }
  return out;
}

struct Tally {
  int gates = 0, gates_with_regression = 0, gates_passed = 0;
  long regressions = 0, decisions = 0, undecided = 0, unchanged = 0;
  long compare_py_flags = 0;                             // compare.py's rule, same draws
  std::map<std::string, std::pair<long, long>> by_band;  // noise band -> (caught, decisions)
  std::map<std::string, long> regressions_by_benchmark;
};

std::string noise_band(double cv) {
  if (cv <= 0.03) return "noise <= 3%";
  if (cv <= 0.10) return "noise 3-10%";
  return "noise > 10%";
}

double rate(long a, long b) { return b ? static_cast<double>(a) / static_cast<double>(b) : 0.0; }

nlohmann::json tally_json(const Tally& t) {
  nlohmann::json bands = nlohmann::json::object();
  for (const auto& [band, cd] : t.by_band) {
    bands[band] = {{"caught", cd.first}, {"decisions", cd.second}, {"rate", rate(cd.first, cd.second)}};
  }
  std::vector<std::pair<long, std::string>> worst;
  for (const auto& [name, count] : t.regressions_by_benchmark) worst.emplace_back(count, name);
  std::sort(worst.rbegin(), worst.rend());
  nlohmann::json top = nlohmann::json::array();
  for (std::size_t i = 0; i < std::min<std::size_t>(10, worst.size()); ++i) {
    top.push_back({{"benchmark", worst[i].second}, {"regressions", worst[i].first}});
  }
  return {{"gates", t.gates},
          {"gates_with_a_regression", t.gates_with_regression},
          {"gate_regression_rate", rate(t.gates_with_regression, t.gates)},
          {"gates_passed", t.gates_passed},
          {"regression_verdicts", t.regressions},
          {"benchmark_decisions", t.decisions},
          {"regression_rate", rate(t.regressions, t.decisions)},
          {"undecided_rate", rate(t.undecided, t.decisions)},
          {"unchanged_rate", rate(t.unchanged, t.decisions)},
          {"by_noise", bands},
          {"most_regressions", top},
          {"compare_py_flags", t.compare_py_flags},
          {"compare_py_flag_rate", rate(t.compare_py_flags, t.decisions)}};
}

// Google Benchmark compare.py's rule on the same two run files: a two-sided U test on the
// process values at p < 0.05, uncorrected, counted as a slowdown flag when the median moved the
// worse way. Returns the number of benchmarks flagged.
int compare_py_flags(const nlohmann::json& base, const nlohmann::json& cur) {
  std::map<std::string, std::string> better;
  for (const auto& e : cur["pairbench"]["experiments"]) better[e["name"]] = e["better"];
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> values;
  std::map<std::string, std::string> experiment;
  for (const auto* doc : {&base, &cur}) {
    for (const auto& b : (*doc)["benchmarks"]) {
      auto& pair = values[b["name"]];
      (doc == &base ? pair.first : pair.second).push_back(process_value(b));
      experiment[b["name"]] = b["experiment"];
    }
  }
  int flags = 0;
  for (const auto& [name, pair] : values) {
    if (pair.first.size() < 2 || pair.second.size() < 2) continue;
    const bool higher = better[experiment[name]] == "higher";
    const bool worse = higher ? stats::median(pair.second) < stats::median(pair.first)
                              : stats::median(pair.second) > stats::median(pair.first);
    flags += worse && stats::mann_whitney_p_two_sided(pair.first, pair.second) < 0.05;
  }
  return flags;
}

// The gate as a whole, both instruments: a benchmark is caught when either instrument calls it a
// regression; a gate failed when any benchmark was.
void tally_combined(Tally& t, const GateReport& report) {
  ++t.gates;
  std::map<std::string, bool> caught;
  for (const auto& v : report.rows) {
    if (v.baseline_samples == 0 || v.current_samples == 0) continue;
    caught[v.benchmark] = caught[v.benchmark] || v.verdict == Verdict::regression;
  }
  bool any = false;
  for (const auto& [name, c] : caught) {
    ++t.decisions;
    t.regressions += c;
    any = any || c;
    if (c) ++t.regressions_by_benchmark[name];
  }
  t.gates_with_regression += any;
  t.gates_passed += !any && !report.undecided();
}

void tally_gate(Tally& t, const GateReport& report, const std::string& instrument,
                const std::map<std::string, double>& noise) {
  ++t.gates;
  bool regressed = false, all_decided = true;
  for (const auto& v : report.rows) {
    if (to_string(v.instrument) != instrument || v.baseline_samples == 0 || v.current_samples == 0) continue;
    ++t.decisions;
    const bool regression = v.verdict == Verdict::regression;
    t.regressions += regression;
    t.undecided += v.verdict == Verdict::undecided;
    t.unchanged += v.verdict == Verdict::unchanged;
    regressed = regressed || regression;
    all_decided = all_decided && (v.verdict == Verdict::unchanged || v.verdict == Verdict::improvement);
    if (regression) ++t.regressions_by_benchmark[v.benchmark];
    const auto it = noise.find(v.benchmark);
    auto& band = t.by_band[instrument == "time" ? noise_band(it == noise.end() ? 0 : it->second) : "instructions"];
    band.first += regression;
    ++band.second;
  }
  t.gates_with_regression += regressed;
  t.gates_passed += !regressed && all_decided;
}

// `ab` of a build against itself, and against itself with 5 % planted work, in both pairings:
// the noise of the comparison (median standard error of the log change), whole-gate A/A false
// regressions and the planted change's detection, per pairing.
int pairing_study(const SelftestArgs& args, const std::vector<ExperimentEntry>& experiments, const RunOptions& profile,
                  const Environment& env) {
  GateOptions gate = args.gate.options;
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
  if (!args.out.empty()) {
    write_json_atomically(args.out, result);
    std::printf("wrote %s\n", args.out.c_str());
  }
  return kExitOk;
}

constexpr int kPlantedLevels[] = {5, 10, 20};  // % of real work planted per timed region

std::string run_path(const std::string& dir, const std::string& name) { return dir + "/" + name + ".json"; }

// Runs A1..A<baseline_runs> of the same build, one after another as nights would be, then run Y:
// A' and the build with 5, 10 and 20 % planted, interleaved. Time: work worth L % of each region's
// time; instructions: L % of A1's count per iteration, as whole work loops of the known size.
// Returns 0, or the exit status of an interrupted run (kept, marked partial).
int measure_selftest_runs(const SelftestArgs& args, const std::vector<ExperimentEntry>& experiments,
                          const RunOptions& profile, const Environment& env, const std::string& dir) {
  check_writable(run_path(dir, "A1"));
  RunOptions o = profile;
  o.progress_tty = false;
  o.repetitions = 2 * profile.repetitions;
  o.instruction_processes = std::max(2, args.instruction_processes);
  o.pairing = "sequential";
  nlohmann::json first;
  for (int k = 1; k <= args.baseline_runs; ++k) {
    say() << "selftest: run A" << k << " of " << args.baseline_runs << ", " << o.repetitions
          << " processes per benchmark\n";
    const std::string started = utc_stamp("%Y-%m-%dT%H:%M:%SZ");
    const RunOutcome r = run_sides({Side{"A", experiments, {}, {}, {}}}, o);
    nlohmann::json doc = build_run_doc(experiments, r.samples, o, r, env, started, "selftest A" + std::to_string(k), 0);
    write_json_atomically(run_path(dir, "A" + std::to_string(k)), doc);
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
    write_json_atomically(run_path(dir, side == 0 ? "Y-A'" : "Y-" + sides[side].name), doc);
  }
  return y.interrupted_by ? interrupted_exit_status() : 0;
}

// The self-test's run files, read back (--from re-reads them): the same-build runs (A' last) and
// the planted sides, with their processes by benchmark.
struct SelftestRuns {
  std::vector<nlohmann::json> a_runs;
  std::vector<Pool> a_pools;
  std::map<int, nlohmann::json> planted;
};

SelftestRuns read_selftest_runs(const std::string& dir) {
  SelftestRuns s;
  for (int k = 1;; ++k) {
    if (!fs::exists(run_path(dir, "A" + std::to_string(k)))) break;
    s.a_runs.push_back(read_run_file(run_path(dir, "A" + std::to_string(k))));
  }
  if (s.a_runs.size() < 2)
    throw UsageError(dir + ": needs runs A1 and A2 (run pairbench selftest without --from first)");
  s.a_runs.push_back(read_run_file(run_path(dir, "Y-A'")));  // A' is one more run of the same build
  for (int level : kPlantedLevels) s.planted[level] = read_run_file(run_path(dir, "Y-planted" + std::to_string(level)));
  for (const auto& d : s.a_runs) s.a_pools.push_back(pool_of(d));
  return s;
}

// The gate's options three ways: with the history a nightly gate would have (every run of the
// same build), for two sides of one run (their processes' noise only), and with no history.
struct SelftestGates {
  GateOptions gate, same_run, no_history;
};

SelftestGates selftest_gates(const GateOptions& asked, const SelftestRuns& runs) {
  SelftestGates g{asked, {}, {}};
  g.gate.force = true;
  g.gate.undecided = UndecidedPolicy::pass;
  std::map<std::string, std::vector<std::vector<double>>> per_run;
  for (const Pool& p : runs.a_pools) {
    for (const auto& [name, entries] : p.time) {
      std::vector<double> v;
      for (const auto& e : entries) v.push_back(process_value(e));
      per_run[name].push_back(v);
    }
  }
  for (const auto& [name, values] : per_run) add_history_noise(g.gate, name, values);
  g.gate.run_variance_source = "the selftest's " + std::to_string(runs.a_runs.size()) + " runs of the same build";
  g.same_run = g.gate;
  g.same_run.run_variance.clear();
  g.same_run.run_variance_runs.clear();
  g.no_history = g.same_run;
  g.no_history.process_variance_history.clear();
  g.no_history.run_variance_source.clear();
  return g;
}

// Each benchmark's process-to-process noise (robust SD of the log value, from A1): its band.
std::map<std::string, double> process_noise(const Pool& pool) {
  std::map<std::string, double> noise;
  for (const auto& [name, entries] : pool.time) {
    std::vector<double> v;
    for (const auto& e : entries) v.push_back(std::log(process_value(e)));
    noise[name] = v.size() > 1 ? stats::kMadToSigma * stats::mad(v) : 0;
  }
  return noise;
}

// instrument -> kind (aa, planted_<L>pct) -> tally, over gates drawn from the runs.
struct SelftestTallies {
  std::map<std::string, std::map<std::string, Tally>> by_instrument;
  Tally aa_without_history;
  // What the A/A gates' time rows were gated at (docs/gate.md, "Resolution"), every row of every
  // gate, and whether each of the first ten gates passed outright (no regression, nothing undecided).
  std::vector<double> aa_gated_at;
  int first_ten_passed = 0, first_ten = 0;
};

SelftestTallies draw_gates(const SelftestArgs& args, const SelftestRuns& s, const SelftestGates& g,
                           const std::map<std::string, double>& noise, int n, int ni) {
  std::mt19937_64 rng(args.seed ? args.seed : 20261124);
  SelftestTallies t;
  auto& tallies = t.by_instrument;
  const std::size_t runs = s.a_runs.size();
  for (int d = 0; d < args.trials; ++d) {
    // Two different runs of the same build, n processes of each.
    const std::size_t i = rng() % runs, j = (i + 1 + rng() % (runs - 1)) % runs;
    const auto base = draw(s.a_runs[i], s.a_pools[i], n, ni, rng), cur = draw(s.a_runs[j], s.a_pools[j], n, ni, rng);
    const GateReport report = compare_runs(base, cur, g.gate, "A", "A'");
    for (const char* instrument : {"time", "instructions"})
      tally_gate(tallies[instrument]["aa"], report, instrument, noise);
    tally_combined(tallies["whole gate"]["aa"], report);
    for (const auto& v : report.rows) {
      if (v.instrument == Instrument::time && v.gated_at > 0) t.aa_gated_at.push_back(v.gated_at);
    }
    if (t.first_ten < 10)
      ++t.first_ten, t.first_ten_passed += report.count(Verdict::regression) == 0 && !report.undecided();
    tally_gate(t.aa_without_history, compare_runs(base, cur, g.no_history, "A", "A'"), "time", noise);
    tallies["time"]["aa"].compare_py_flags += compare_py_flags(base, cur);
  }
  for (int level : kPlantedLevels) {
    const nlohmann::json& planted = s.planted.at(level);
    const Pool pp = pool_of(planted);
    const std::string kind = "planted_" + std::to_string(level) + "pct";
    for (int d = 0; d < std::max(1, args.trials / 2); ++d) {
      const std::size_t i = rng() % (runs - 1);  // a baseline run: any A run but A' (same run as the planted side)
      const auto base = draw(s.a_runs[i], s.a_pools[i], n, ni, rng), cur = draw(planted, pp, n, ni, rng);
      const GateReport report = compare_runs(base, cur, g.gate, "A", kind);
      for (const char* instrument : {"time", "instructions"})
        tally_gate(tallies[instrument][kind], report, instrument, noise);
      tally_combined(tallies["whole gate"][kind], report);
      tallies["time"][kind].compare_py_flags += compare_py_flags(base, cur);
      // The same planted side against A' of its own run (what `pairbench ab` compares): no day
      // between them, so no run-to-run noise; this is where time can decide small changes.
      const auto same = draw(s.a_runs.back(), s.a_pools.back(), n, ni, rng);
      tally_gate(tallies["time, same run"][kind], compare_runs(same, cur, g.same_run, "A'", kind), "time", noise);
    }
  }
  return t;
}

// What was planted, as measured: per level, the median over benchmarks of the planted side's
// median against A' (same run; time oriented so + = worse), and the same for instruction counts.
nlohmann::json planted_as_measured(const SelftestRuns& s) {
  std::map<std::string, std::string> better_of;
  for (const auto& e : s.a_runs.back()["pairbench"]["experiments"]) better_of[e["name"]] = e["better"];
  nlohmann::json realised = nlohmann::json::object();
  for (int level : kPlantedLevels) {
    const Pool pp = pool_of(s.planted.at(level));
    for (const bool instructions : {false, true}) {
      const auto& a_by = instructions ? s.a_pools.back().instructions : s.a_pools.back().time;
      const auto& p_by = instructions ? pp.instructions : pp.time;
      std::vector<double> changes;
      for (const auto& [name, entries] : p_by) {
        const auto it = a_by.find(name);
        if (it == a_by.end() || entries.empty() || it->second.empty()) continue;
        std::vector<double> a, p;
        for (const auto& e : it->second)
          a.push_back(instructions ? e["instructions_per_iteration"].get<double>() : process_value(e));
        for (const auto& e : entries)
          p.push_back(instructions ? e["instructions_per_iteration"].get<double>() : process_value(e));
        double ratio = stats::median(p) / stats::median(a);
        if (!instructions && better_of[entries[0]["experiment"]] == "higher") ratio = 1 / ratio;
        changes.push_back(ratio - 1);
      }
      if (!changes.empty()) {
        realised[instructions ? "instructions" : "time"]["planted " + std::to_string(level) + "%"] = {
            {"median", stats::median(changes)},
            {"q25", stats::quantile(changes, 0.25)},
            {"q75", stats::quantile(changes, 0.75)}};
      }
    }
  }
  return realised;
}

double share_at_most(const std::vector<double>& v, double bound) {
  return v.empty() ? 0.0
                   : static_cast<double>(std::count_if(v.begin(), v.end(), [&](double x) { return x <= bound; })) /
                         static_cast<double>(v.size());
}

double mean_wall(const std::vector<Pool>& pools, bool instructions) {
  double sum = 0;
  long count = 0;
  for (const Pool& p : pools) {
    for (const auto& [name, entries] : instructions ? p.instructions : p.time) {
      for (const auto& e : entries) sum += e.value("process_wall_s", 0.0), ++count;
    }
  }
  return count ? sum / static_cast<double>(count) : 0.0;
}

// Instruction counts: their spread within a run (the processes of one run) and from run to run
// (the medians of the same-build runs), per benchmark, as a CV.
nlohmann::json instruction_count_spread(const std::vector<Pool>& pools) {
  std::vector<double> count_cv_within, count_cv_runs;
  std::map<std::string, std::vector<double>> count_medians;
  for (const Pool& p : pools) {
    for (const auto& [name, entries] : p.instructions) {
      std::vector<double> c;
      for (const auto& e : entries) c.push_back(e["instructions_per_iteration"].get<double>());
      if (c.size() >= 2) count_cv_within.push_back(stats::cv(c));
      count_medians[name].push_back(stats::median(c));
    }
  }
  for (const auto& [name, medians] : count_medians) {
    if (medians.size() >= 2) count_cv_runs.push_back(stats::cv(medians));
  }
  return {
      {"run_to_run_median", count_cv_runs.empty() ? 0.0 : stats::median(count_cv_runs)},
      {"run_to_run_max", count_cv_runs.empty() ? 0.0 : *std::max_element(count_cv_runs.begin(), count_cv_runs.end())},
      {"run_to_run_share_at_most_0_5pct", share_at_most(count_cv_runs, 0.005)},
      {"within_run_median", count_cv_within.empty() ? 0.0 : stats::median(count_cv_within)},
      {"benchmarks", count_cv_runs.size()}};
}

// `history` and a gate from the database over 1000 nightly runs x 300 benchmarks (SQLite);
// `pairbench history speed` measures any size on either back end.
nlohmann::json selftest_history_speed() {
  char speed_dir[] = "/tmp/pairbench-selftest-history-XXXXXX";
  if (!mkdtemp(speed_dir)) throw std::runtime_error("selftest: cannot create a temporary directory");
  nlohmann::json speed;
  try {
    speed = measure_history_speed(std::string(speed_dir) + "/history.sqlite", 1000, 300, 9);
  } catch (...) {
    fs::remove_all(speed_dir);
    throw;
  }
  fs::remove_all(speed_dir);
  return speed;
}

// The terminal report of the self-test's result (`result` as written with --out).
void print_selftest(const nlohmann::json& result, const SelftestTallies& t, const std::string& cpu_model) {
  std::printf(
      "\npairbench selftest: %s profile, %d processes per side (%d counting), %zu benchmarks, %zu runs of "
      "the same build, on %s\n",
      result["profile"].get<std::string>().c_str(), result["processes_per_side"].get<int>(),
      result["instruction_processes_per_side"].get<int>(), result["benchmarks"].get<std::size_t>(),
      result["runs"]["same_build_runs"].get<std::size_t>(), cpu_model.c_str());
  std::printf(
      "  time noise: process to process %.1f%% (median robust SD), run to run %.1f%% (median; 75th pct %.1f%%)\n",
      100 * result["time_noise"]["process_to_process_median"].get<double>(),
      100 * result["time_noise"]["run_to_run_median"].get<double>(),
      100 * result["time_noise"]["run_to_run_q75"].get<double>());
  for (const auto& [instrument, by_kind] : t.by_instrument) {
    const Tally none;
    const Tally& aa = by_kind.count("aa") ? by_kind.at("aa") : none;
    if (aa.gates == 0) {
      std::printf("  %s (A/A: see --pairing-study):\n", instrument.c_str());
    } else {
      std::printf("  %s: A/A gates with a false regression: %d of %d (%.1f%%, goal <= 1%%); passed outright %d\n",
                  instrument.c_str(), aa.gates_with_regression, aa.gates,
                  100 * rate(aa.gates_with_regression, aa.gates), aa.gates_passed);
    }
    if (instrument == "whole gate") {
      std::printf("    the first %d A/A gates in a row: %d passed (exit 0 without --undecided pass)\n", t.first_ten,
                  t.first_ten_passed);
    }
    if (instrument == "time" && !t.aa_gated_at.empty()) {
      const auto& gated = result["results"]["time"]["aa_gated_at"];
      std::printf(
          "    gated at: the threshold %.0f%% of rows; the rest at their resolution, median of all rows "
          "\u00b1%.1f%%, 90th pct \u00b1%.1f%%\n",
          100 * gated["share_at_threshold"].get<double>(), 100 * gated["median"].get<double>(),
          100 * gated["q90"].get<double>());
    }
    if (instrument == "time") {
      std::printf("    without the run-to-run noise from history: %d of %d (%.1f%%)\n",
                  t.aa_without_history.gates_with_regression, t.aa_without_history.gates,
                  100 * rate(t.aa_without_history.gates_with_regression, t.aa_without_history.gates));
    }
    for (int level : kPlantedLevels) {
      const std::string kind = "planted_" + std::to_string(level) + "pct";
      if (!by_kind.count(kind)) continue;
      const Tally& k = by_kind.at(kind);
      std::printf("    planted %2d%%: caught %.1f%% of decisions", level, 100 * rate(k.regressions, k.decisions));
      for (const auto& [band, cd] : k.by_band) {
        if (instrument.rfind("time", 0) == 0) std::printf("; %s %.1f%%", band.c_str(), 100 * rate(cd.first, cd.second));
      }
      if (instrument == "whole gate") std::printf(" (of %ld benchmarks per gate)", k.gates ? k.decisions / k.gates : 0);
      if (instrument == "time") std::printf("; compare.py %.1f%%", 100 * rate(k.compare_py_flags, k.decisions));
      std::printf("\n");
    }
    if (instrument == "time") {
      std::printf("    compare.py rule on A/A: %.2f false flags per gate\n", rate(aa.compare_py_flags, aa.gates));
    }
  }
  for (const auto& [instrument, by_side] : result["planted_as_measured"].items()) {
    std::printf("  planted, as measured (%s):", instrument.c_str());
    for (const auto& [side, q] : by_side.items())
      std::printf(" %s %+.1f%%;", side.c_str(), 100 * q["median"].get<double>());
    std::printf("\n");
  }
  std::printf("  instruction counts: run-to-run CV median %.4f%%, max %.3f%%; %.0f%% of %zu benchmarks at <= 0.5%%\n",
              100 * result["instruction_count_cv"]["run_to_run_median"].get<double>(),
              100 * result["instruction_count_cv"]["run_to_run_max"].get<double>(),
              100 * result["instruction_count_cv"]["run_to_run_share_at_most_0_5pct"].get<double>(),
              result["instruction_count_cv"]["benchmarks"].get<std::size_t>());
  std::printf("  seconds of processes per decision: time %.2f s, instructions %.2f s\n",
              result["seconds_per_decision"]["time"].get<double>(),
              result["seconds_per_decision"]["instructions"].get<double>());
  const nlohmann::json& speed = result["history_and_gate_speed"];
  std::printf("  history over %d runs x %d benchmarks: %.2f s; gate: %.3f s\n", speed["runs"].get<int>(),
              speed["benchmarks"].get<int>(), speed["history_s"].get<double>(), speed["gate_s"].get<double>());
}

// --nights K: the gate as the nightly meets it, on whole runs rather than draws. K runs of the same
// build at the profile's own plan (its processes, time budget and counting cover, as `run
// --profile` does), then every pair of them gated as ci/nightly.sh gates a night: the earlier run
// as the baseline, the run-to-run noise from the history it would have (every run but the current
// one), unchanged at the larger of the threshold and the benchmark's resolution, --undecided fail.
// The gates share runs (K runs give K(K-1)/2 pairs), so they are not independent draws; each one is
// a complete nightly-shaped comparison of real processes.
int selftest_nights(const SelftestArgs& args, const std::vector<ExperimentEntry>* experiments,
                    const RunOptions& profile, const Environment& env, const std::string& dir) {
  const auto start = Clock::now();
  std::vector<nlohmann::json> runs;
  if (experiments) {
    check_writable(run_path(dir, "night1"));
    RunOptions o = profile;
    o.progress_tty = false;
    for (int k = 1; k <= args.nights; ++k) {
      say() << "selftest: night " << k << " of " << args.nights << " (" << args.profile << " profile, " << o.repetitions
            << " processes per benchmark within its budget)\n";
      o.seed = args.seed + static_cast<std::uint64_t>(k);  // a fresh order each night
      const std::string started = utc_stamp("%Y-%m-%dT%H:%M:%SZ");
      const RunOutcome r = run_sides({Side{"A", *experiments, {}, {}, {}}}, o);
      nlohmann::json doc =
          build_run_doc(*experiments, r.samples, o, r, env, started, "selftest night " + std::to_string(k), 0);
      write_json_atomically(run_path(dir, "night" + std::to_string(k)), doc);
      if (r.interrupted_by) return interrupted_exit_status();
    }
  }
  for (int k = 1; fs::exists(run_path(dir, "night" + std::to_string(k))); ++k) {
    runs.push_back(read_run_file(run_path(dir, "night" + std::to_string(k))));
  }
  if (runs.size() < 3) throw UsageError(dir + ": --nights needs at least 3 runs night1.. (run without --from first)");
  std::vector<Pool> pools;
  for (const auto& d : runs) pools.push_back(pool_of(d));
  std::printf(
      "\npairbench selftest --nights: %zu runs of the same build (%s profile, as `run --profile %s` plans them), "
      "every pair gated as the nightly gates it, on %s\n",
      runs.size(), args.profile.c_str(), args.profile.c_str(), env.fingerprint.value("cpu_model", "").c_str());
  std::printf("  %-9s %-9s %5s %11s %9s %10s %8s %8s %6s  %s\n", "baseline", "current", "exit", "regressions",
              "undecided", "unchanged", "missing", "suspects", "rows",
              "time rows gated at: threshold / median / largest");
  nlohmann::json gates = nlohmann::json::array();
  int passed = 0, with_regression = 0, total = 0;
  long regressions = 0, undecided = 0, rows = 0;
  for (std::size_t j = 1; j < runs.size(); ++j) {
    // The history a night j would have: the runs before it and after it are the same build, but a
    // real night has only those before; all of them but j keeps K-1 runs of run-to-run noise.
    GateOptions g = args.gate.options;
    g.force = true;
    std::map<std::string, std::vector<std::vector<double>>> per_run;
    for (std::size_t k = 0; k < runs.size(); ++k) {
      if (k == j) continue;
      for (const auto& [name, entries] : pools[k].time) {
        std::vector<double> v;
        for (const auto& e : entries) v.push_back(process_value(e));
        per_run[name].push_back(v);
      }
    }
    for (const auto& [name, values] : per_run) add_history_noise(g, name, values);
    g.run_variance_source = "the selftest's other " + std::to_string(runs.size() - 1) + " runs of the same build";
    for (std::size_t i = 0; i < j; ++i) {
      const GateReport report =
          compare_runs(runs[i], runs[j], g, "night" + std::to_string(i + 1), "night" + std::to_string(j + 1));
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
      ++total;
      passed += status == kExitOk;
      with_regression += reg > 0;
      regressions += reg, undecided += und, rows += static_cast<long>(report.rows.size());
      std::vector<std::string> names;
      for (const auto& v : report.rows) {
        if (v.verdict == Verdict::regression || v.verdict == Verdict::undecided) {
          names.push_back(v.benchmark + " (" + to_string(v.instrument) + ", " + to_string(v.verdict) + ")");
        }
      }
      const double median = gated_at.empty() ? 0 : stats::median(gated_at);
      const double largest = gated_at.empty() ? 0 : *std::max_element(gated_at.begin(), gated_at.end());
      std::printf("  %-9s %-9s %5d %11d %9d %10d %8d %8d %6zu  %d of %zu / \u00b1%.1f%% / \u00b1%.1f%%\n",
                  ("night" + std::to_string(i + 1)).c_str(), ("night" + std::to_string(j + 1)).c_str(), status, reg,
                  und, report.count(Verdict::unchanged), report.count(Verdict::missing), suspects, report.rows.size(),
                  at_threshold, gated_at.size(), 100 * median, 100 * largest);
      for (const auto& n : names) std::printf("      %s\n", n.c_str());
      gates.push_back({{"baseline", "night" + std::to_string(i + 1)},
                       {"current", "night" + std::to_string(j + 1)},
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
                       {"not_passed", names}});
    }
  }
  std::printf(
      "  %d of %d nightly-shaped A/A gates passed (exit 0 without --undecided pass); %d with a false regression "
      "(%ld regression and %ld undecided verdicts over %ld rows)\n",
      passed, total, with_regression, regressions, undecided, rows);
  std::set<std::string> benchmarks;
  for (const auto& p : pools) {
    for (const auto& [name, e] : p.time) benchmarks.insert(name);
  }
  nlohmann::json result;
  result["machine"] = {{"cpu_model", env.fingerprint.value("cpu_model", "")},
                       {"cpu_count", env.fingerprint.value("cpu_count", 0)},
                       {"machine_key", env.fingerprint.value("machine_key", "")}};
  result["mode"] = "nights";
  result["profile"] = args.profile;
  result["runs"] = {{"directory", dir}, {"count", runs.size()}};
  result["benchmarks"] = benchmarks.size();
  result["processes_per_benchmark"] = profile.repetitions;
  result["gates"] = gates;
  result["summary"] = {{"gates", total},
                       {"passed", passed},
                       {"with_a_false_regression", with_regression},
                       {"regression_verdicts", regressions},
                       {"undecided_verdicts", undecided},
                       {"rows", rows}};
  result["wall_s"] = std::chrono::duration<double>(Clock::now() - start).count();
  result["note"] =
      "Every pair of the runs gated as ci/nightly.sh gates a night (the earlier as baseline, run-to-run noise "
      "from every run but the current); the gates share runs, so they are not independent.";
  if (!args.out.empty()) {
    write_json_atomically(args.out, result);
    std::printf("wrote %s (run files in %s)\n", args.out.c_str(), dir.c_str());
  }
  return passed == total ? kExitOk : 1;
}

int cmd_selftest(const SelftestArgs& args, const std::string& bench_dir) {
  if (args.ab_deep > 0) {
    std::vector<std::string> names;
    std::mt19937_64 rng(args.seed);
    for (const auto& e :
         keep_benchmarks_matching(select_experiments(load_catalogue(find_bench_binaries(bench_dir), args.profile),
                                                     args.experiments, args.arms),
                                  args.benchmarks)) {
      std::vector<std::string> here;
      for (const auto& b : e.benchmarks) {
        if (b.available) here.push_back(b.name);
      }
      if (here.empty()) continue;
      if (args.per_experiment > 0 && here.size() > static_cast<std::size_t>(args.per_experiment)) {
        std::shuffle(here.begin(), here.end(), rng);
        here.resize(static_cast<std::size_t>(args.per_experiment));
      }
      names.insert(names.end(), here.begin(), here.end());
    }
    if (names.empty()) throw UsageError("--ab-deep: no benchmark that can run here is selected");
    return selftest_ab_deep({args.ab_deep, names, args.profile, args.ab_budget_s, bench_dir,
                             args.runs_dir.empty() ? "results/selftest-ab-deep" : args.runs_dir, args.out, args.seed});
  }
  if (args.ab_aa > 0) {
    return selftest_ab_aa({args.ab_aa, args.experiments, args.profile, args.ab_budget_s, bench_dir,
                           args.runs_dir.empty() ? "results/selftest-ab-aa" : args.runs_dir, args.out});
  }
  RunArgs run_args;
  run_args.profile = args.profile;
  run_args.repetitions = args.repetitions;
  run_args.min_time_s = args.min_time_s;
  const Environment env = capture_environment(PAIRBENCH_SOURCE_DIR);
  RunOptions profile = run_options(run_args, env.fingerprint.value("machine_key", ""));
  const std::string nights_dir = args.runs_dir.empty() ? "results/selftest-nights" : args.runs_dir;
  if (args.nights > 0 && args.from_runs) return selftest_nights(args, nullptr, profile, env, nights_dir);
  if (args.nights > 0) {
    auto experiments =
        select_experiments(load_catalogue(find_bench_binaries(bench_dir), args.profile), args.experiments, args.arms);
    return selftest_nights(args, &experiments, profile, env, nights_dir);
  }
  // The self-test's gates are drawn at the profile's count for every benchmark: no time budget.
  profile.process_budget_s = profile.instruction_budget_s = 0;
  const int n = profile.repetitions;
  const int ni = std::max(2, args.instruction_processes);
  const std::string dir = args.runs_dir.empty() ? "results/selftest" : args.runs_dir;
  const auto start = Clock::now();

  if (!args.from_runs) {
    auto experiments =
        select_experiments(load_catalogue(find_bench_binaries(bench_dir), args.profile), args.experiments, args.arms);
    // By default every comparison the catalogue declares, in every area; a machine limit has no
    // baseline to plant a change against.
    if (args.experiments.empty())
      std::erase_if(experiments, [](const ExperimentEntry& e) { return e.kind != "comparison"; });
    if (args.pairing_study) return pairing_study(args, experiments, profile, env);
    if (const int status = measure_selftest_runs(args, experiments, profile, env, dir)) return status;
  }

  // --- Analysis, from the run files (--from re-reads them) ------------------------------------
  const SelftestRuns runs = read_selftest_runs(dir);
  const SelftestGates gates = selftest_gates(args.gate.options, runs);
  const GateOptions& gate = gates.gate;
  const std::map<std::string, double> noise = process_noise(runs.a_pools[0]);
  std::vector<double> noises, run_noises;
  for (const auto& [name, cv] : noise) noises.push_back(cv);
  for (const auto& [name, v] : gate.run_variance) run_noises.push_back(std::sqrt(v));
  const SelftestTallies tallies = draw_gates(args, runs, gates, noise, n, ni);
  const nlohmann::json speed = selftest_history_speed();

  nlohmann::json result;
  result["machine"] = {{"cpu_model", env.fingerprint.value("cpu_model", "")},
                       {"cpu_count", env.fingerprint.value("cpu_count", 0)},
                       {"machine_key", env.fingerprint.value("machine_key", "")}};
  result["runs"] = {
      {"directory", dir}, {"same_build_runs", runs.a_runs.size()}, {"planted_levels_pct", kPlantedLevels}};
  result["profile"] = args.profile;
  result["processes_per_side"] = n;
  result["instruction_processes_per_side"] = ni;
  result["benchmarks"] = noise.size();
  result["draws"] = {{"aa", args.trials}, {"planted", std::max(1, args.trials / 2)}};
  result["gate"] = {{"threshold", gate.threshold},
                    {"instructions_threshold", gate.instructions_threshold},
                    {"alpha", gate.alpha},
                    {"correction", to_string(gate.correction)},
                    {"moderation", to_string(gate.moderation)},
                    {"run_variance_source", gate.run_variance_source}};
  result["instruction_counter"] = runs.a_runs[0]["pairbench"]["sampling"].value("instruction_counter", "none");
  result["time_noise"] = {{"process_to_process_median", noises.empty() ? 0.0 : stats::median(noises)},
                          {"run_to_run_median", run_noises.empty() ? 0.0 : stats::median(run_noises)},
                          {"run_to_run_q75", run_noises.empty() ? 0.0 : stats::quantile(run_noises, 0.75)}};
  for (const auto& [instrument, by_kind] : tallies.by_instrument) {
    for (const auto& [kind, t] : by_kind) result["results"][instrument][kind] = tally_json(t);
  }
  result["results"]["time"]["aa_without_run_to_run_noise"] = tally_json(tallies.aa_without_history);
  if (!tallies.aa_gated_at.empty()) {
    const auto& g = tallies.aa_gated_at;
    result["results"]["time"]["aa_gated_at"] = {{"rows", g.size()},
                                                {"share_at_threshold", share_at_most(g, gate.threshold * (1 + 1e-12))},
                                                {"median", stats::median(g)},
                                                {"q90", stats::quantile(g, 0.9)}};
  }
  result["results"]["whole gate"]["first_ten_aa"] = {{"gates", tallies.first_ten},
                                                     {"passed", tallies.first_ten_passed}};
  result["planted_as_measured"] = planted_as_measured(runs);
  result["instruction_count_cv"] = instruction_count_spread(runs.a_pools);
  result["seconds_per_decision"] = {{"time", 2 * n * mean_wall(runs.a_pools, false)},
                                    {"instructions", 2 * ni * mean_wall(runs.a_pools, true)}};
  result["history_and_gate_speed"] = speed;
  result["analysis_wall_s"] = std::chrono::duration<double>(Clock::now() - start).count();
  result["note"] =
      "Gates are drawn from real processes: for A/A, n processes of one run and n of another run of the same "
      "build (runs A1.. and Y's A'); for detection, a baseline run against Y's planted side. Draws share "
      "processes, so the rates are resampling estimates from these runs.";
  print_selftest(result, tallies, env.fingerprint.value("cpu_model", ""));
  if (!args.out.empty()) {
    write_json_atomically(args.out, result);
    std::printf("wrote %s (run files in %s)\n", args.out.c_str(), dir.c_str());
  }
  return kExitOk;
}

}  // namespace

Command command_selftest() {
  return {
      "selftest", "measure the gate's false-alarm and detection rates on this machine",
      "0 measured (the rates are the result, not a verdict); with --ab-aa or --ab-deep: 0 no decided change, 1 some "
      "decided "
      "change, 3 an ab failed to run; with --nights: 0 every gate passed, 1 some did not; 2 bad input; 130/143 "
      "interrupted by SIGINT/SIGTERM (the run files written "
      "so far are kept)",
      "a bench binary's output, a calibration cache or a run file (selftest)", [](CLI::App& cmd) -> CommandAction {
        auto a = std::make_shared<SelftestArgs>();
        auto bench_dir = std::make_shared<std::string>(default_bench_dir());
        cmd.add_option("--experiments", a->experiments,
                       "comma-separated experiment names or areas (default: every comparison experiment)")
            ->check(name_list("experiment names or areas"));
        cmd.add_option("--arms", a->arms, "comma-separated arm names to keep")->check(name_list("arm names"));
        cmd.add_option("--profile", a->profile)->check(CLI::IsMember(kProfiles));
        cmd.add_option("--trials", a->trials, "A/A gates drawn (planted: half as many per level)")
            ->check(CLI::Range(1, 100000));
        cmd.add_option("--repetitions", a->repetitions, "processes per benchmark and side")->check(CLI::Range(2, 1000));
        cmd.add_option("--instruction-processes", a->instruction_processes,
                       "instruction-counting processes per benchmark and side")
            ->check(CLI::Range(2, 100));
        cmd.add_option("--min-time", a->min_time_s)->check(finite_in(0.0001, 600.0));
        cmd.add_option("--seed", a->seed, "seed of the gate draws")->check(unsigned_64());
        cmd.add_option("--runs", a->baseline_runs, "runs of the same build before the planted run")
            ->check(CLI::Range(2, 50));
        cmd.add_option("--runs-dir", a->runs_dir, "where the run files go (default results/selftest)")
            ->check(path_is(directory_or_absent_problem, "DIR"));
        cmd.add_flag("--from", a->from_runs, "analyse the run files already in --runs-dir; run nothing");
        cmd.add_flag("--pairing-study", a->pairing_study,
                     "measure ab's duet pairing against sequential interleaving (noise, A/A, a planted 5 %)");
        cmd.add_option("--ab-aa", a->ab_aa,
                       "run ab of this build against itself N times at its defaults (--experiments, --profile "
                       "and --ab-budget as given) and count every decided change (exit 1 if any)")
            ->check(CLI::Range(1, 1000));
        cmd.add_option("--ab-deep", a->ab_deep,
                       "run ab of this build against itself with each selected benchmark alone, N times each, "
                       "over the same directory, a copy in another directory and the copy as baseline in turn, "
                       "each sampled as deep as --ab-budget and the cap allow; every decided change is listed "
                       "(exit 1 if any)")
            ->check(CLI::Range(1, 1000));
        cmd.add_option("--benchmarks", a->benchmarks, "--ab-deep: only benchmarks whose names match this regex");
        cmd.add_option("--per-experiment", a->per_experiment,
                       "--ab-deep: at most K benchmarks of each selected experiment, drawn with --seed (default: all)")
            ->check(CLI::Range(1, 10000));
        cmd.add_option("--nights", a->nights,
                       "run the selected experiments N times at the profile's own plan (budgets included) and gate "
                       "every pair as the nightly gates a night; exit 1 unless every gate exits 0 (--from: re-gate "
                       "the runs in --runs-dir, default results/selftest-nights)")
            ->check(CLI::Range(3, 50));
        cmd.add_option("--ab-budget", a->ab_budget_s, "--budget of each ab of --ab-aa or --ab-deep (default: ab's)")
            ->check(finite_in(0, 86400.0));
        cmd.add_option("--out", a->out, "write the result as JSON")
            ->check(path_is(regular_file_or_absent_problem, "FILE"));
        cmd.add_option("--bench-dir", *bench_dir, "directory of the bench_* binaries")
            ->check(path_is(directory_problem, "DIR"));
        add_gate_options(&cmd, a->gate);
        return [a, bench_dir](const std::string&) {
          finish_up_on_interrupt();
          return exit_status_after_interrupt(cmd_selftest(*a, *bench_dir));
        };
      }};
}

}  // namespace pairbench::harness
