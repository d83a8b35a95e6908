// `pairbench list`, `env`, `run` and `report`, and what they share with `ab` and `selftest`.
// What `run` measured is never thrown away: an interrupted run writes a partial run file, a run
// file that cannot go where asked goes to the current or the temporary directory, and a history
// row that cannot be written is retried, then named in the run file for `history import`.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <set>
#include <sstream>

#include "harness/analysis/claims.h"
#include "harness/cli/commands.h"
#include "harness/store/history.h"
#include "harness/exec/interrupt.h"
#include "harness/exec/process.h"
#include "harness/store/run_file.h"
#include "harness/analysis/summary.h"
#include "pairbench/build_info.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

namespace {

// 128 random bits as hex: the run's identity in the history, whatever its file is renamed to.
std::string new_run_id() {
  std::random_device rd;
  char id[33];
  std::snprintf(id, sizeof id, "%08x%08x%08x%08x", rd(), rd(), rd(), rd());
  return id;
}

// `path` with `-<pid>` before its extension, for a fallback name that is taken already.
std::string unique_variant(const fs::path& path) {
  const std::string name = path.stem().string() + "-" + std::to_string(getpid()) + path.extension().string();
  return (path.parent_path() / name).string();
}

// Writes the run file to `wanted`, else under the same name in the current directory, else in
// $TMPDIR (or /tmp), saying on stderr why and where; with `to_stdout`, as a last resort, prints
// it on stdout. Returns where it went ("-" for stdout, "" for nowhere).
std::string write_run_file(const std::string& wanted, const nlohmann::json& doc, bool to_stdout) {
  std::string why;
  try {
    write_json_atomically(wanted, doc);
    return wanted;
  } catch (const std::exception& e) {
    why = e.what();
  }
  const std::string name = fs::path(wanted).filename().string();
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);  // fails where the current directory was removed
  const char* tmp = std::getenv("TMPDIR");
  const std::vector<fs::path> fallbacks = {ec ? fs::path(".") / name : cwd / name,
                                           fs::path(tmp && *tmp ? tmp : "/tmp") / name};
  for (const fs::path& candidate : fallbacks) {
    const std::string path = fs::exists(candidate, ec) ? unique_variant(candidate) : candidate.string();
    if (path == wanted) continue;
    try {
      write_json_atomically(path, doc);
      std::cerr << "pairbench: cannot write the run file (" << why << "); wrote it to " << path << " instead\n";
      return path;
    } catch (const std::exception&) {
    }
  }
  if (!to_stdout) return "";
  std::cerr << "pairbench: cannot write the run file (" << why
            << ") nor a fallback in the current or temporary directory; the run file follows on stdout\n";
  std::cout << doc.dump(2) << "\n" << std::flush;
  return "-";
}

}  // namespace

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

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) throw UsageError(path + ": cannot be read");
  return text.str();
}

}  // namespace

