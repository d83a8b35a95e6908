// pairbench: runs matched experiments (bench binaries), records run files, prints summaries.
// Exit status: 0 ok; 1 regression found (gate, later); 2 bad input or usage;
// 3 some benchmark process crashed, hung, failed or computed a wrong answer (the others' results
// are still written).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <set>

#include "harness/catalogue.h"
#include "harness/environment.h"
#include "harness/run_file.h"
#include "harness/runner.h"
#include "harness/summary.h"
#include "pairbench/build_info.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

constexpr int kExitOk = 0;
constexpr int kExitUsage = 2;
constexpr int kExitBenchmarkFailed = 3;

// A usage or input error: printed as one line, exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string default_bench_dir() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "." : self.parent_path().string();
}

std::string utc_stamp(const char* format) {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, format, &tm);
  return buf;
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

// Keeps the experiments named (exactly, or by area: "dispatch" keeps dispatch.*) and the arms named.
std::vector<ExperimentEntry> select(std::vector<ExperimentEntry> all, const std::string& experiments,
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
    for (const auto& a : e.arms) std::cout << " " << a.name << " (" << a.role << ")";
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
      } else {
        reasons.insert(b.arm + "@" + [&] {
          std::string p;
          for (const auto& [k, v] : b.params) p += (p.empty() ? "" : ",") + k + ":" + v;
          return p;
        }() + ": " + b.reason);
      }
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

struct RunArgs {
  std::string profile = "quick", experiments, arms, out, bench_dir;
  int repetitions = 0;
  double min_time_s = 0, timeout_s = 0;
  std::uint64_t seed = 0;
};

int cmd_run(const RunArgs& args, const std::vector<std::string>& command_line) {
  RunOptions options;
  options.profile = args.profile;
  // Profile defaults: processes per benchmark and time per process.
  if (args.profile == "quick") {
    options.repetitions = 5, options.min_time_s = 0.05, options.timeout_s = 60;
  } else if (args.profile == "nightly") {
    options.repetitions = 9, options.min_time_s = 0.2, options.timeout_s = 300;
  } else {
    options.repetitions = 15, options.min_time_s = 0.5, options.timeout_s = 600;
  }
  if (args.repetitions > 0) options.repetitions = args.repetitions;
  if (args.min_time_s > 0) options.min_time_s = args.min_time_s;
  if (args.timeout_s > 0) options.timeout_s = args.timeout_s;
  options.seed = args.seed;
  options.progress_tty = isatty(STDERR_FILENO);

  const std::string out = args.out.empty() ? "results/run-" + utc_stamp("%Y%m%dT%H%M%SZ") + "-" + args.profile + ".json"
                                           : args.out;
  try {
    check_writable(out);
  } catch (const std::exception& ex) {
    throw UsageError(std::string("--out: ") + ex.what());
  }
  const auto experiments = select(load_catalogue(find_bench_binaries(args.bench_dir), args.profile),
                                  args.experiments, args.arms);
  const Environment env = capture_environment(PAIRBENCH_SOURCE_DIR);
  for (const auto& w : env.warnings) std::cerr << "pairbench: warning: " << w << "\n";

  const std::string started = utc_stamp("%Y-%m-%dT%H:%M:%SZ");
  const RunOutcome outcome = run_experiments(experiments, options);
  const nlohmann::json summary = summarise(experiments, outcome.samples);

  nlohmann::json doc;
  doc["context"] = {{"date", started},
                    {"host_name", env.fingerprint["hostname"]},
                    {"executable", "pairbench"},
                    {"num_cpus", env.fingerprint["cpu_count"]},
                    {"library_build_type", env.fingerprint["build_type"] == "Release" ? "release" : "debug"},
                    {"pairbench_profile", args.profile}};
  doc["benchmarks"] = nlohmann::json::array();
  nlohmann::json not_run = nlohmann::json::array();
  for (const Sample& s : outcome.samples) {
    if (s.has_value && !s.gbench.is_null() && (s.verification == "passed" || s.verification == "not_verified")) {
      nlohmann::json b = s.gbench;
      b["run_name"] = b["name"] = s.benchmark;
      b["experiment"] = s.experiment;
      b["arm"] = s.arm;
      b["repetitions"] = options.repetitions;
      b["repetition_index"] = s.repetition;
      b["verification"] = s.verification;
      b["metric_value"] = s.metric_value;
      b["process_wall_s"] = s.process_wall_s;
      doc["benchmarks"].push_back(b);
    } else {
      not_run.push_back({{"name", s.benchmark}, {"experiment", s.experiment}, {"arm", s.arm},
                         {"repetition_index", s.repetition}, {"verification", s.verification}, {"reason", s.reason}});
    }
  }
  std::string command;
  for (const auto& a : command_line) command += (command.empty() ? "" : " ") + a;
  doc["pairbench"] = {{"schema_version", kRunFileSchemaVersion},
                      {"profile", args.profile},
                      {"repetitions", options.repetitions},
                      {"min_time_s", options.min_time_s},
                      {"timeout_s", options.timeout_s},
                      {"seed", outcome.seed},
                      {"started_at", started},
                      {"finished_at", utc_stamp("%Y-%m-%dT%H:%M:%SZ")},
                      {"wall_s", outcome.wall_s},
                      {"command", command},
                      {"environment", env.to_json()},
                      {"not_run", not_run},
                      {"experiments", summary}};
  write_json_atomically(out, doc);
  print_summary(std::cout, summary);
  std::cout << "\nwrote " << out << " (" << doc["benchmarks"].size() << " samples, " << outcome.wall_s << " s)\n";
  if (outcome.failed_processes > 0) {
    std::cerr << "pairbench: " << outcome.failed_processes
              << " benchmark process(es) failed, crashed, hung or were incorrect; see 'verification' above\n";
    return kExitBenchmarkFailed;
  }
  return kExitOk;
}

}  // namespace pairbench::harness

