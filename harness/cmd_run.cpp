// `pairbench list`, `env`, `run` and `report`, and what they share with `ab` and `selftest`.
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <set>

#include "harness/commands.h"
#include "harness/history.h"
#include "harness/process.h"
#include "harness/run_file.h"
#include "harness/summary.h"
#include "pairbench/build_info.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

std::string default_bench_dir() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "." : self.parent_path().string();
}

std::vector<std::string> split_csv(const std::string& s) {
  std::vector<std::string> out;
  std::string item;
  for (char c : s + ",") {
    if (c == ',') {
      if (!item.empty()) out.push_back(item);
      item.clear();
    } else {
      item += c;
    }
  }
  return out;
}

std::vector<ExperimentEntry> select_experiments(std::vector<ExperimentEntry> all, const std::string& experiments,
                                                const std::string& arms) {
  std::vector<ExperimentEntry> out;
  if (!experiments.empty()) {
    for (const std::string& want : split_csv(experiments)) {
      bool found = false;
      for (const auto& e : all) {
        const std::string area = e.name.substr(0, e.name.find('.'));
        if (e.name == want || area == want) {
          found = true;
          if (std::none_of(out.begin(), out.end(), [&](const auto& o) { return o.name == e.name; })) out.push_back(e);
        }
      }
      if (!found) {
        std::string known;
        for (const auto& e : all) known += (known.empty() ? "" : ", ") + e.name;
        throw UsageError("--experiments: unknown experiment '" + want + "' (known: " + known + ")");
      }
    }
  } else {
    out = std::move(all);
  }
  if (!arms.empty()) {
    const auto wanted = split_csv(arms);
    for (const std::string& want : wanted) {
      bool found = false;
      for (const auto& e : out) {
        for (const auto& a : e.arms) found = found || a.name == want;
      }
      if (!found) throw UsageError("--arms: unknown arm '" + want + "' in the selected experiments");
    }
    for (auto& e : out) {
      std::erase_if(e.benchmarks, [&](const BenchmarkEntry& b) {
        return std::find(wanted.begin(), wanted.end(), b.arm) == wanted.end();
      });
    }
  }
  return out;
}

int cmd_list(const std::string& bench_dir, const std::string& profile, const std::string& format) {
  const auto experiments = load_catalogue(find_bench_binaries(bench_dir), profile);
  if (format == "json") {
    std::cout << catalogue_to_json(experiments).dump(2) << "\n";
    return kExitOk;
  }
  for (const auto& e : experiments) {
    std::cout << e.name << (e.claim.empty() ? "" : " (" + e.claim + ")") << ": " << e.question << "\n";
    std::cout << "  metric " << e.metric << " [" << e.unit << "], " << e.better << " is better; timing " << e.timing
              << "; binary " << fs::path(e.binary).filename().string() << "\n";
    std::cout << "  arms:";
    for (const auto& a : e.arms) {
      std::cout << " " << a.name << " (" << a.role;
      for (const auto& [k, v] : a.env) std::cout << ", " << k << "=" << v;
      std::cout << ")";
    }
    std::cout << "\n  grid (" << profile << "):";
    for (const auto& [axis, values] : e.axes) {
      std::cout << " " << axis << "={";
      for (std::size_t i = 0; i < values.size(); ++i) std::cout << (i ? "," : "") << values[i];
      std::cout << "}";
    }
    std::cout << "\n";
    std::set<std::string> reasons;
    std::size_t runnable = 0;
    for (const auto& b : e.benchmarks) {
      if (b.available) {
        ++runnable;
        continue;
      }
      std::string p;
      for (const auto& [k, v] : b.params) p += (p.empty() ? "" : ",") + k + ":" + v;
      reasons.insert(b.arm + (p.empty() ? "" : "@" + p) + ": " + b.reason);
    }
    std::cout << "  benchmarks: " << e.benchmarks.size() << ", runnable here: " << runnable << "\n";
    for (const auto& r : reasons) std::cout << "    not here: " << r << "\n";
  }
  return kExitOk;
}

