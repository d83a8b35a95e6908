// `pairbench compare`, `gate`, `baseline update` and `history`.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>

#include "harness/cli/commands.h"
#include "harness/gate/print.h"
#include "harness/store/file_checks.h"
#include "harness/store/history.h"
#include "harness/store/json_field.h"
#include "harness/store/run_file.h"
#include "harness/stats/stats.h"
#include "pairbench/build_info.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

namespace {

// `what` names the argument ("--baseline", "current run file") for a path that is no file.
nlohmann::json read_input(const std::string& path, const std::string& what) {
  nlohmann::json doc;
  try {
    require_regular_file(path, what);  // a FIFO would block the reader forever
    doc = read_run_file(path);
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(path + ": unexpected JSON shape: " + json_exception_text(e));
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  if (doc["benchmarks"].empty()) throw UsageError(path + ": benchmarks: empty (no benchmark produced a sample)");
  return doc;
}

// The run's machine key (pairbench.environment.machine_key), a string.
std::string machine_key_of(const nlohmann::json& doc, const std::string& path) {
  try {
    return JsonField(doc, path)["pairbench"]["environment"]["machine_key"].string();
  } catch (const JsonFieldError& e) {
    throw UsageError(e.what());
  }
}

// Writes the optional outputs, prints the table, and returns 1 on a regression, 4 when undecided
// (unless --undecided pass), else 0.
int finish_gate(const GateReport& report, const GateArgs& args) {
  print_gate_table(std::cout, report);
  if (!args.markdown.empty()) write_text_atomically(args.markdown, gate_markdown(report));
  if (!args.junit.empty()) write_text_atomically(args.junit, gate_junit(report));
  if (!args.json.empty()) write_text_atomically(args.json, gate_json(report).dump(2) + "\n");
  return report.exit_status();
}

// A database named by --db (or PAIRBENCH_DB), as opposed to the default that is used where it exists.
bool named_database(const std::string& history_arg) {
  return !history_arg.empty() && history_arg != "auto" && history_arg != "none";
}

// The history a gate reads: "auto" is results/history.sqlite where it exists; "" where none.
std::string history_in_use(const std::string& history_arg, const std::string& results_dir) {
  if (history_arg == "auto") return fs::exists(results_dir + "/history.sqlite") ? results_dir + "/history.sqlite" : "";
  return history_arg == "none" ? "" : history_arg;
}

// The same for the current run's machine, from the history the gate's arguments name.
void add_run_variance_from(GateOptions& options, const std::string& history_arg, const nlohmann::json& current,
                           const std::string& current_path, const std::string& results_dir) {
  const std::string path = history_in_use(history_arg, results_dir);
  if (path.empty()) return;
  const std::string key = machine_key_of(current, current_path);
  const auto db = open_history_db(path, "--db", /*must_exist=*/true);
  add_run_variance(options, *db, key);
}

GateReport compare_or_refuse(const nlohmann::json& a, const nlohmann::json& b, const GateArgs& args,
                             const std::string& la, const std::string& lb, const std::string& results_dir = "results") {
  GateArgs with_history = args;
  add_run_variance_from(with_history.options, args.history, b, lb, results_dir);
  try {
    return compare_runs(a, b, with_history.options, la, lb);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  } catch (const nlohmann::json::exception& e) {
    // read_run_file checks what every run file has; a field only the gate reads can still be off.
    throw UsageError(la + ", " + lb + ": unexpected JSON shape in a run file: " + json_exception_text(e));
  }
}

// The newest run file (by name: run-<UTC time>-...) in the results directory.
std::string newest_run(const std::string& results_dir) {
  std::string best;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(results_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("run-", 0) == 0 && entry.path().extension() == ".json" && entry.path().string() > best) {
      best = entry.path().string();
    }
  }
  if (best.empty()) throw UsageError("--current: no run-*.json in " + results_dir + " (run `pairbench run` first)");
  return best;
}

// results/baselines/<machine_key>.json. The key comes from a run file (`run_path`): a key such as
// "../../x" must not place the baseline outside the results directory.
std::string baseline_path(const std::string& results_dir, const std::string& machine_key, const std::string& run_path) {
  try {
    return keyed_path_under(results_dir + "/baselines", machine_key, ".json",
                            run_path + ": pairbench.environment.machine_key");
  } catch (const FileCheckError& e) {
    throw UsageError(e.what());
  }
}

// The history argument's path where it names one ("auto" and "none" do not).
void check_history_argument(const std::string& history, const std::string& what) {
  if (history.empty() || history == "auto" || history == "none") return;
  try {
    History::check_path(history);
  } catch (const NotAHistory& e) {
    throw UsageError(what + ": " + e.what());
  }
}

}  // namespace

