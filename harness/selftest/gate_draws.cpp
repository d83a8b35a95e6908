// The self-test's studies of the gate on drawn run files (gate_draws.h).
#include "harness/selftest/gate_draws.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <numeric>

#include "harness/stats/stats.h"
#include "harness/store/run_file.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

namespace {

std::string noise_band(double cv) {
  if (cv <= 0.03) return "noise <= 3%";
  if (cv <= 0.10) return "noise 3-10%";
  return "noise > 10%";
}

double rate(long a, long b) { return b ? static_cast<double>(a) / static_cast<double>(b) : 0.0; }

}  // namespace

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

SelftestRuns read_selftest_runs(const std::string& dir) {
  SelftestRuns s;
  for (int k = 1;; ++k) {
    if (!fs::exists(selftest_run_path(dir, "A" + std::to_string(k)))) break;
    s.a_runs.push_back(read_run_file(selftest_run_path(dir, "A" + std::to_string(k))));
  }
  if (s.a_runs.size() < 2)
    throw SelftestInputError(dir + ": needs runs A1 and A2 (run pairbench selftest without --from first)");
  s.a_runs.push_back(read_run_file(selftest_run_path(dir, "Y-A'")));  // A' is one more run of the same build
  for (int level : kPlantedLevels)
    s.planted[level] = read_run_file(selftest_run_path(dir, "Y-planted" + std::to_string(level)));
  for (const auto& d : s.a_runs) s.a_pools.push_back(pool_of(d));
  return s;
}

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

SelftestTallies draw_gates(int trials, std::uint64_t seed, const SelftestRuns& s, const SelftestGates& g,
                           const std::map<std::string, double>& noise, int n, int ni) {
  std::mt19937_64 rng(seed ? seed : 20261124);
  SelftestTallies t;
  auto& tallies = t.by_instrument;
  const std::size_t runs = s.a_runs.size();
  for (int d = 0; d < trials; ++d) {
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
    for (int d = 0; d < std::max(1, trials / 2); ++d) {
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

nlohmann::json draws_result(const SelftestRuns& runs, const SelftestGates& gates, const SelftestTallies& tallies,
                            const std::map<std::string, double>& noise, const DrawsContext& c) {
  const GateOptions& gate = gates.gate;
  std::vector<double> noises, run_noises;
  for (const auto& [name, cv] : noise) noises.push_back(cv);
  for (const auto& [name, v] : gate.run_variance) run_noises.push_back(std::sqrt(v));

  nlohmann::json result;
  result["machine"] = {{"cpu_model", c.env.fingerprint.value("cpu_model", "")},
                       {"cpu_count", c.env.fingerprint.value("cpu_count", 0)},
                       {"machine_key", c.env.fingerprint.value("machine_key", "")}};
  result["runs"] = {
      {"directory", c.dir}, {"same_build_runs", runs.a_runs.size()}, {"planted_levels_pct", kPlantedLevels}};
  result["profile"] = c.profile;
  result["processes_per_side"] = c.n;
  result["instruction_processes_per_side"] = c.ni;
  result["benchmarks"] = noise.size();
  result["draws"] = {{"aa", c.trials}, {"planted", std::max(1, c.trials / 2)}};
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
  result["seconds_per_decision"] = {{"time", 2 * c.n * mean_wall(runs.a_pools, false)},
                                    {"instructions", 2 * c.ni * mean_wall(runs.a_pools, true)}};
  result["note"] =
      "Gates are drawn from real processes: for A/A, n processes of one run and n of another run of the same "
      "build (runs A1.. and Y's A'); for detection, a baseline run against Y's planted side. Draws share "
      "processes, so the rates are resampling estimates from these runs.";
  return result;
}

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

}  // namespace pairbench::harness