int cmd_list(const std::string& bench_dir, const std::string& profile, const std::string& format,
             const std::string& update_file, const std::string& check_file) {
  if ((!update_file.empty() || !check_file.empty()) && format != "markdown") {
    throw UsageError(std::string(update_file.empty() ? "--check" : "--update") + ": expected --format markdown");
  }
  if (format == "claims-json") {  // the catalogue as plots/report.py reads it (--claims): no bench binary needed
    std::cout << builtin_claims_document().dump(2) << "\n";
    return kExitOk;
  }
  const auto experiments = load_catalogue(find_bench_binaries(bench_dir), profile);
  if (format == "markdown") {
    const std::string table = catalogue_to_markdown(experiments, profile);
    const std::string& file = update_file.empty() ? check_file : update_file;
    if (file.empty()) {
      std::cout << table;
      return kExitOk;
    }
    const std::string current = read_text(file);
    std::string refreshed;
    try {
      refreshed = replace_marked_section(current, table, file);
    } catch (const std::runtime_error& e) {
      throw UsageError(e.what());
    }
    const std::string command = "pairbench list --format markdown" +
                                (profile == "quick" ? std::string() : " --profile " + profile) + " --update " + file;
    if (!check_file.empty()) {
      if (refreshed == current) return kExitOk;
      std::cerr << "pairbench: " << file << ": the experiment table is stale (the bench binaries list other "
                << "experiments, arms or grids); refresh it with: " << command << "\n";
      return kExitRegression;
    }
    if (refreshed != current) write_text_atomically(file, refreshed);
    std::cout << file << ": experiment table " << (refreshed == current ? "already current" : "refreshed") << " ("
              << experiments.size() << " experiments)\n";
    return kExitOk;
  }
  if (format == "json") {
    std::cout << catalogue_to_json(experiments).dump(2) << "\n";
    return kExitOk;
  }
  if (format == "claims-markdown") {  // docs/claims.md
    std::cout << claims_markdown(builtin_claims_document(), experiments);
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
  // The typed summary (harness/analysis/summary.h), serialised in one place.
  const nlohmann::json summary = summarise(experiments, samples);
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
  doc["pairbench"]["claims"] = claims_to_json(judge_claims(builtin_claims(), summary, doc["pairbench"]["environment"]));
  doc["pairbench"]["run_id"] = new_run_id();
  if (outcome.interrupted_by) {
    doc["pairbench"]["interrupted"] = {{"signal", signal_name(outcome.interrupted_by)},
                                       {"completed_processes", outcome.completed_processes},
                                       {"planned_processes", outcome.planned_processes}};
  }
  return doc;
}

double history_retry_s() {
  const char* text = std::getenv("PAIRBENCH_HISTORY_RETRY_S");
  if (!text || !*text) return 120;
  char* end = nullptr;
  const double s = std::strtod(text, &end);
  if (*end != '\0' || !(s >= 0 && s <= 86400)) {
    throw UsageError(std::string("PAIRBENCH_HISTORY_RETRY_S: expected seconds from 0 to 86400, got '") + text + "'");
  }
  return s;
}

nlohmann::json record_history(const std::string& history_path, const nlohmann::json& doc, const std::string& run_file) {
  using Clock = std::chrono::steady_clock;
  const double budget_s = history_retry_s();
  const auto start = Clock::now();
  auto elapsed_s = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  nlohmann::json result = {{"db", redact_db(history_path)}};
  std::string error;
  int attempts = 0;
  double backoff_s = 0.5;
  for (;;) {
    ++attempts;
    // Each attempt waits for the lock a quarter of what is left (0.1 to 10 s), so a few
    // attempts fit in the budget and none outlasts it by much.
    const double wait_s = std::clamp((budget_s - elapsed_s()) / 4, 0.1, 10.0);
    try {
      std::error_code ec;
      const fs::path parent = is_postgres_url(history_path) ? fs::path() : fs::path(history_path).parent_path();
      if (!parent.empty()) fs::create_directories(parent, ec);
      History history(history_path, static_cast<int>(1000 * wait_s));
      bool stored_before = false;
      const std::int64_t id = history.append_run(doc, run_file, &stored_before);
      result["status"] = stored_before ? "already_stored" : "stored";
      result["history_run_id"] = id;
      result["attempts"] = attempts;
      return result;
    } catch (const HistoryBusy& e) {
      error = e.what();  // another writer holds the lock, or the server is unreachable: worth waiting for
    } catch (const std::exception& e) {
      error = e.what();  // not a lock (unwritable, not a history): retrying cannot help
      break;
    }
    const double left_s = budget_s - elapsed_s();
    if (left_s <= 0) break;
    if (!sleep_unless_interrupted(std::min(backoff_s, left_s))) {
      error += "; retries stopped by " + signal_name(interrupt_signal());
      break;
    }
    backoff_s = std::min(2 * backoff_s, 8.0);
  }
  char took[64];
  std::snprintf(took, sizeof took, " (%d attempt%s over %.1f s)", attempts, attempts == 1 ? "" : "s", elapsed_s());
  result["status"] = "failed";
  result["error"] = error + took;
  result["attempts"] = attempts;
  return result;
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
  if (!args.history.empty()) history_retry_s();  // a bad PAIRBENCH_HISTORY_RETRY_S fails now, not after the run
  const auto experiments = select_experiments(load_catalogue(find_bench_binaries(args.bench_dir), args.profile),
                                              args.experiments, args.arms);
  for (const auto& w : env.warnings) std::cerr << "pairbench: warning: " << w << "\n";

  const std::string started = utc_stamp("%Y-%m-%dT%H:%M:%SZ");
  const RunOutcome outcome = run_experiments(experiments, options);
  nlohmann::json doc = build_run_doc(experiments, outcome.samples, options, outcome, env, started, command_line);
  auto& pb = doc["pairbench"];
  const bool partial = outcome.interrupted_by != 0;
  // Written before the history is tried (that may take minutes): the samples are safe first. A
  // "pending" history write that is never updated means pairbench died in between.
  if (!args.history.empty()) {
    const std::string db = redact_db(args.history);
    pb["history_write"] = partial ? nlohmann::json{{"db", db}, {"status", "skipped"},
                                                   {"reason", "a partial (interrupted) run is not recorded in the history"}}
                                  : nlohmann::json{{"db", db}, {"status", "pending"}};
  }
  std::string written = write_run_file(out, doc, /*to_stdout=*/partial || args.history.empty());
  if (partial) {
    std::cerr << "pairbench: interrupted by " << signal_name(outcome.interrupted_by) << " after "
              << outcome.completed_processes << " of " << outcome.planned_processes << " processes: kept "
              << doc["benchmarks"].size() << " samples in " << (written == "-" ? "the run file on stdout" : written)
              << " (marked interrupted; not recorded in the history)\n";
    return interrupted_exit_status();
  }
  bool history_failed = false;
  if (!args.history.empty()) {
    pb["history_write"] = record_history(args.history, doc, written.empty() ? out : written);
    history_failed = pb["history_write"]["status"] == "failed";
    written = write_run_file(written.empty() ? out : written, doc, /*to_stdout=*/true);
  }
  print_summary(std::cout, pb["experiments"]);
  print_claims(std::cout, pb["claims"]);
  std::cout << "\nwrote " << (written == "-" ? "the run file to stdout" : written) << " (" << doc["benchmarks"].size()
            << " samples, " << outcome.wall_s << " s)\n";
  if (history_failed) {
    std::cerr << "pairbench: not recorded in history " << redact_db(args.history) << ": "
              << pb["history_write"]["error"].get<std::string>() << "; kept the run file " << written
              << ", which names the failed write; store it later with: pairbench history import " << written
              << " --db " << redact_db(args.history) << "\n";
  }
  if (interrupt_signal()) {
    std::cerr << "pairbench: interrupted by " << signal_name(interrupt_signal())
              << " after every process had finished: the run file " << written << " is complete\n";
    return interrupted_exit_status();
  }
  if (outcome.failed_processes > 0) {
    std::cerr << "pairbench: " << outcome.failed_processes
              << " benchmark process(es) failed, crashed, hung or were incorrect; see 'verification' above\n";
  }
  // Not where asked (the message above said where), or not in the history: nothing is lost, but
  // whoever reads the exit status must look.
  return outcome.failed_processes > 0 || written != out || history_failed ? kExitBenchmarkFailed : kExitOk;
}

// Runs per machine the report's history export holds (its trend figures and cross-machine page):
// a page over months of nightly runs on many machines would otherwise carry every median and
// process value of every benchmark.
constexpr int kReportExportRuns = 100;

bool ensure_claims(nlohmann::json& doc, const std::string& bench_dir) {
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
      std::cerr << "pairbench: warning: " << ex.what()
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
  pb["claims"] = claims_to_json(judge_claims(builtin_claims(), pb["experiments"], pb["environment"]));
  return true;
}

int cmd_summarise(const std::string& run, const std::string& out, const std::string& bench_dir) {
  nlohmann::json doc = read_run_file(run);
  ensure_claims(doc, bench_dir);
  print_claims(std::cout, doc["pairbench"]["claims"]);
  if (!out.empty()) {
    write_json_atomically(out, doc);
    std::cout << "wrote " << out << "\n";
  }
  return kExitOk;
}

namespace {

// A new empty file in $TMPDIR (or /tmp) named PREFIX-XXXXXX, removed when this goes out of scope.
struct TemporaryFile {
  std::string path;
  explicit TemporaryFile(const std::string& prefix) {
    const char* tmpdir = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/" + prefix + "-XXXXXX";
    const int fd = mkstemp(tmpl.data());
    if (fd < 0) throw std::runtime_error("report: cannot create a temporary file " + tmpl + ": " + std::strerror(errno));
    close(fd);
    path = tmpl;
  }
  ~TemporaryFile() { unlink(path.c_str()); }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
};

}  // namespace

int cmd_report(const std::string& run, const std::string& history, const std::string& out_dir, double timeout_s) {
  const std::string script = std::string(PAIRBENCH_SOURCE_DIR) + "/plots/report.py";
  if (!fs::exists(script)) throw UsageError("report: " + script + " not found");
  // Verdicts are the harness's: a run file written before it judged them is judged here, and the
  // report reads a copy that has them (plots/ never decides a verdict).
  std::string run_for_report = run;
  nlohmann::json doc = read_run_file(run);
  std::optional<TemporaryFile> judged_copy;
  if (ensure_claims(doc, default_bench_dir())) {
    judged_copy.emplace("pairbench-report");
    run_for_report = judged_copy->path;
    write_json_atomically(judged_copy->path, doc);
  }
  // Debian's matplotlib belongs to /usr/bin/python3; another python3 may come first on PATH.
  std::vector<std::string> argv = {"/usr/bin/python3", script, "--run", run_for_report, "-o", out_dir};
  // The claims catalogue is this build's (compiled in), never a file of the source tree.
  const TemporaryFile claims("pairbench-claims");
  write_json_atomically(claims.path, builtin_claims_document());
  argv.insert(argv.end(), {"--claims", claims.path});
  // The history reaches the report only as its export (either back end): the trend figures, the
  // history section and the cross-machine page all read it.
  std::optional<TemporaryFile> exported;
  if (!history.empty()) {
    const auto db = open_history_db(history, "--db", /*must_exist=*/true);
    exported.emplace("pairbench-fleet");
    write_json_atomically(exported->path, history_export(*db, kReportExportRuns));
    argv.insert(argv.end(), {"--history-export", exported->path});
  }
  // Its own process group, killed whole at the time limit or on SIGINT/SIGTERM (run_process).
  const ProcessResult r = run_process(argv, {{"MPLBACKEND", "Agg"}}, std::chrono::duration<double>(timeout_s));
  std::cout << r.output;
  if (r.status == ProcessResult::Status::kInterrupted) {
    std::cerr << "pairbench: report: interrupted by " << signal_name(r.signal)
              << ": plots/report.py and its process group were killed; " << out_dir << " may be incomplete\n";
    return interrupted_exit_status();
  }
  if (r.status == ProcessResult::Status::kTimedOut) {
    std::cerr << "pairbench: report: plots/report.py " << r.describe() << " (--timeout " << timeout_s
              << "): killed with its process group; " << out_dir << " may be incomplete\n";
    return kExitBenchmarkFailed;
  }
  if (r.status != ProcessResult::Status::kExited) throw std::runtime_error("report: plots/report.py " + r.describe());
  return r.exit_code;
}

}  // namespace pairbench::harness
