// `pairbench selftest`: the gate measured as users meet it, with real benchmarks of this suite on
// this machine.
//   1. A run X of the selected benchmarks (2n processes each, n = the profile's processes per
//      benchmark), then, later, a run Y interleaving four sides: A' (the same build again) and
//      the same build with 2, 5 and 10 % of real work planted inside every timed region (2n each).
//      Instruction counts the same way: 3 counting processes in X, 2 per side in Y, the planted
//      work there an exact number of work loops per region (2/5/10 % of X's count).
//   2. Gates are drawn from these processes as users would meet them: baseline n processes of X,
//      current n processes of A' (A/A) or of a planted side, many times over; each draw is a
//      whole gate over every selected benchmark (Holm over all of them).
//   3. Reported per instrument: whole-gate A/A false-regression rate, detection rate of each
//      planted change (by noise band), seconds of processes per decision; and Google Benchmark's
//      compare.py rule (two-sided U test, p < 0.05, no correction) on the same draws.
// `--pairing-study` instead measures `ab`'s duet pairing against sequential interleaving.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <random>
#include <set>

#include "harness/commands.h"
#include "harness/history.h"
#include "harness/run_file.h"
#include "harness/stats.h"
#include "pairbench/build_info.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

// Times `history` (per-run medians and change points of every benchmark) and `gate` (one
// comparison) over a synthetic history of `runs` nightly runs, to check they stay interactive.
nlohmann::json time_history_and_gate(int runs, int benchmarks, int samples) {
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

bool good(const Sample& s) { return s.has_value && (s.verification == "passed" || s.verification == "not_verified"); }

// Processes of one side of one run, by benchmark and instrument.
struct Pool {
  std::map<std::string, std::vector<Sample>> time, instructions;
};

Pool pool_of(const std::vector<Sample>& samples, int side) {
  Pool p;
  for (const Sample& s : samples) {
    if (s.side != side || !good(s)) continue;
    (s.instrument == "instructions" ? p.instructions : p.time)[s.benchmark].push_back(s);
  }
  return p;
}

// n processes of each benchmark drawn without replacement from a pool, as one side of a gate.
std::vector<Sample> draw(const Pool& pool, int n, int instruction_n, std::mt19937_64& rng) {
  std::vector<Sample> out;
  for (const auto* by : {&pool.time, &pool.instructions}) {
    const int k = by == &pool.time ? n : instruction_n;
    for (const auto& [name, samples] : *by) {
      std::vector<std::size_t> idx(samples.size());
      std::iota(idx.begin(), idx.end(), 0);
      std::shuffle(idx.begin(), idx.end(), rng);
      for (int i = 0; i < std::min<int>(k, static_cast<int>(idx.size())); ++i) {
        Sample s = samples[idx[static_cast<std::size_t>(i)]];
        s.side = 0;
        s.pair = -1;
        out.push_back(std::move(s));
      }
    }
  }
  return out;
}

struct Tally {
  int gates = 0, gates_with_regression = 0;
  long regressions = 0, decisions = 0, undecided = 0, unchanged = 0;
  long compare_py_flags = 0;                 // compare.py's rule, same draws
  std::map<std::string, std::pair<long, long>> by_band;  // noise band -> (caught, decisions)
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
  return {{"gates", t.gates},
          {"gates_with_a_regression", t.gates_with_regression},
          {"gate_regression_rate", rate(t.gates_with_regression, t.gates)},
          {"regression_verdicts", t.regressions},
          {"benchmark_decisions", t.decisions},
          {"regression_rate", rate(t.regressions, t.decisions)},
          {"undecided_rate", rate(t.undecided, t.decisions)},
          {"unchanged_rate", rate(t.unchanged, t.decisions)},
          {"by_noise", bands},
          {"compare_py_flags", t.compare_py_flags},
          {"compare_py_flag_rate", rate(t.compare_py_flags, t.decisions)}};
}

// `ab` of a build against itself, and against itself with 5 % planted work, in both pairings:
// the noise of the comparison (median standard error of the log change), whole-gate A/A false
// regressions and the planted change's detection, per pairing.
int pairing_study(const SelftestArgs& args, const std::vector<ExperimentEntry>& experiments, const RunOptions& profile,
                  const Environment& env) {
  GateOptions gate = args.gate.options;
  gate.force = true;
  gate.undecided = "pass";
  nlohmann::json result;
  result["machine"] = {{"cpu_model", env.fingerprint.value("cpu_model", "")}, {"cpu_count", env.fingerprint.value("cpu_count", 0)}};
  result["processes_per_side"] = profile.repetitions;
  std::printf("\npairbench selftest --pairing-study: %d processes per side, on %s\n", profile.repetitions,
              env.fingerprint.value("cpu_model", "").c_str());
  for (const std::string pairing : {"sequential", "duet"}) {
    for (const bool planted : {false, true}) {
      RunOptions o = profile;
      o.progress_tty = false;
      o.instruction_processes = 0;
      o.pairing = pairing;
      std::vector<Side> sides = {Side{"A", experiments, {}, {}, {}}, Side{planted ? "A+5%" : "A'", experiments, {}, {}, {}}};
      if (planted) {
        for (const auto& e : experiments) {
          for (const auto& b : e.benchmarks) sides[1].benchmark_env[b.name]["PAIRBENCH_INJECT_SLOWDOWN_PCT"] = "5";
        }
      }
      std::cerr << "selftest: ab " << pairing << (planted ? ", 5 % planted" : ", A/A") << "\n";
      const auto t0 = Clock::now();
      const AbResult r = run_ab(sides, {env, env}, o, "selftest --pairing-study");
      const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
      const GateReport report = compare_runs(r.baseline, r.candidate, gate, "A", sides[1].name);
      std::vector<double> se;
      for (const auto& v : report.rows) {
        if (v.instrument == "time" && v.se > 0 && std::isfinite(v.se)) se.push_back(v.se);
      }
      const std::string key = std::string(planted ? "planted_5pct" : "aa");
      result[pairing][key] = {{"regressions", report.count("regression")},
                              {"unchanged", report.count("unchanged")},
                              {"undecided", report.count("undecided")},
                              {"benchmarks", report.rows.size()},
                              {"median_se_of_log_change", se.empty() ? 0.0 : stats::median(se)},
                              {"wall_s", wall},
                              {"headline", report.headline()}};
      std::printf("  %-10s %-12s %s; median SE of the change %.2f%%; %.0f s\n", pairing.c_str(),
                  planted ? "planted 5%:" : "A/A:", report.headline().c_str(), se.empty() ? 0.0 : 100 * stats::median(se),
                  wall);
    }
  }
  if (!args.out.empty()) {
    write_json_atomically(args.out, result);
    std::printf("wrote %s\n", args.out.c_str());
  }
  return kExitOk;
}

}  // namespace

