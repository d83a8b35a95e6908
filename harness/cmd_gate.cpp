// `pairbench compare`, `gate`, `baseline update` and `history`.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <memory>

#include "harness/commands.h"
#include "harness/file_checks.h"
#include "harness/history.h"
#include "harness/json_field.h"
#include "harness/run_file.h"
#include "harness/stats.h"
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

// Opens the history database at `path` given by `what`, refusing anything that is not one.
std::unique_ptr<History> open_history(const std::string& path, const std::string& what) {
  try {
    return std::make_unique<History>(path);
  } catch (const NotAHistory& e) {
    throw UsageError(what + ": " + e.what());
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

// Each benchmark's run-to-run variance on the current run's machine, from the last 30 runs in
// the history database (those with at least 3 runs).
void add_run_variance(GateOptions& options, const std::string& history_arg, const nlohmann::json& current,
                      const std::string& current_path, const std::string& results_dir) {
  std::string path = history_arg;
  if (path == "auto") path = fs::exists(results_dir + "/history.sqlite") ? results_dir + "/history.sqlite" : "";
  if (path.empty() || path == "none") return;
  if (!fs::exists(path)) throw UsageError("--history: " + path + " does not exist");
  const std::string key = machine_key_of(current, current_path);
  const auto db = open_history(path, "--history");
  int runs = 0;
  for (const auto& s : db->series(key, "", 30)) {
    std::vector<std::vector<double>> values;
    for (const auto& p : s.points) values.push_back(p.values);
    runs = std::max(runs, static_cast<int>(values.size()));
    add_history_noise(options, s.benchmark, values);
  }
  options.run_variance_source = path + " (" + std::to_string(options.run_variance.size()) +
                                " benchmarks with 3 or more of the last " + std::to_string(std::min(runs, 30)) + " runs)";
}

GateReport compare_or_refuse(const nlohmann::json& a, const nlohmann::json& b, const GateArgs& args,
                             const std::string& la, const std::string& lb, const std::string& results_dir = "results") {
  GateArgs with_history = args;
  add_run_variance(with_history.options, args.history, b, lb, results_dir);
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
  check_history_argument(args.history, "--history");
  const auto a = read_input(baseline, "baseline run file"), b = read_input(current, "current run file");
  return finish_gate(compare_or_refuse(a, b, args, baseline, current), args);
}

int cmd_gate(const std::string& baseline_arg, const std::string& current_arg, const std::string& results_dir,
             const GateArgs& args) {
  check_gate_outputs(args);
  check_history_argument(args.history, "--history");
  const std::string current = current_arg.empty() ? newest_run(results_dir) : current_arg;
  const auto cur = read_input(current, "--current");
  std::string baseline = baseline_arg;
  if (baseline.empty()) {
    // This machine's baseline: same machine key as the current run (CPU, GPU, driver, build).
    const std::string key = machine_key_of(cur, current);
    baseline = baseline_path(results_dir, key, current);
    if (!fs::exists(baseline)) {
      throw UsageError("--baseline: no baseline for machine " + key + " (" + baseline +
                       "); store one with `pairbench baseline update`");
    }
  }
  const auto base = read_input(baseline, "--baseline");
  return finish_gate(compare_or_refuse(base, cur, args, baseline, current, results_dir), args);
}

int cmd_baseline_update(const std::string& run_arg, const std::string& results_dir, const std::string& history) {
  // Everything is checked before the baseline is written: a refused history leaves no half-done update.
  check_history_argument(history, "--history");
  const std::string run = run_arg.empty() ? newest_run(results_dir) : run_arg;
  const auto doc = read_input(run, "--run");
  const std::string key = machine_key_of(doc, run);
  std::string started_at;
  try {
    started_at = JsonField(doc, run)["pairbench"].string_or("started_at", "");
  } catch (const JsonFieldError& e) {
    throw UsageError(e.what());
  }
  const std::string path = baseline_path(results_dir, key, run);
  try {
    require_regular_file_or_absent(path, "baseline");
  } catch (const FileCheckError& e) {
    throw UsageError(e.what());
  }
  std::unique_ptr<History> db;
  if (!history.empty() && history != "none" && fs::exists(history)) db = open_history(history, "--history");
  write_json_atomically(path, doc);
  if (db) {
    // Mark it in the history too, so trends can show where the baseline was taken.
    std::int64_t run_id = 0;
    for (const auto& s : db->series(key)) {
      for (const auto& p : s.points) {
        if (p.started_at == started_at) run_id = p.run_id;
      }
    }
    if (run_id) db->set_baseline(key, run_id);
  }
  std::cout << "baseline for machine " << key << ": " << path << " (from " << run << ")\n";
  return kExitOk;
}

int cmd_history(const std::string& benchmark, const std::string& db_path, const std::string& machine_arg,
                int last_runs, const std::string& format) {
  if (!fs::exists(db_path)) throw UsageError("--db: " + db_path + " does not exist (every `pairbench run` appends to it)");
  const auto db = open_history(db_path, "--db");
  std::string machine = machine_arg;
  if (machine.empty()) machine = capture_environment(PAIRBENCH_SOURCE_DIR).fingerprint["machine_key"];
  const auto all = db->series(machine, benchmark, last_runs);
  if (all.empty()) {
    throw UsageError(benchmark.empty() ? "no history for machine " + machine + " in " + db_path
                                       : "no history of '" + benchmark + "' for machine " + machine + " in " + db_path);
  }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& s : all) {
    std::vector<double> medians;
    for (const auto& p : s.points) medians.push_back(p.median);
    std::vector<History::ChangePoint> cps;
    nlohmann::json jcps = nlohmann::json::array();
    const auto splits = stats::detect_change_points(medians);
    for (std::size_t i = 0; i < splits.size(); ++i) {
      const std::size_t k = splits[i];
      const std::size_t begin = i == 0 ? 0 : splits[i - 1];
      const std::size_t end = i + 1 < splits.size() ? splits[i + 1] : medians.size();
      const double before = stats::median(std::span(medians).subspan(begin, k - begin));
      const double after = stats::median(std::span(medians).subspan(k, end - k));
      cps.push_back({s.points[k].run_id, before, after});
      jcps.push_back({{"run_id", s.points[k].run_id}, {"started_at", s.points[k].started_at},
                      {"git_sha", s.points[k].git_sha}, {"before", before}, {"after", after},
                      {"change", after / before - 1}});
    }
    db->store_change_points(s.benchmark, machine, cps);
    nlohmann::json jpoints = nlohmann::json::array();
    for (const auto& p : s.points) {
      jpoints.push_back({{"run_id", p.run_id}, {"started_at", p.started_at}, {"git_sha", p.git_sha},
                         {"median", p.median}, {"samples", p.samples}});
    }
    out.push_back({{"benchmark", s.benchmark}, {"metric", s.metric}, {"unit", s.unit}, {"better", s.better},
                   {"runs", s.points.size()}, {"points", jpoints}, {"change_points", jcps}});
  }
  if (format == "json") {
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << "history of machine " << machine << " in " << db_path << "\n";
  for (const auto& s : out) {
    const auto& pts = s["points"];
    char line[400];
    std::snprintf(line, sizeof line, "%-64s %4zu runs  first %.4g  last %.4g %s\n",
                  s["benchmark"].get<std::string>().c_str(), pts.size(), pts.front()["median"].get<double>(),
                  pts.back()["median"].get<double>(), s["unit"].get<std::string>().c_str());
    std::cout << line;
    for (const auto& c : s["change_points"]) {
      std::snprintf(line, sizeof line, "    change point %s (git %.12s): %.4g -> %.4g (%+.1f%%)\n",
                    c["started_at"].get<std::string>().c_str(), c["git_sha"].get<std::string>().c_str(),
                    c["before"].get<double>(), c["after"].get<double>(), 100 * c["change"].get<double>());
      std::cout << line;
    }
  }
  return kExitOk;
}

}  // namespace pairbench::harness
