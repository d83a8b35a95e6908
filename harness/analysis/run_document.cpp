// Run files from samples, and claims for old run files (run_document.h).
#include "harness/analysis/run_document.h"

#include <algorithm>
#include <map>

#include "harness/exec/interrupt.h"
#include "harness/exec/say.h"

namespace pairbench::harness {

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