int cmd_selftest(const SelftestArgs& args, const std::string& bench_dir) {
  RunArgs run_args;
  run_args.profile = args.profile;
  run_args.repetitions = args.repetitions;
  run_args.min_time_s = args.min_time_s;
  const Environment env = capture_environment(PAIRBENCH_SOURCE_DIR);
  const RunOptions profile = run_options(run_args, env.fingerprint.value("machine_key", ""));
  const int n = profile.repetitions;
  const int ni = std::max(2, args.instruction_processes);
  const auto experiments = select_experiments(load_catalogue(find_bench_binaries(bench_dir), args.profile),
                                              args.experiments.empty() ? "dispatch,alloc,copy,data,ops,precision"
                                                                       : args.experiments,
                                              args.arms);
  if (args.pairing_study) return pairing_study(args, experiments, profile, env);
  GateOptions gate = args.gate.options;
  gate.force = true;
  gate.undecided = "pass";
  const auto start = Clock::now();

  // Run X: the baseline's processes.
  RunOptions ox = profile;
  ox.progress_tty = false;
  ox.repetitions = 2 * n;
  ox.instruction_processes = ni + 1;
  std::cerr << "selftest: run X, " << ox.repetitions << " processes per benchmark\n";
  const RunOutcome x = run_sides({Side{"X", experiments, {}, {}, {}}}, ox);
  const Pool px = pool_of(x.samples, 0);

  // Run Y: A' and three planted sides. Time: work worth L % of each region's time. Instructions:
  // L % of X's count per iteration, as whole work loops of kInjectedInstructionsPerLoop.
  const std::vector<double> levels = {2, 5, 10};
  std::vector<Side> sides = {Side{"A'", experiments, {}, {}, {}}};
  for (double level : levels) {
    Side s{"planted " + std::to_string(static_cast<int>(level)) + "%", experiments, {}, {}, {}};
    for (const auto& e : experiments) {
      for (const auto& b : e.benchmarks) s.benchmark_env[b.name]["PAIRBENCH_INJECT_SLOWDOWN_PCT"] = std::to_string(level);
    }
    for (const auto& [name, samples] : px.instructions) {
      std::vector<double> counts;
      for (const auto& smp : samples) counts.push_back(smp.metric_value);
      const double loops = level / 100 * stats::median(counts) / kInjectedInstructionsPerLoop;
      char v[64];
      std::snprintf(v, sizeof v, "%.6f", loops);
      s.instruction_env[name]["PAIRBENCH_INJECT_LOOPS"] = v;
    }
    sides.push_back(std::move(s));
  }
  RunOptions oy = ox;
  oy.instruction_processes = ni;
  oy.pairing = "sequential";
  std::cerr << "selftest: run Y, " << oy.repetitions << " processes per benchmark and side, 4 sides\n";
  const RunOutcome y = run_sides(sides, oy);

  // Noise per benchmark, from X: the band its detections are counted in.
  std::map<std::string, double> noise;
  for (const auto& [name, samples] : px.time) {
    std::vector<double> v;
    for (const auto& s : samples) v.push_back(std::log(process_value(s)));
    noise[name] = v.size() > 1 ? stats::kMadToSigma * stats::mad(v) : 0;
  }
  // Seconds of processes behind one decision: n per side, each side's mean process wall time.
  auto mean_wall = [](const std::map<std::string, std::vector<Sample>>& by) {
    double sum = 0;
    long count = 0;
    for (const auto& [name, samples] : by) {
      for (const auto& s : samples) sum += s.process_wall_s, ++count;
    }
    return count ? sum / static_cast<double>(count) : 0.0;
  };

  std::mt19937_64 rng(args.seed ? args.seed : 20261124);
  const int aa_draws = args.trials, planted_draws = std::max(1, args.trials / 2);
  std::map<std::string, std::map<std::string, Tally>> tallies;  // instrument -> kind -> tally
  RunOutcome dummy;
  auto doc_of = [&](const std::vector<Sample>& samples) {
    return build_run_doc(experiments, samples, profile, dummy, env, "selftest", "selftest", 0);
  };
  for (std::size_t s = 0; s < sides.size(); ++s) {
    const Pool py = pool_of(y.samples, static_cast<int>(s));
    const std::string kind = s == 0 ? "aa" : "planted_" + std::to_string(static_cast<int>(levels[s - 1])) + "pct";
    const int draws = s == 0 ? aa_draws : planted_draws;
    for (int d = 0; d < draws; ++d) {
      const auto base = doc_of(draw(px, n, ni, rng)), cur = doc_of(draw(py, n, ni, rng));
      const GateReport report = compare_runs(base, cur, gate, "X", sides[s].name);
      std::map<std::string, bool> gate_regressed;
      for (const auto& v : report.rows) {
        if (v.baseline_samples == 0 || v.current_samples == 0) continue;
        Tally& t = tallies[v.instrument][kind];
        ++t.decisions;
        t.regressions += v.verdict == "regression";
        t.undecided += v.verdict == "undecided";
        t.unchanged += v.verdict == "unchanged";
        gate_regressed[v.instrument] = gate_regressed[v.instrument] || v.verdict == "regression";
        auto& band = t.by_band[v.instrument == "time" ? noise_band(noise[v.benchmark]) : "instructions"];
        band.first += v.verdict == "regression";
        ++band.second;
      }
      for (auto& [instrument, by_kind] : tallies) {
        Tally& t = by_kind[kind];
        ++t.gates;
        t.gates_with_regression += gate_regressed[instrument];
      }
      // compare.py's rule on the same draws: U test on the process values, p < 0.05, uncorrected,
      // counted as a slowdown flag when the median moved the worse way.
      std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> values;
      std::map<std::string, std::string> better;
      for (const auto& e : base["pairbench"]["experiments"]) better[e["name"]] = e["better"];
      for (const auto* doc : {&base, &cur}) {
        for (const auto& b : (*doc)["benchmarks"]) {
          auto& pair = values[b["name"]];
          const auto batches = b.value("metric_batches", std::vector<double>{});
          const double v = batches.size() >= 3 ? stats::median(batches) : b["metric_value"].get<double>();
          (doc == &base ? pair.first : pair.second).push_back(v);
          better[b["name"]] = better[b["experiment"]];
        }
      }
      for (const auto& [name, pair] : values) {
        if (pair.first.size() < 2 || pair.second.size() < 2) continue;
        const bool worse = better[name] == "higher" ? stats::median(pair.second) < stats::median(pair.first)
                                                    : stats::median(pair.second) > stats::median(pair.first);
        tallies["time"][kind].compare_py_flags += worse && stats::mann_whitney_p_two_sided(pair.first, pair.second) < 0.05;
      }
    }
  }
  // What was planted, as measured: per level, the median over benchmarks of the planted side's
  // median process value against A' (time: + = worse), and the same for instruction counts.
  nlohmann::json realised = nlohmann::json::object();
  const Pool pa = pool_of(y.samples, 0);
  std::map<std::string, std::string> better_of;
  for (const auto& e : experiments) {
    for (const auto& b : e.benchmarks) better_of[b.name] = e.better;
  }
  for (std::size_t s = 1; s < sides.size(); ++s) {
    const Pool pp = pool_of(y.samples, static_cast<int>(s));
    for (const bool instructions : {false, true}) {
      const auto& a_by = instructions ? pa.instructions : pa.time;
      const auto& p_by = instructions ? pp.instructions : pp.time;
      std::vector<double> changes;
      for (const auto& [name, planted] : p_by) {
        const auto it = a_by.find(name);
        if (it == a_by.end() || planted.empty() || it->second.empty()) continue;
        std::vector<double> a, p;
        for (const auto& smp : it->second) a.push_back(instructions ? smp.metric_value : process_value(smp));
        for (const auto& smp : planted) p.push_back(instructions ? smp.metric_value : process_value(smp));
        double ratio = stats::median(p) / stats::median(a);
        if (!instructions && better_of[name] == "higher") ratio = 1 / ratio;
        changes.push_back(ratio - 1);
      }
      if (!changes.empty()) {
        realised[instructions ? "instructions" : "time"][sides[s].name] = {
            {"median", stats::median(changes)}, {"q25", stats::quantile(changes, 0.25)}, {"q75", stats::quantile(changes, 0.75)}};
      }
    }
  }
  const nlohmann::json speed = time_history_and_gate(1000, 300, 9);

  nlohmann::json result;
  result["machine"] = {{"cpu_model", env.fingerprint.value("cpu_model", "")},
                       {"cpu_count", env.fingerprint.value("cpu_count", 0)},
                       {"machine_key", env.fingerprint.value("machine_key", "")}};
  result["profile"] = args.profile;
  result["processes_per_side"] = n;
  result["instruction_processes_per_side"] = ni;
  result["benchmarks"] = noise.size();
  result["draws"] = {{"aa", aa_draws}, {"planted", planted_draws}};
  result["gate"] = {{"threshold", gate.threshold}, {"instructions_threshold", gate.instructions_threshold},
                    {"alpha", gate.alpha}, {"correction", gate.correction}, {"moderation", gate.moderation}};
  result["instruction_counter"] = x.instruction_counter.name.empty() ? "none" : x.instruction_counter.name;
  result["instruction_counter_note"] = x.instruction_counter.reason;
  std::vector<double> bands_cv;
  for (const auto& [name, cv] : noise) bands_cv.push_back(cv);
  result["time_noise_median"] = bands_cv.empty() ? 0.0 : stats::median(bands_cv);
  for (const auto& [instrument, by_kind] : tallies) {
    for (const auto& [kind, t] : by_kind) result["results"][instrument][kind] = tally_json(t);
  }
  result["seconds_per_decision"] = {{"time", n * (mean_wall(px.time) + mean_wall(pool_of(y.samples, 0).time))},
                                    {"instructions", ni * (mean_wall(px.instructions) +
                                                           mean_wall(pool_of(y.samples, 0).instructions))}};
  result["planted_as_measured"] = realised;
  result["history_and_gate_speed"] = speed;
  result["wall_s"] = std::chrono::duration<double>(Clock::now() - start).count();
  result["note"] =
      "Gates are drawn from real processes: baseline from run X, current from run Y (taken later), "
      "n processes per side, without replacement within a draw; draws share processes, so the rates "
      "are resampling estimates from this one pair of runs.";

  std::printf("\npairbench selftest: %s profile, %d processes per side (%d counting processes), %zu benchmarks, on %s\n",
              args.profile.c_str(), n, ni, noise.size(), env.fingerprint.value("cpu_model", "").c_str());
  for (const auto& [instrument, by_kind] : tallies) {
    const auto& aa = by_kind.at("aa");
    std::printf("  %s: A/A whole-gate false regressions %d of %d gates (%.1f%%, goal <= 1%%)\n", instrument.c_str(),
                aa.gates_with_regression, aa.gates, 100 * rate(aa.gates_with_regression, aa.gates));
    for (double level : levels) {
      const std::string kind = "planted_" + std::to_string(static_cast<int>(level)) + "pct";
      if (!by_kind.count(kind)) continue;
      const Tally& t = by_kind.at(kind);
      std::printf("    planted %2.0f%%: caught %.1f%% of decisions", level, 100 * rate(t.regressions, t.decisions));
      for (const auto& [band, cd] : t.by_band) std::printf("; %s %.1f%%", band.c_str(), 100 * rate(cd.first, cd.second));
      if (instrument == "time") std::printf("; compare.py %.1f%%", 100 * rate(t.compare_py_flags, t.decisions));
      std::printf("\n");
    }
    if (instrument == "time") {
      std::printf("    compare.py rule on A/A: %.2f false flags per gate\n", rate(aa.compare_py_flags, aa.gates));
    }
  }
  for (const auto& [instrument, by_side] : realised.items()) {
    std::printf("  planted, as measured (%s):", instrument.c_str());
    for (const auto& [side, q] : by_side.items()) std::printf(" %s %+.1f%%;", side.c_str(), 100 * q["median"].get<double>());
    std::printf("\n");
  }
  std::printf("  seconds of processes per decision: time %.2f s, instructions %.2f s\n",
              result["seconds_per_decision"]["time"].get<double>(), result["seconds_per_decision"]["instructions"].get<double>());
  std::printf("  history over %d runs x %d benchmarks: %.2f s; gate: %.3f s\n", speed["runs"].get<int>(),
              speed["benchmarks"].get<int>(), speed["history_s"].get<double>(), speed["gate_s"].get<double>());
  if (!args.out.empty()) {
    write_json_atomically(args.out, result);
    std::printf("wrote %s\n", args.out.c_str());
  }
  return kExitOk;
}

}  // namespace pairbench::harness