int cmd_env(const std::string& format) {
  const Environment env = capture_environment(PAIRBENCH_SOURCE_DIR);
  if (format == "json") {
    std::cout << env.to_json().dump(2) << "\n";
    return kExitOk;
  }
  for (const auto& [k, v] : env.fingerprint.items()) {
    std::cout << "  " << k << ": " << (v.is_string() ? v.get<std::string>() : v.dump()) << "\n";
  }
  if (env.warnings.empty()) std::cout << "no warnings\n";
  for (const auto& w : env.warnings) std::cout << "WARNING: " << w << "\n";
  return kExitOk;
}

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
    options.repetitions = 9, options.plan = {10, 0.005, 1.0}, options.instruction_processes = 3, options.timeout_s = 300;
  } else {
    options.repetitions = 15, options.plan = {10, 0.02, 3.0}, options.instruction_processes = 3, options.timeout_s = 600;
  }
  if (args.repetitions > 0) options.repetitions = args.repetitions;
  if (args.batches > 0) options.plan.batches = args.batches;
  if (args.min_time_s > 0) options.plan.sample_time_s = args.min_time_s / options.plan.batches;
  options.plan.max_loop_wall_s = std::max(options.plan.max_loop_wall_s, 4 * options.plan.batches * options.plan.sample_time_s);
  if (args.instruction_processes >= 0) options.instruction_processes = args.instruction_processes;
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
  return options;
}

nlohmann::json build_run_doc(const std::vector<ExperimentEntry>& experiments, const std::vector<Sample>& all_samples,
                             const RunOptions& options, const RunOutcome& outcome, const Environment& env,
                             const std::string& started, const std::string& command, int side) {
  std::vector<Sample> samples;
  for (const Sample& s : all_samples) {
    if (s.side == side) samples.push_back(s);
  }
  nlohmann::json summary = summarise(experiments, samples);
  std::map<std::string, const ExperimentEntry*> by_name;
  for (const auto& entry : experiments) by_name[entry.name] = &entry;
  for (auto& e : summary) {
    const ExperimentEntry& entry = *by_name.at(e["name"].get<std::string>());
    if (entry.gate_threshold > 0) e["gate_threshold"] = entry.gate_threshold;
    if (entry.instructions_gate_threshold > 0) e["instructions_gate_threshold"] = entry.instructions_gate_threshold;
    e["time_relation"] = entry.time_relation;
  }
  nlohmann::json doc;
  doc["context"] = {{"date", started},
                    {"host_name", env.fingerprint["hostname"]},
                    {"executable", "pairbench"},
                    {"num_cpus", env.fingerprint["cpu_count"]},
                    {"library_build_type", env.fingerprint["build_type"] == "Release" ? "release" : "debug"},
                    {"pairbench_profile", options.profile}};
  doc["benchmarks"] = nlohmann::json::array();
  nlohmann::json not_run = nlohmann::json::array();
  nlohmann::json instructions = nlohmann::json::array();
  for (const Sample& s : samples) {
    const bool good = s.has_value && !s.gbench.is_null() && (s.verification == "passed" || s.verification == "not_verified");
    if (good && s.instrument == "instructions") {
      // Not in `benchmarks`: compare.py would read them as times.
      instructions.push_back({{"name", s.benchmark}, {"experiment", s.experiment}, {"arm", s.arm},
                              {"repetition_index", s.repetition}, {"verification", s.verification},
                              {"instructions_per_iteration", s.metric_value}, {"iterations", s.iterations},
                              {"process_wall_s", s.process_wall_s}});
    } else if (good) {
      nlohmann::json b = s.gbench;
      b["run_name"] = b["name"] = s.benchmark;
      b["experiment"] = s.experiment;
      b["arm"] = s.arm;
      b["repetitions"] = options.repetitions;
      b["repetition_index"] = s.repetition;
      b["verification"] = s.verification;
      b["metric_value"] = s.metric_value;
      b["process_wall_s"] = s.process_wall_s;
      b["iterations"] = s.iterations;
      b["measured_s"] = s.measured_s;
      if (!s.batches.empty()) b["metric_batches"] = s.batches;
      if (s.pair >= 0) b["duet_pair"] = s.pair, b["cpu"] = s.cpu;
      b["sequence"] = s.sequence;
      b["start_s"] = s.start_s;
      doc["benchmarks"].push_back(b);
    } else {
      not_run.push_back({{"name", s.benchmark}, {"experiment", s.experiment}, {"arm", s.arm},
                         {"repetition_index", s.repetition}, {"verification", s.verification}, {"reason", s.reason},
                         {"instrument", s.instrument}});
    }
  }
  doc["pairbench"] = {{"schema_version", kRunFileSchemaVersion},
                      {"profile", options.profile},
                      {"repetitions", options.repetitions},
                      {"min_time_s", options.plan.batches * options.plan.sample_time_s},
                      {"sampling", {{"processes", options.repetitions},
                                    {"batches", options.plan.batches},
                                    {"sample_time_s", options.plan.sample_time_s},
                                    {"max_loop_wall_s", options.plan.max_loop_wall_s},
                                    {"iterations", "fixed per benchmark by calibration"},
                                    {"calibration", options.calibration_path.empty() ? "this run only" : options.calibration_path},
                                    {"calibrated_in_this_run", outcome.calibrated},
                                    {"drifted_from_calibration", outcome.drifted},
                                    {"calibration_wall_s", outcome.calibration_wall_s},
                                    {"pairing", outcome.pairing},
                                    {"duet_cpus", outcome.duet_cpus},
                                    {"instruction_processes", outcome.instruction_counter.name.empty() ? 0 : options.instruction_processes},
                                    {"instruction_counter", outcome.instruction_counter.name.empty() ? "none" : outcome.instruction_counter.name},
                                    {"instruction_counter_note", outcome.instruction_counter.reason}}},
                      {"timeout_s", options.timeout_s},
                      {"seed", outcome.seed},
                      {"started_at", started},
                      {"finished_at", utc_stamp("%Y-%m-%dT%H:%M:%SZ")},
                      {"wall_s", outcome.wall_s},
                      {"command", command},
                      {"environment", env.to_json()},
                      {"not_run", not_run},
                      {"instructions", instructions},
                      {"experiments", summary}};
  return doc;
}

