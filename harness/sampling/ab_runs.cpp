// `ab`'s runs of two sides (ab_runs.h).
#include "harness/sampling/ab_runs.h"

#include <algorithm>
#include <cstdio>

#include "harness/exec/interrupt.h"
#include "harness/exec/say.h"
#include "kernels/common/cpus.h"

namespace pairbench::harness {

AbResult run_ab(const std::vector<Side>& sides, const std::vector<Environment>& envs, const RunOptions& options,
                const std::string& command) {
  const std::string started = utc_stamp("%Y-%m-%dT%H:%M:%SZ");
  const RunOutcome outcome = run_sides(sides, options);
  AbResult r{build_run_doc(sides[0].experiments, outcome.samples, options, outcome, envs[0], started, command, 0,
                           kAbCalibrationLimit),
             build_run_doc(sides[1].experiments, outcome.samples, options, outcome, envs[1], started, command, 1,
                           kAbCalibrationLimit),
             outcome.sequential_in_duet,
             {calibration_check(outcome, 0, kAbCalibrationLimit), calibration_check(outcome, 1, kAbCalibrationLimit)},
             outcome.calibration_ratios};
  // The two halves of one run: the gate may compare duet pairs pair by pair only between these.
  char id[40];
  std::snprintf(id, sizeof id, "%016llx", static_cast<unsigned long long>(outcome.seed));
  for (auto* doc : {&r.baseline, &r.candidate}) (*doc)["pairbench"]["ab_run_id"] = std::string(id) + "-" + started;
  r.baseline["pairbench"]["ab_side"] = sides[0].name;
  r.candidate["pairbench"]["ab_side"] = sides[1].name;
  return r;
}

// Appends a round's processes to the run file of its side: repetitions and duet pairs renumbered
// after those already there, so that every process keeps its own place and its pair.
void append_round(nlohmann::json& doc, const nlohmann::json& round) {
  std::map<std::string, int> repetitions;
  int pair_base = 0;
  for (const auto& b : doc["benchmarks"]) {
    repetitions[b["name"]] = std::max(repetitions[b["name"]], b.value("repetition_index", 0) + 1);
    if (b.contains("duet_pair")) pair_base = std::max(pair_base, b["duet_pair"].get<int>() + 1);
  }
  for (nlohmann::json b : round["benchmarks"]) {
    b["repetition_index"] = repetitions[b["name"]] + b.value("repetition_index", 0);
    if (b.contains("duet_pair")) b["duet_pair"] = pair_base + b["duet_pair"].get<int>();
    doc["benchmarks"].push_back(b);
  }
  for (const auto& n : round["pairbench"]["not_run"]) doc["pairbench"]["not_run"].push_back(n);
}

std::set<std::string> regime_outliers(const AbResult& r) {
  std::set<std::string> alone, out;
  for (const SequentialInDuet& q : r.sequential_in_duet) alone.insert(q.benchmark);
  for (const RunRecord::CalibrationCheck& check : r.against_calibration) {
    for (const auto& c : check.over) {
      if (!alone.count(c.name)) out.insert(c.name);
    }
  }
  return out;
}

void replace_processes(AbResult& r, const AbResult& again, const std::set<std::string>& names) {
  auto named = [&](const nlohmann::json& row) { return names.count(row.value("name", "")) > 0; };
  std::erase_if(r.ratios, [&](const CalibrationRatio& c) { return names.count(c.benchmark) > 0; });
  for (const CalibrationRatio& c : again.ratios) {
    if (names.count(c.benchmark)) r.ratios.push_back(c);
  }
  RunOutcome merged;
  merged.calibration_ratios = r.ratios;
  int side = 0;
  for (auto [doc, more] : {std::pair{&r.baseline, &again.baseline}, {&r.candidate, &again.candidate}}) {
    nlohmann::json& pb = (*doc)["pairbench"];
    // Every timed process of theirs, kept or failed, goes; their counting processes (not timed, so
    // not of a regime) stay, and `again` counted none.
    nlohmann::json& rows = (*doc)["benchmarks"];
    for (auto it = rows.begin(); it != rows.end();) it = named(*it) ? rows.erase(it) : it + 1;
    if (pb.contains("not_run")) {
      nlohmann::json& failed = pb["not_run"];
      for (auto it = failed.begin(); it != failed.end();) {
        it = named(*it) && it->value("instrument", "time") != "instructions" ? failed.erase(it) : it + 1;
      }
    }
    append_round(*doc, *more);
    nlohmann::json& sampling = pb["sampling"];
    for (const auto& q : (*more)["pairbench"]["sampling"].value("sequential_in_duet", nlohmann::json::array())) {
      if (named(q)) sampling["sequential_in_duet"].push_back(q);
    }
    if (side < static_cast<int>(r.against_calibration.size())) {
      RunRecord::CalibrationCheck& check = r.against_calibration[side];
      check = calibration_check(merged, side, check.limit);
      sampling["against_calibration"] = calibration_check_json(check);
    }
    ++side;
  }
  for (const SequentialInDuet& q : again.sequential_in_duet) {
    if (names.count(q.benchmark)) r.sequential_in_duet.push_back(q);
  }
}

namespace {

std::string fixed2(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", x);
  return buf;
}

// What a ratio was taken against: `run`'s own processes where runs here taught it, else the ramp.
const char* reference_text(bool against_run) {
  return against_run ? "time per iteration in run" : "calibrated time per iteration";
}

}  // namespace

void report_regime(const AbResult& r, const std::vector<Side>& sides) {
  if (!r.sequential_in_duet.empty()) {
    std::map<std::string, int> by_reason;
    for (const auto& q : r.sequential_in_duet) ++by_reason[q.reason];
    std::string why;
    for (const auto& [reason, n] : by_reason)
      why += (why.empty() ? "" : "; ") + reason + " (" + std::to_string(n) + ")";
    say() << "pairbench: " << r.sequential_in_duet.size() << " benchmark"
          << (r.sequential_in_duet.size() == 1 ? "" : "s")
          << " ran their two sides one after the other, not in duet pairs: " << why
          << " (sampling.sequential_in_duet in the run files)\n";
  }
  for (std::size_t side = 0; side < r.against_calibration.size(); ++side) {
    const RunRecord::CalibrationCheck& check = r.against_calibration[side];
    for (const auto& c : check.over) {
      sayf(Verbosity::normal, "pairbench: %s (%s) ran %.2fx its %s (limit %.1fx%s)\n", c.name.c_str(),
           sides[side].name.c_str(), c.ratio, reference_text(c.against_run), check.limit,
           c.run_spread > check.limit ? (", its own runs here up to " + fixed2(c.run_spread) + "x").c_str() : "");
    }
    if (check.max) {
      sayf(Verbosity::normal,
           "pairbench: %s: %zu benchmark%s above %.1fx their time per iteration in run (else calibrated) and "
           "above their own runs' spread; highest ratio %.2fx (%s, against its %s%s)\n",
           sides[side].name.c_str(), check.over.size(), check.over.size() == 1 ? "" : "s", check.limit,
           check.max->ratio, check.max->name.c_str(), reference_text(check.max->against_run),
           check.max->run_spread > 0 ? (", its own runs up to " + fixed2(check.max->run_spread) + "x").c_str() : "");
    }
  }
}

// `sides` with only the benchmarks named.
std::vector<Side> only(const std::vector<Side>& sides, const std::set<std::string>& benchmarks) {
  std::vector<Side> out = sides;
  for (Side& side : out) {
    for (auto& e : side.experiments) {
      std::erase_if(e.benchmarks, [&](const BenchmarkEntry& b) { return !benchmarks.count(b.name); });
    }
    std::erase_if(side.experiments, [](const ExperimentEntry& e) { return e.benchmarks.empty(); });
  }
  return out;
}

namespace {

// The benchmarks a duet run would pair (round_units_of's rule, before any probe): on both sides,
// not on the CUDA device, their threads fitting twice on the pool.
std::set<std::string> duet_pairable(const std::vector<Side>& sides, const RunOptions& options) {
  const std::size_t pool =
      options.duet_cpu_pool.empty() ? kernels::usable_cpu_list().size() : options.duet_cpu_pool.size();
  std::map<std::string, std::vector<const BenchmarkEntry*>> by_name;
  for (const Side& side : sides) {
    for (const auto& e : side.experiments) {
      for (const auto& b : e.benchmarks) by_name[b.name].push_back(&b);
    }
  }
  std::set<std::string> out;
  for (const auto& [name, entries] : by_name) {
    if (entries.size() != sides.size()) continue;  // on one side only: nothing to pair
    int threads = 1;
    bool cuda = false;
    for (const BenchmarkEntry* b : entries) threads = std::max(threads, b->threads), cuda = cuda || b->cuda;
    if (!cuda && 2 * static_cast<std::size_t>(threads) <= pool) out.insert(name);
  }
  return out;
}

}  // namespace

DuetProbePlan plan_duet_probe(const std::set<std::string>& pairable, const CalibrationCache& cache, std::time_t now) {
  DuetProbePlan plan;
  for (const std::string& name : pairable) {
    const ProcessWalls* w = cache.walls(name);
    if (w == nullptr || !w->duet_probe || !(age_days(w->duet_probe->at, now) < kDuetProbeDays)) {
      plan.to_probe.insert(name);
    } else if (w->duet_probe->apart) {
      plan.known_apart.emplace(name, w->duet_probe->why + " (its probe here at " + w->duet_probe->at + ")");
    } else {
      plan.known_together.insert(name);
    }
  }
  return plan;
}

DuetProbePlan plan_duet_probe(const std::vector<Side>& sides, const RunOptions& options) {
  return plan_duet_probe(duet_pairable(sides, options), CalibrationCache(options.calibration_path), std::time(nullptr));
}

std::string probe_skip_reason(const RunPlan& with_probe, std::size_t probed, double budget_s) {
  if (probed == 0 || !(budget_s > 0)) return "";
  char why[200];
  if (with_probe.unknown > 0) {
    std::snprintf(why, sizeof why, "%d of the %zu benchmarks have not run here, so what it would add is not known",
                  with_probe.unknown, with_probe.benchmarks.size());
    return why;
  }
  if (with_probe.projected_wall_s > budget_s) {
    std::snprintf(why, sizeof why, "with it the planned look is projected to take %.0f s, past the %.0f s budget",
                  with_probe.projected_wall_s, budget_s);
    return why;
  }
  return "";
}

std::set<std::string> ran_together(const AbResult& r) {
  std::set<std::string> alone, sides[2], out;
  for (const SequentialInDuet& q : r.sequential_in_duet) alone.insert(q.benchmark);
  for (const CalibrationRatio& c : r.ratios) {
    if (c.side == 0 || c.side == 1) sides[c.side].insert(c.benchmark);
  }
  for (const std::string& name : sides[0]) {
    if (sides[1].count(name) && !alone.count(name)) out.insert(name);
  }
  return out;
}

std::map<std::string, std::string> duet_regime_probe(const std::vector<Side>& all_sides,
                                                     const std::vector<Environment>& envs, RunOptions options,
                                                     const std::string& command_line, const std::string& skip) {
  const DuetProbePlan plan = plan_duet_probe(all_sides, options);
  std::map<std::string, std::string> out = plan.known_apart;
  const std::size_t known = plan.known_apart.size() + plan.known_together.size();
  if (known > 0) {
    say() << "ab: duet regime probe: " << known << " benchmarks known from a probe here in the last " << kDuetProbeDays
          << " days (" << plan.known_apart.size() << " run one side at a time)\n";
  }
  if (plan.to_probe.empty()) return out;
  if (!skip.empty()) {
    say() << "ab: duet regime probe of " << plan.to_probe.size() << " benchmark"
          << (plan.to_probe.size() == 1 ? "" : "s") << " skipped: " << skip
          << "; the second look on the planned processes finds their regime\n";
    return out;
  }
  const std::vector<Side> sides = only(all_sides, plan.to_probe);
  options.repetitions = 1;
  options.instruction_processes = 0;  // the probe times; its processes are thrown away
  options.seed = options.seed ? options.seed ^ 0x70726f6265ULL : 0;
  say() << "ab: duet regime probe: one pair of each of the " << plan.to_probe.size()
        << " benchmarks a duet pairs, not counted\n";
  const AbResult probe = run_ab(sides, envs, options, command_line);
  for (const RunRecord::CalibrationCheck& check : probe.against_calibration) {
    for (const auto& c : check.over) {
      char why[160];
      std::snprintf(why, sizeof why, "a duet probe ran it above %.1fx its %s", check.limit,
                    reference_text(c.against_run));
      sayf(Verbosity::normal,
           "ab: duet regime probe: %s ran %.2fx its %s beside the other side: its sides run one at a "
           "time\n",
           c.name.c_str(), c.ratio, reference_text(c.against_run));
      out.emplace(c.name, why);
    }
  }
  if (interrupt_signal()) return out;
  // Kept for the next ab here: a benchmark probed on both sides (both have a ratio), with what it showed.
  std::map<std::string, int> sides_seen;
  for (const CalibrationRatio& r : probe.ratios) ++sides_seen[r.benchmark];
  CalibrationCache cache(options.calibration_path);  // as the probe's run left it
  for (const auto& [name, seen] : sides_seen) {
    if (seen < 2 || !plan.to_probe.count(name)) continue;
    const auto apart = out.find(name);
    cache.record_duet_probe(name, apart != out.end(), apart != out.end() ? apart->second : "");
  }
  if (const std::string problem = cache.save(); !problem.empty())
    say(Verbosity::quiet) << "pairbench: warning: the regime probe was not kept: " << problem << "\n";
  return out;
}

void recheck_regime(AbResult& r, const std::vector<Side>& sides, const std::vector<Environment>& envs,
                    RunOptions& counted, const std::string& command_line) {
  const std::set<std::string> again = regime_outliers(r);
  if (interrupt_signal()) return;
  for (const std::string& name : again) {
    counted.one_side_at_a_time[name] = "its planned duet processes ran above 1.5x its time per iteration in run";
    sayf(Verbosity::normal,
         "ab: regime: %s ran above %.1fx its time per iteration in run over its planned duet pairs: "
         "measured again one side at a time, its duet processes dropped\n",
         name.c_str(), kAbCalibrationLimit);
  }
  // Kept for the next ab here: those measured again run one side at a time, the rest together.
  CalibrationCache cache(counted.calibration_path);
  for (const std::string& name : ran_together(r)) {
    const bool apart = again.count(name) > 0;
    cache.record_duet_probe(name, apart, apart ? counted.one_side_at_a_time[name] : "");
  }
  if (const std::string problem = cache.save(); !problem.empty())
    say(Verbosity::quiet) << "pairbench: warning: the regime found was not kept: " << problem << "\n";
  if (again.empty()) return;
  RunOptions options = counted;
  options.instruction_processes = 0;  // the counts are not of a regime: the planned ones stay
  options.seed = options.seed ? options.seed ^ 0x726567696d65ULL : 0;
  const AbResult alone = run_ab(only(sides, again), envs, options, command_line);
  if (interrupt_signal()) return;  // cut short: the duet processes stay, and the check names them
  replace_processes(r, alone, again);
}

}  // namespace pairbench::harness