// From the last 30 runs of machine `key` (those benchmarks with at least 3 runs).
void add_run_variance(GateOptions& options, History& db, const std::string& key) {
  int runs = 0;
  for (const auto& s : db.series(key, "", 30)) {
    std::vector<std::vector<double>> values;
    for (const auto& p : s.points) values.push_back(p.values);
    runs = std::max(runs, static_cast<int>(values.size()));
    add_history_noise(options, s.benchmark, values);
  }
  options.run_variance_source = db.name() + " (" + std::to_string(options.run_variance.size()) +
                                " benchmarks with 3 or more of the last " + std::to_string(std::min(runs, 30)) + " runs)";
}

void check_gate_outputs(const GateArgs& args) {
  try {
    if (!args.markdown.empty()) require_regular_file_or_absent(args.markdown, "--markdown");
    if (!args.junit.empty()) require_regular_file_or_absent(args.junit, "--junit");
    if (!args.json.empty()) require_regular_file_or_absent(args.json, "--json");
  } catch (const FileCheckError& e) {
    throw UsageError(e.what());
  }
}

int cmd_compare(const std::string& baseline, const std::string& current, const GateArgs& args) {
  check_gate_outputs(args);
  check_history_argument(args.history, "--db");
  const auto a = read_input(baseline, "baseline run file"), b = read_input(current, "current run file");
  return finish_gate(compare_or_refuse(a, b, args, baseline, current), args);
}

int cmd_gate(const std::string& baseline_arg, const std::string& current_arg, const std::string& results_dir,
             const GateArgs& args) {
  check_gate_outputs(args);
  check_history_argument(args.history, "--db");
  const std::string current = current_arg.empty() ? newest_run(results_dir) : current_arg;
  const auto cur = read_input(current, "--current");
  std::string baseline = baseline_arg;
  std::optional<nlohmann::json> base;
  if (baseline.empty()) {
    // This machine's baseline: same machine key as the current run (CPU, GPU, driver, build):
    // from the database where one is named and holds it, else from results/baselines/.
    const std::string key = machine_key_of(cur, current);
    std::string in_db;
    if (named_database(args.history)) {
      const auto db = open_history_db(args.history, "--db", /*must_exist=*/true);
      if (const std::int64_t id = db->baseline_run(key)) {
        base = db->run_document(id);
        const auto info = db->run(id);
        baseline = db->name() + ": baseline of machine " + key + " (run " + (info ? info->run_uid : "?") + ")";
        if (!base) in_db = "; " + baseline + " was stored without its run file (before schema 2)";
      }
      if (!base && in_db.empty()) in_db = " or in " + db->name();
    }
    if (!base) {
      baseline = baseline_path(results_dir, key, current);
      if (!fs::exists(baseline)) {
        throw UsageError("--baseline: no baseline for machine " + key + " (" + baseline + in_db +
                         "); store one with `pairbench baseline update`");
      }
    }
  }
  if (!base) base = read_input(baseline, "--baseline");
  return finish_gate(compare_or_refuse(*base, cur, args, baseline, current, results_dir), args);
}

