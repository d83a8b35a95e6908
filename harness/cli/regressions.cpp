// `pairbench regressions`: confirmed regressions tracked until fixed (harness/analysis/regressions.h,
// docs/regressions.md). The listing (open and acknowledged; --all adds fixed), `ack ID --reason`,
// and `record --gate FILE`, which stores the gate JSON's regression rows (new ones to announce,
// known ones seen again). Listing and recording first close those whose level returned.
#include <cmath>
#include <cstdio>
#include <iostream>

#include "harness/analysis/regressions.h"
#include "harness/cli/command.h"
#include "harness/cli/history_access.h"
#include "harness/cli/options.h"
#include "harness/gate/read_json.h"
#include "harness/store/file_checks.h"
#include "harness/store/history.h"
#include "harness/store/json_field.h"
#include "harness/store/run_file.h"

namespace pairbench::harness {

namespace {

std::unique_ptr<History> open_db(const std::string& db_arg) {
  return open_history_db(db_arg, "--db", /*must_exist=*/true);
}

int cmd_list(const std::string& db_arg, const std::string& machine, bool all, const std::string& format) {
  const auto db = open_db(db_arg);
  close_returned_regressions(*db, machine);
  const auto regressions = db->regressions(machine, all);
  if (format == "json") {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : regressions) out.push_back(regression_json(r));
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << regressions.size() << " regression(s) "
            << (all ? "(open, acknowledged and fixed)" : "open or acknowledged")
            << (machine.empty() ? "" : " on machine " + machine) << " in " << db->name() << "\n";
  for (const auto& r : regressions) std::cout << regression_text(r, "");
  return kExitOk;
}

int cmd_ack(std::int64_t id, const std::string& reason, const std::string& db_arg) {
  if (reason.find_first_not_of(" \t\r\n") == std::string::npos) {
    throw UsageError("--reason: expected why the regression is acknowledged, is empty");
  }
  const auto db = open_db(db_arg);
  const auto r = db->regression(id);
  if (!r) throw UsageError("regressions ack: no regression " + std::to_string(id) + " in " + db->name());
  if (r->state == "fixed") {
    throw UsageError("regressions ack: regression " + std::to_string(id) + " was fixed at " + r->fixed_at +
                     ": nothing to acknowledge");
  }
  if (!db->acknowledge_regression(id, reason, utc_stamp("%Y-%m-%dT%H:%M:%SZ"))) {
    throw UsageError("regressions ack: regression " + std::to_string(id) +
                     " was fixed meanwhile: nothing to acknowledge");
  }
  std::cout << regression_text(*db->regression(id), "ack");
  return kExitOk;
}

int cmd_record(const std::string& gate_path, const std::string& db_arg, const std::string& machine_arg,
               const std::string& culprit, const std::string& json_out) {
  // Everything is read and checked before the history is opened: bad input changes nothing.
  if (!json_out.empty()) {
    try {
      require_regular_file_or_absent(json_out, "--json");
    } catch (const FileCheckError& e) {
      throw UsageError(e.what());
    }
  }
  if (!culprit.empty() && (culprit.size() < 7 || culprit.size() > 40 ||
                           culprit.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)) {
    throw UsageError("--culprit: expected a git SHA (7 to 40 hex digits), got " + quoted_for_message(culprit));
  }
  GateJson gate;
  try {
    gate = read_gate_json(gate_path);
  } catch (const JsonFieldError& e) {
    throw UsageError(e.what());
  }
  ComparedRuns runs{gate.current_run.machine_key, gate.baseline_run.run_id, gate.baseline_run.git_sha,
                    gate.current_run.run_id,      gate.current_run.git_sha, gate.current_run.started_at};
  if (!machine_arg.empty() && !runs.machine_key.empty() && machine_arg != runs.machine_key) {
    throw UsageError("--machine: " + machine_arg + ", but " + gate_path + ": current_run.machine_key is " +
                     runs.machine_key);
  }
  if (runs.machine_key.empty()) runs.machine_key = machine_arg;
  if (runs.machine_key.empty()) {
    throw UsageError(gate_path +
                     ": current_run.machine_key: missing (a gate JSON from before runs were named: give "
                     "--machine KEY)");
  }
  std::vector<ConfirmedRegression> rows;
  for (const auto& v : gate.rows) {
    if (v.verdict != Verdict::regression) continue;
    rows.push_back({v.benchmark, to_string(v.instrument), v.metric, v.unit, v.better, v.slowdown, v.slowdown_low,
                    v.slowdown_high, v.threshold, v.baseline_median, v.current_median});
  }
  const auto db = open_db(db_arg);
  const RecordOutcome outcome = record_regressions(*db, runs, rows, culprit);
  std::cout << gate_path << ": " << outcome.new_ones.size() << " new regression(s) to announce, "
            << outcome.known.size() << " already known, on machine " << runs.machine_key << " in " << db->name()
            << (outcome.closed.empty() ? "" : "; " + std::to_string(outcome.closed.size()) + " fixed") << "\n";
  for (const auto& r : outcome.new_ones) std::cout << regression_text(r, "new");
  for (const auto& r : outcome.known) std::cout << regression_text(r, "known");
  for (const auto& r : outcome.closed) std::cout << regression_text(r, "closed");
  if (!json_out.empty()) {
    nlohmann::json j = {{"gate", gate_path},
                        {"db", db->name()},
                        {"machine_key", runs.machine_key},
                        {"new", nlohmann::json::array()},
                        {"known", nlohmann::json::array()},
                        {"fixed", nlohmann::json::array()}};
    for (const auto& r : outcome.new_ones) j["new"].push_back(regression_json(r));
    for (const auto& r : outcome.known) j["known"].push_back(regression_json(r));
    for (const auto& r : outcome.closed) j["fixed"].push_back(regression_json(r));
    write_json_atomically(json_out, j);
  }
  return kExitOk;
}

}  // namespace

Command command_regressions() {
  return {"regressions", "confirmed regressions tracked until fixed: list, acknowledge, record a gate's",
          "0 listed, acknowledged or recorded; 2 bad input (an unknown or fixed id, an empty reason, a malformed gate "
          "JSON: nothing changed); 3 the history's lock stayed held or its server could not be reached",
          "the gate JSON recorded", [](CLI::App& cmd) -> CommandAction {
            struct Args {
              std::string db = kDefaultHistory, machine, format = "text";
              bool all = false;
              std::int64_t ack_id = 0;
              std::string ack_reason, ack_db = kDefaultHistory;
              std::string gate, record_db = kDefaultHistory, record_machine, culprit, json;
            };
            auto a = std::make_shared<Args>();
            cmd.add_option("--db,--history", a->db, kDbHelp + "results/history.sqlite)")
                ->envname(kDbEnv)
                ->check(history_path());
            cmd.add_option("--machine", a->machine, "only this machine key's (default: every machine's)");
            cmd.add_flag("--all", a->all, "fixed ones too");
            cmd.add_option("--format", a->format)->check(CLI::IsMember({"text", "json"}));

            auto* ack =
                cmd.add_subcommand("ack", "acknowledge a regression: known, with a reason; still listed until fixed");
            ack->add_option("id", a->ack_id, "the regression's id (the listing's #)")->required();
            ack->add_option("--reason", a->ack_reason, "why (a tracking issue, an accepted trade-off)")->required();
            ack->add_option("--db,--history", a->ack_db, kDbHelp + "results/history.sqlite)")
                ->envname(kDbEnv)
                ->check(history_path());

            auto* record = cmd.add_subcommand(
                "record",
                "store the regressions a gate JSON confirmed: new ones (to announce) and known ones (seen again)");
            record->add_option("--gate", a->gate, "the gate's JSON (`gate`, `ab` or `run --baseline` with --json)")
                ->required()
                ->check(path_is(regular_file_problem, "FILE"));
            record->add_option("--db,--history", a->record_db, kDbHelp + "results/history.sqlite)")
                ->envname(kDbEnv)
                ->check(history_path());
            record->add_option("--machine", a->record_machine,
                               "the machine key, where the gate JSON does not name it (written before it did)");
            record->add_option("--culprit", a->culprit,
                               "the first bad commit a bisection named (`bisect`'s first_bad)");
            record->add_option("--json", a->json, "also write the new, known and fixed regressions as JSON")
                ->check(path_is(regular_file_or_absent_problem, "FILE"));

            return [a, ack, record](const std::string&) {
              if (*ack) return cmd_ack(a->ack_id, a->ack_reason, a->ack_db);
              if (*record) return cmd_record(a->gate, a->record_db, a->record_machine, a->culprit, a->json);
              return cmd_list(a->db, a->machine, a->all, a->format);
            };
          }};
}

}  // namespace pairbench::harness