int main(int argc, char** argv) {
  using namespace pairbench::harness;
  CLI::App app{"pairbench: matched performance experiments (baseline vs treatment arms)"};
  app.require_subcommand(1);
  std::string bench_dir = default_bench_dir();

  auto* list = app.add_subcommand("list", "experiments, arms, grids, claim ids, and whether each arm can run here");
  std::string list_format = "table", list_profile = "quick";
  list->add_option("--format", list_format)->check(CLI::IsMember({"table", "json"}));
  list->add_option("--profile", list_profile)->check(CLI::IsMember({"quick", "nightly", "full"}));
  list->add_option("--bench-dir", bench_dir, "directory of the bench_* binaries");

  auto* run = app.add_subcommand("run", "run experiments, write a run file, print the summary");
  RunArgs run_args;
  run->add_option("--profile", run_args.profile)->check(CLI::IsMember({"quick", "nightly", "full"}));
  run->add_option("--experiments", run_args.experiments, "comma-separated experiment names or areas");
  run->add_option("--arms", run_args.arms, "comma-separated arm names to keep");
  run->add_option("--repetitions", run_args.repetitions, "processes per benchmark")->check(CLI::Range(1, 1000));
  run->add_option("--min-time", run_args.min_time_s, "seconds per process (Google Benchmark min_time)")
      ->check(CLI::Range(0.001, 600.0));
  run->add_option("--timeout", run_args.timeout_s, "seconds before a bench process is killed")
      ->check(CLI::Range(1.0, 86400.0));
  run->add_option("--seed", run_args.seed, "seed of the randomised order (default: from the clock)");
  run->add_option("--out", run_args.out, "run file (default results/run-<UTC time>-<profile>.json)");
  run->add_option("--bench-dir", bench_dir, "directory of the bench_* binaries");

  auto* env = app.add_subcommand("env", "the environment fingerprint and its warnings");
  std::string env_format = "text";
  env->add_option("--format", env_format)->check(CLI::IsMember({"text", "json"}));

  if (argc > 1 && argv[1][0] != '-') {
    const std::string command = argv[1];
    bool known = false;
    for (const auto* sub : app.get_subcommands({})) known = known || sub->get_name() == command;
    if (!known) {
      std::cerr << "pairbench: unknown command '" << command << "' (list, run, env; see --help)\n";
      return kExitUsage;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "pairbench: " << e.what() << " (see --help)\n";
    return kExitUsage;
  }
  try {
    if (*list) return cmd_list(bench_dir, list_profile, list_format);
    if (*env) return cmd_env(env_format);
    run_args.bench_dir = bench_dir;
    return cmd_run(run_args, std::vector<std::string>(argv, argv + argc));
  } catch (const UsageError& e) {
    std::cerr << "pairbench: " << e.what() << "\n";
    return kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "pairbench: " << e.what() << "\n";
    return kExitUsage;
  }
}