int cmd_gate_commit(const std::string& git_sha, const std::string& results_dir, const GateArgs& args) {
  check_gate_outputs(args);
  check_history_argument(args.history, "--db");
  if (git_sha.size() < 7 || git_sha.size() > 40 ||
      !std::all_of(git_sha.begin(), git_sha.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); })) {
    throw UsageError("--commit: expected a git SHA (7 to 40 hex digits), got " + quoted_for_message(git_sha));
  }
  const std::string db_name = history_in_use(args.history, results_dir);
  if (db_name.empty()) throw UsageError("--commit: needs a history (--db DB or PAIRBENCH_DB) holding the runs and baselines");
  const auto db = open_history_db(db_name, "--db", /*must_exist=*/true);
  std::map<std::string, History::RunInfo> of_commit;
  for (auto& r : db->latest_runs_of_commit(git_sha)) of_commit[r.machine_key] = r;
  if (of_commit.empty()) {
    throw UsageError("--commit: no run of " + git_sha + " on any machine in " + db->name());
  }
  struct Row {
    std::string machine, kind, run, outcome, detail;
    int regressions = 0, undecided = 0, unchanged = 0, improvements = 0, other = 0;
    int exit = 0;
  };
  std::vector<Row> rows;
  std::vector<GateReport> reports;
  for (const auto& m : db->machines()) {
    Row row{m.machine_key, m.machine_kind.empty() ? "-" : m.machine_kind, "-", "", ""};
    const auto run = of_commit.find(m.machine_key);
    if (run == of_commit.end()) {
      row.outcome = "no run";
      row.detail = "no run of " + git_sha + " on this machine (last run: " + m.last_run.git_sha.substr(0, 12) + ")";
      rows.push_back(row);
      continue;
    }
    row.run = run->second.run_uid;
    const std::int64_t base_id = db->baseline_run(m.machine_key);
    if (!base_id) {
      row.outcome = "no baseline";
      row.detail = "store one with `pairbench baseline update --db`";
      row.exit = kExitUndecided;
      rows.push_back(row);
      continue;
    }
    try {
      const auto base = db->run_document(base_id), cur = db->run_document(run->second.id);
      if (!base || !cur) {
        throw std::runtime_error(std::string(!base ? "the baseline" : "the run") +
                                 " was stored without its run file (before schema 2): import it again");
      }
      GateOptions options = args.options;
      add_run_variance(options, *db, m.machine_key);
      const GateReport report = compare_runs(*base, *cur, options, "baseline of " + m.machine_key, row.run);
      row.regressions = report.count(Verdict::regression) + report.count(Verdict::broken);
      row.undecided = report.count(Verdict::undecided);
      row.unchanged = report.count(Verdict::unchanged);
      row.improvements = report.count(Verdict::improvement);
      row.other = report.count(Verdict::missing) + report.count(Verdict::new_);
      row.outcome = to_string(report.outcome());
      row.exit = report.exit_status();
      reports.push_back(report);
    } catch (const std::exception& e) {
      row.outcome = "error";
      row.detail = e.what();
      row.exit = kExitBenchmarkFailed;
    }
    rows.push_back(row);
  }
  // The worst outcome decides: a regression anywhere, then a machine that could not be gated,
  // then one undecided.
  int status = kExitOk;
  for (const int worst : {kExitRegression, kExitBenchmarkFailed, kExitUndecided}) {
    if (std::any_of(rows.begin(), rows.end(), [&](const Row& r) { return r.exit == worst; })) {
      status = worst;
      break;
    }
  }
  std::cout << "gate of commit " << git_sha << " on every machine in " << db->name() << "\n";
  char line[512];
  std::snprintf(line, sizeof line, "%-20s %-28s %-12s %5s %5s %5s %5s %5s  %s\n", "machine", "kind", "outcome", "regr",
                "undec", "same", "impr", "other", "run / why");
  std::cout << line;
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line, "%-20s %-28.28s %-12s %5d %5d %5d %5d %5d  %s\n", r.machine.c_str(), r.kind.c_str(),
                  r.outcome.c_str(), r.regressions, r.undecided, r.unchanged, r.improvements, r.other,
                  (r.detail.empty() ? r.run : r.detail).c_str());
    std::cout << line;
  }
  if (!args.json.empty()) {
    nlohmann::json j = {{"commit", git_sha}, {"db", db->name()}, {"exit_status", status}, {"machines", nlohmann::json::array()}};
    for (const auto& r : rows) {
      j["machines"].push_back({{"machine_key", r.machine}, {"machine_kind", r.kind}, {"run_id", r.run},
                               {"outcome", r.outcome}, {"detail", r.detail}, {"regressions", r.regressions},
                               {"undecided", r.undecided}, {"unchanged", r.unchanged},
                               {"improvements", r.improvements}, {"other", r.other}});
    }
    write_text_atomically(args.json, j.dump(2) + "\n");
  }
  return status;
}

int cmd_baseline_update(const std::string& run_arg, const std::string& results_dir, const std::string& history) {
  // Everything is checked before the baseline is written: a refused history leaves no half-done update.
  check_history_argument(history, "--db");
  const std::string run = run_arg.empty() ? newest_run(results_dir) : run_arg;
  const auto doc = read_input(run, "--run");
  const std::string key = machine_key_of(doc, run);
  const std::string path = baseline_path(results_dir, key, run);
  try {
    require_regular_file_or_absent(path, "baseline");
  } catch (const FileCheckError& e) {
    throw UsageError(e.what());
  }
  // A named database holds the baseline itself (the run is stored there if it is not yet); the
  // default history only marks it, where it already holds the run, so trends can show it.
  std::unique_ptr<History> db;
  const std::string db_name = history_in_use(history, results_dir);
  if (!db_name.empty()) db = open_history_db(db_name, "--db", /*must_exist=*/!named_database(history));
  write_json_atomically(path, doc);
  std::string in_db;
  if (db) {
    std::int64_t run_id = 0;
    if (named_database(history)) {
      run_id = db->append_run(doc, run);
    } else if (const auto stored = db->run_by_uid(run_identity(doc))) {
      run_id = stored->id;
    }
    if (run_id) {
      db->set_baseline(key, run_id);
      in_db = " and " + db->name();
    }
  }
  std::cout << "baseline for machine " << key << ": " << path << in_db << " (from " << run << ")\n";
  return kExitOk;
}

}  // namespace pairbench::harness
