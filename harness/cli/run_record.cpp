// The profile's sampling, a run file from one side's samples, and claims for old run files.
#include "harness/cli/run_record.h"
#include "harness/exec/say.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <set>

#include "harness/analysis/claims.h"
#include "harness/analysis/summary.h"
#include "harness/exec/interrupt.h"
#include "harness/store/run_file.h"

namespace pairbench::harness {

RunOptions run_options(const RunArgs& args, const std::string& machine_key) {
  RunOptions options;
  options.profile = args.profile;
  // Processes are the unit of independence; in-process batches catch what varies inside one.
  // Measured time per process: quick 5 x 2 ms, nightly 10 x 5 ms, full 10 x 20 ms. On the 2-vCPU
  // VMs the process-to-process noise (median robust CV ~7-9 %) dwarfs the in-process noise
  // (~2 % at 2-4 ms batches): more processes buy more than longer ones. Instruction counts:
  // nightly and full (quick keeps the main job short; ci/pr.sh asks for them).
  if (args.profile == "quick") {
    options.repetitions = 4, options.plan = {5, 0.002, 0.25}, options.instruction_processes = 0, options.timeout_s = 60;
  } else if (args.profile == "nightly") {
    options.repetitions = 9, options.plan = {10, 0.005, 1.0}, options.instruction_processes = 3,
    options.timeout_s = 300;
    // The time budget (docs/gate.md, "Time budget"): a benchmark whose processes take longer
    // than budget / 9 gets fewer of them (at least 4, the quick profile's count), and one whose
    // simulated counting processes take longer than budget / 3, 2 of them.
    options.process_budget_s = kNightlyProcessBudgetS, options.instruction_budget_s = kNightlyInstructionBudgetS;
  } else {
    options.repetitions = 15, options.plan = {10, 0.02, 3.0}, options.instruction_processes = 3,
    options.timeout_s = 600;
  }
  // A count on the command line is that count for every benchmark: no budget cuts it.
  if (args.repetitions > 0) options.repetitions = args.repetitions, options.process_budget_s = 0;
  if (args.process_budget_s >= 0) options.process_budget_s = args.process_budget_s;
  if (args.batches > 0) options.plan.batches = args.batches;
  if (args.min_time_s > 0) options.plan.sample_time_s = args.min_time_s / options.plan.batches;
  options.plan.max_loop_wall_s =
      std::max(options.plan.max_loop_wall_s, 4 * options.plan.batches * options.plan.sample_time_s);
  if (args.instruction_processes >= 0)
    options.instruction_processes = args.instruction_processes, options.instruction_budget_s = 0;
  if (args.instruction_budget_s >= 0) options.instruction_budget_s = args.instruction_budget_s;
  if (args.timeout_s > 0) options.timeout_s = args.timeout_s;
  options.instruction_counter = args.instruction_counter;
  if (args.instruction_counter == "none") options.instruction_processes = 0;
  options.seed = args.seed;
  options.progress_tty = isatty(STDERR_FILENO);
  if (args.calibration == "auto") {
    options.calibration_path = machine_key.empty() ? "" : "results/calibration/" + machine_key + ".json";
  } else if (args.calibration != "none") {
    options.calibration_path = args.calibration;
  }
  options.recalibrate = args.recalibrate;
  options.pairing = args.pairing;
  options.share_processes = args.process_sharing == "experiment";
  return options;
}

WallFit fit_wall_budget(double process_budget_s, double instruction_budget_s, double wall_budget_s,
                        const std::function<double(double, double)>& projected) {
  WallFit fit{process_budget_s, instruction_budget_s, projected(process_budget_s, instruction_budget_s), false, true};
  if (wall_budget_s <= 0 || fit.projected_s <= wall_budget_s) return fit;
  // The largest budget in [kSmallestBudgetS, from] whose projection fits, the other held: the
  // projection falls as a budget falls (fewer processes, never more), so bisection finds it.
  auto largest_fitting = [&](double from, auto at) {
    if (at(kSmallestBudgetS) > wall_budget_s) return kSmallestBudgetS;
    double lo = kSmallestBudgetS, hi = from;
    while (hi - lo > 0.02 * hi) {
      const double mid = 0.5 * (lo + hi);
      (at(mid) <= wall_budget_s ? lo : hi) = mid;
    }
    return lo;
  };
  if (instruction_budget_s > 0) {
    fit.instruction_budget_s =
        largest_fitting(instruction_budget_s, [&](double b) { return projected(process_budget_s, b); });
  }
  if (process_budget_s > 0 && projected(process_budget_s, fit.instruction_budget_s) > wall_budget_s) {
    fit.process_budget_s =
        largest_fitting(process_budget_s, [&](double b) { return projected(b, fit.instruction_budget_s); });
  }
  fit.projected_s = projected(fit.process_budget_s, fit.instruction_budget_s);
  fit.fits = fit.projected_s <= wall_budget_s;
  fit.lowered = fit.process_budget_s != process_budget_s || fit.instruction_budget_s != instruction_budget_s;
  return fit;
}

RunDocument build_run_document(const std::vector<ExperimentEntry>& experiments, const std::vector<Sample>& all_samples,
                               const RunOptions& options, const RunOutcome& outcome, const Environment& env,
                               const std::string& started, const std::string& command, int side,
                               double calibration_limit) {
  RunRecord r;
  for (const Sample& s : all_samples) {
    if (s.side == side) r.samples.push_back(s);
  }
  r.started_at = started;
  r.command = command;
  r.profile = options.profile;
  r.repetitions = options.repetitions;
  r.batches = options.plan.batches;
  r.sample_time_s = options.plan.sample_time_s;
  r.max_loop_wall_s = options.plan.max_loop_wall_s;
  r.calibration = options.calibration_path.empty() ? "this run only" : options.calibration_path;
  r.calibrated_in_this_run = outcome.calibrated;
  r.drifted_from_calibration = outcome.drifted;
  r.calibration_wall_s = outcome.calibration_wall_s;
  if (outcome.plan.budgeted) {
    const RunPlan& p = outcome.plan;
    RunRecord::ProcessBudget b{p.process_budget_s,
                               p.instruction_budget_s,
                               p.min_repetitions,
                               p.min_instruction_processes,
                               p.cut,
                               p.unknown,
                               p.projected_wall_s,
                               {}};
    for (const BenchmarkPlan& q : p.benchmarks) {
      b.benchmarks.push_back({q.benchmark, q.reason, q.processes, q.profile_processes, q.instruction_processes,
                              q.profile_instruction_processes, q.process_wall_s, q.instruction_wall_s});
    }
    r.process_budget = std::move(b);
  }
  r.pairing = outcome.pairing;
  r.process_sharing = options.share_processes ? "experiment" : "none";
  r.duet_cpus = outcome.duet_cpus;
  for (const SequentialInDuet& q : outcome.sequential_in_duet)
    r.sequential_in_duet.push_back({q.benchmark, q.reason, q.threads});
  if (calibration_limit > 0) r.calibration_check = calibration_check(outcome, side, calibration_limit);
  const bool counting = !outcome.instruction_counter.name.empty();
  r.instruction_processes = counting ? options.instruction_processes : 0;
  r.instruction_counter = counting ? outcome.instruction_counter.name : "none";
  r.instruction_counter_note = outcome.instruction_counter.reason;
  r.instruction_functions =
      function_breakdown_note(counting ? outcome.instruction_counter : InstructionCounterChoice{});
  r.timeout_s = options.timeout_s;
  r.seed = outcome.seed;
  r.wall_s = outcome.wall_s;
  r.environment = env.to_json();
  // The typed summary (harness/analysis/summary.h) and the claims judged on it, each serialised here, once.
  std::vector<ExperimentSummary> summary = summarise_experiments(experiments, r.samples);
  std::vector<ClaimJudgement> claims = judge_claims(builtin_claims(), summary, r.environment);
  r.experiments = experiments_to_json(summary);
  r.claims = claims_to_json(claims);
  r.finished_at = utc_stamp("%Y-%m-%dT%H:%M:%SZ");
  r.run_id = new_run_id();
  if (outcome.interrupted_by) {
    r.interrupted = RunRecord::Interrupted{signal_name(outcome.interrupted_by), outcome.completed_processes,
                                           outcome.planned_processes};
  }
  return {run_document(r), std::move(summary), std::move(claims)};
}

nlohmann::json build_run_doc(const std::vector<ExperimentEntry>& experiments, const std::vector<Sample>& samples,
                             const RunOptions& options, const RunOutcome& outcome, const Environment& env,
                             const std::string& started, const std::string& command, int side,
                             double calibration_limit) {
  return build_run_document(experiments, samples, options, outcome, env, started, command, side, calibration_limit).doc;
}

RunRecord::CalibrationCheck calibration_check(const RunOutcome& outcome, int side, double limit) {
  RunRecord::CalibrationCheck check;
  check.limit = limit;
  for (const CalibrationRatio& c : outcome.calibration_ratios) {
    if (c.side != side) continue;
    const RunRecord::CalibrationRatio r{
        c.benchmark, c.observed_s_per_iteration, c.calibrated_s_per_iteration, c.ratio(), c.against_run, c.run_spread};
    if (!check.max || r.ratio > check.max->ratio) check.max = r;
    // Over the limit, and over what its own runs here do: a benchmark whose `run` medians span 13x
    // from run to run (a spin ping-pong on shared vCPUs) says nothing about ab's regime at 3x.
    if (r.ratio > std::max(limit, r.run_spread)) check.over.push_back(r);
  }
  std::sort(check.over.begin(), check.over.end(), [](const auto& a, const auto& b) { return a.ratio > b.ratio; });
  return check;
}

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

bool ensure_claims(nlohmann::json& doc, const std::string& source, const std::string& bench_dir) {
  nlohmann::json& pb = doc["pairbench"];
  if (pb.contains("claims")) return false;
  bool lacking = false;
  for (const auto& e : pb["experiments"]) lacking = lacking || !e.contains("verdict");
  if (lacking) {
    // Written before experiments carried their checks: this build's declarations supply them.
    std::map<std::string, const ExperimentEntry*> declared;
    std::vector<ExperimentEntry> catalogue;
    try {
      catalogue = load_catalogue(find_bench_binaries(bench_dir), "quick");
    } catch (const std::exception& ex) {
      say(Verbosity::quiet) << "pairbench: warning: " << ex.what()
                            << ": experiments of this run file that carry no checks are judged by the default check\n";
    }
    for (const auto& entry : catalogue) declared[entry.name] = &entry;
    for (auto& e : pb["experiments"]) {
      const auto it = declared.find(e.value("name", ""));
      if (e.contains("verdict") || it == declared.end() || it->second->verdict.empty()) continue;
      e["verdict"] = nlohmann::json::array();
      for (const VerdictCheckEntry& c : it->second->verdict) e["verdict"].push_back(verdict_check_to_json(c));
    }
  }
  pb["claims"] =
      claims_to_json(judge_claims(builtin_claims(), summary_from_json(pb["experiments"], source), pb["environment"]));
  return true;
}

}  // namespace pairbench::harness