void record_history(const std::string& history_path, const nlohmann::json& doc, const std::string& run_file) {
  if (history_path.empty()) return;
  try {
    std::error_code ec;
    const fs::path parent = fs::path(history_path).parent_path();
    if (!parent.empty()) fs::create_directories(parent, ec);
    History history(history_path);
    history.append_run(doc, run_file);
  } catch (const std::exception& e) {
    // The run file is already written: losing the history row must not lose the run.
    std::cerr << "pairbench: warning: not recorded in history: " << e.what() << "\n";
  }
}

int cmd_run(const RunArgs& args, const std::string& command_line) {
  const Environment env = capture_environment(PAIRBENCH_SOURCE_DIR);
  const RunOptions options = run_options(args, env.fingerprint.value("machine_key", ""));
  const std::string out = args.out.empty() ? "results/run-" + utc_stamp("%Y%m%dT%H%M%SZ") + "-" + args.profile + ".json"
                                           : args.out;
  try {
    check_writable(out);
  } catch (const std::exception& ex) {
    throw UsageError(std::string("--out: ") + ex.what());
  }
  const auto experiments = select_experiments(load_catalogue(find_bench_binaries(args.bench_dir), args.profile),
                                              args.experiments, args.arms);
  for (const auto& w : env.warnings) std::cerr << "pairbench: warning: " << w << "\n";

  const std::string started = utc_stamp("%Y-%m-%dT%H:%M:%SZ");
  const RunOutcome outcome = run_experiments(experiments, options);
  const nlohmann::json doc = build_run_doc(experiments, outcome.samples, options, outcome, env, started, command_line);
  write_json_atomically(out, doc);
  record_history(args.history, doc, out);
  print_summary(std::cout, doc["pairbench"]["experiments"]);
  std::cout << "\nwrote " << out << " (" << doc["benchmarks"].size() << " samples, " << outcome.wall_s << " s)\n";
  if (outcome.failed_processes > 0) {
    std::cerr << "pairbench: " << outcome.failed_processes
              << " benchmark process(es) failed, crashed, hung or were incorrect; see 'verification' above\n";
    return kExitBenchmarkFailed;
  }
  return kExitOk;
}

int cmd_report(const std::string& run, const std::string& history, const std::string& out_dir) {
  const std::string script = std::string(PAIRBENCH_SOURCE_DIR) + "/plots/report.py";
  if (!fs::exists(script)) throw UsageError("report: " + script + " not found");
  // Debian's matplotlib belongs to /usr/bin/python3; another python3 may come first on PATH.
  std::vector<std::string> argv = {"/usr/bin/python3", script, "--run", run, "-o", out_dir};
  if (!history.empty()) {
    argv.push_back("--history");
    argv.push_back(history);
  }
  const ProcessResult r = run_process(argv, {{"MPLBACKEND", "Agg"}}, std::chrono::minutes(10));
  std::cout << r.output;
  if (r.status != ProcessResult::Status::kExited) throw std::runtime_error("report: plots/report.py " + r.describe());
  return r.exit_code;
}

}  // namespace pairbench::harness
