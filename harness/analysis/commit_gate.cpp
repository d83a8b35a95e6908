// One commit gated on every machine of a history (commit_gate.h).
#include "harness/analysis/commit_gate.h"

#include <algorithm>
#include <map>
#include <stdexcept>

#include "harness/analysis/history_views.h"
#include "harness/exec/exit_status.h"

namespace pairbench::harness {

std::vector<CommitGateRow> gate_commit(History& db, const std::string& git_sha, const GateOptions& asked) {
  std::map<std::string, History::RunInfo> of_commit;
  for (auto& r : db.latest_runs_of_commit(git_sha)) of_commit[r.machine_key] = r;
  std::vector<CommitGateRow> rows;
  for (const auto& m : db.machines()) {
    CommitGateRow row{m.machine_key, m.machine_kind.empty() ? "-" : m.machine_kind, "-", "", ""};
    const auto run = of_commit.find(m.machine_key);
    if (run == of_commit.end()) {
      row.outcome = "no run";
      row.detail = "no run of " + git_sha + " on this machine (last run: " + m.last_run.git_sha.substr(0, 12) + ")";
      rows.push_back(row);
      continue;
    }
    row.run = run->second.run_uid;
    const std::int64_t base_id = db.baseline_run(m.machine_key);
    if (!base_id) {
      row.outcome = "no baseline";
      row.detail = "store one with `pairbench baseline update --db`";
      row.exit = kExitUndecided;
      rows.push_back(row);
      continue;
    }
    try {
      const auto base = db.run_document(base_id), cur = db.run_document(run->second.id);
      if (!base || !cur) {
        throw std::runtime_error(std::string(!base ? "the baseline" : "the run") +
                                 " was stored without its run file (before schema 2): import it again");
      }
      GateOptions options = asked;
      add_run_variance(options, db, m.machine_key, row.run);
      const GateReport report = compare_runs(*base, *cur, options, "baseline of " + m.machine_key, row.run);
      row.regressions = report.count(Verdict::regression) + report.count(Verdict::broken);
      row.undecided = report.count(Verdict::undecided);
      row.unchanged = report.count(Verdict::unchanged);
      row.improvements = report.count(Verdict::improvement);
      row.other = report.count(Verdict::missing) + report.count(Verdict::new_);
      row.outcome = to_string(report.outcome());
      row.exit = report.exit_status();
      // The table says what the exit status says: under --undecided pass an undecided machine passed.
      if (row.outcome == "undecided" && row.exit == kExitOk) {
        row.outcome = "pass";
        row.detail = row.run + ": " + std::to_string(row.undecided) + " undecided, passed by --undecided pass";
      }
    } catch (const std::exception& e) {
      row.outcome = "error";
      row.detail = e.what();
      row.exit = kExitBenchmarkFailed;
    }
    rows.push_back(row);
  }
  return rows;
}

int commit_gate_status(const std::vector<CommitGateRow>& rows) {
  int status = kExitOk;
  for (const int worst : {kExitRegression, kExitBenchmarkFailed, kExitUndecided}) {
    if (std::any_of(rows.begin(), rows.end(), [&](const CommitGateRow& r) { return r.exit == worst; })) {
      status = worst;
      break;
    }
  }
  return status;
}

}  // namespace pairbench::harness
