// Scheduling and running bench processes: calibration, fixed-iteration time processes (alone or
// in duet pairs), instruction-counting processes; collecting their Google Benchmark JSON and
// timed-region records. SIGINT/SIGTERM stop it between processes (harness/exec/interrupt.h).
#include "harness/exec/runner.h"

#include "harness/exec/callgrind_profile.h"
#include "harness/exec/scratch.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "harness/exec/interrupt.h"
#include "harness/exec/layout.h"
#include "harness/exec/process.h"
#include "harness/exec/say.h"
#include "harness/exec/start_gate.h"
#include "harness/stats/stats.h"
#include "harness/store/run_file.h"
#include "kernels/common/cpus.h"
#include "kernels/common/scratch.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

enum class Kind { kCalibrate, kTime, kInstructions };

struct Job {
  const ExperimentEntry* experiment;
  const BenchmarkEntry* benchmark;
  int repetition = 0;
  int side = 0;
  Kind kind = Kind::kTime;
  std::int64_t iterations = 0;  // 0 = Google Benchmark's ramp (calibration)
  std::vector<int> cpus;        // pinned to these (duet); empty = not pinned
  int pair = -1;
  // Duet: launched first of its pair. Drawn per crossover block and exchanged with the cores
  // between the block's two pairs (timed_units), so that under identical builds a block's mean
  // cancels whatever launch order and placement do to a side.
  bool lead = false;
  ProcessLayout layout;         // drawn for time processes under RunOptions::layout "random"
  // Runs in a process shared with the other jobs of its unit (RunOptions::share_processes): the
  // key of its experiment, arm environment and chunk, the same on both sides; "" = alone or duet.
  std::string share;
  // Its arm's check before timing: drawn for a quarter of the time processes (the same draw for
  // both sides of a repetition); launch_units also asks it of every process of the benchmark, on
  // every side, until each side has passed the check in this run, and after one failed it.
  bool check_drawn = false;
  bool check = true;  // what the process is told (bench --pairbench_check)
};

// The key under which a benchmark's check is remembered within a run: its side and name.
std::string check_key(int side, const std::string& benchmark) { return std::to_string(side) + "|" + benchmark; }

// A unit of two jobs that are not a shared process: a duet pair.
bool is_pair(const std::vector<Job>& unit) { return unit.size() == 2 && unit.front().share.empty(); }

// The experiment's binary and its layout variants (the plain binary alone where the catalogue
// entry was not loaded from a build directory).
std::vector<std::string> binaries_of(const ExperimentEntry& e) {
  return e.layout_binaries.empty() ? std::vector<std::string>{e.binary} : e.layout_binaries;
}

// A benchmark's error message may begin with the status it ended in ("not_supported: ...").
Verification verification_from_error(const std::string& message) {
  for (const Verification status : {Verification::not_supported, Verification::incorrect, Verification::failed}) {
    if (message.rfind(to_string(status) + ":", 0) == 0) return status;
  }
  return Verification::failed;
}

std::string strip_status(const std::string& message) {
  const auto colon = message.find(": ");
  return colon == std::string::npos ? message : message.substr(colon + 2);
}

std::string format_duration(double s) {
  char buf[32];
  const long total = static_cast<long>(s + 0.5);
  std::snprintf(buf, sizeof buf, "%ld:%02ld", total / 60, total % 60);
  return buf;
}

// The last non-empty line of a process's output: usually the reason it died.
std::string last_line(const std::string& output) {
  std::istringstream in(output);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty() && line.rfind("==", 0) != 0) last = line;  // skip valgrind's "==pid==" chatter
  }
  return last.size() > 200 ? last.substr(0, 200) : last;
}

std::optional<nlohmann::json> read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

std::string fmt_g(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);  // Google Benchmark 1.7.1 takes "0.05", not "0.05s"
  return buf;
}

// Everything the jobs share: options, sides, the run's temporary directory, the instruction counter.
struct Context {
  const std::vector<Side>& sides;
  const RunOptions& options;
  std::string tmp_dir;  // the run's; each process gets its own TMPDIR inside it
  InstructionCounterChoice counter;
  std::atomic<int> next_file{0};
};

std::map<std::string, std::string> job_env(const Context& ctx, const Job& job) {
  const Side& side = ctx.sides[static_cast<std::size_t>(job.side)];
  std::map<std::string, std::string> env = side.extra_env;
  const auto& per_benchmark = job.kind == Kind::kInstructions ? side.instruction_env : side.benchmark_env;
  if (const auto it = per_benchmark.find(job.benchmark->name); it != per_benchmark.end()) {
    for (const auto& [k, v] : it->second) env[k] = v;
  }
  for (const auto& arm : job.experiment->arms) {
    if (arm.name == job.benchmark->arm) {
      for (const auto& [k, v] : arm.env) env[k] = v;
    }
  }
  return env;
}

// A sample that measured nothing, on its job's side (a side-1 failure must never be the baseline's).
Sample job_sample(const Job& job, Verification verification, const std::string& reason) {
  Sample s;
  s.benchmark = job.benchmark->name;
  s.experiment = job.experiment->name;
  s.arm = job.benchmark->arm;
  s.repetition = job.repetition;
  s.side = job.side;
  s.verification = verification;
  s.reason = reason;
  return s;
}

Sample failed_sample(const Job& job, const std::string& reason) { return job_sample(job, Verification::failed, reason); }

// The top functions of a callgrind profile per iteration (of `iterations` counted), the rest summed.
FunctionBreakdown function_breakdown(const CallgrindProfile& p, double iterations) {
  FunctionBreakdown out;
  out.functions = static_cast<int>(p.functions.size());
  std::uint64_t listed = 0;
  for (std::size_t i = 0; i < p.functions.size() && i < static_cast<std::size_t>(kFunctionsRecorded); ++i) {
    out.top.push_back({p.functions[i].function, static_cast<double>(p.functions[i].instructions) / iterations});
    listed += p.functions[i].instructions;
  }
  out.other_per_iteration = static_cast<double>(p.total - listed) / iterations;
  return out;
}

// A calibration process's flag: a short ramp is enough to learn the time per iteration; each ramp
// step re-runs the set-up.
std::string calibration_min_time(const Context& ctx) {
  return "--benchmark_min_time=" + fmt_g(std::max(0.002, 0.25 * ctx.options.plan.batches * ctx.options.plan.sample_time_s));
}

// What a sample takes from its process's timed-region record: measured time, the loop's wall, the
// iterations, and (a GPU benchmark) the SM clock right after it and what throttled it.
void take_record(Sample& s, const nlohmann::json& record) {
  s.measured_s = record.value("measured_s", 0.0);
  s.loop_wall_s = record.value("loop_wall_s", 0.0);
  s.setup_s = record.value("setup_s", 0.0);
  s.after_s = record.value("after_s", 0.0);
  s.verify_s = record.value("verify_s", 0.0);
  s.iterations = record.value("iterations_recorded", std::int64_t{0});
  if (const auto clock = record.find("gpu_clock"); clock != record.end() && clock->is_object()) {
    s.gpu_sm_mhz = clock->value("sm_mhz", 0u);
    s.gpu_sm_max_mhz = clock->value("sm_max_mhz", 0u);
    s.gpu_throttling = clock->value("throttling", "");
  }
}

// --verbose: each process as it is launched, its command line and what the harness set in its
// environment (layout padding, preloads, the start gate, its TMPDIR).
template <typename Env>
void say_launch(const std::vector<std::string>& argv, const Env& env) {
  if (!speaks(Verbosity::verbose)) return;
  std::string line = "pairbench: launch";
  for (const std::string& a : argv) line += " " + a;
  for (const auto& [key, value] : env) {
    line += " " + key + "=" + (value.size() > 40 ? std::to_string(value.size()) + " bytes" : value);
  }
  say(Verbosity::verbose) << line << "\n";
}

// Runs one process and turns what it left behind into a sample (also for calibration, whose
// sample carries the record in `gbench["pairbench_record"]` and is not kept). Nothing when
// pairbench was interrupted while it ran (or before it started): that process measured nothing.
// `launched`: a duet process's place in its pair's launch order as launch_units launched it (0:
// first), told to the process in PAIRBENCH_DUET_LAUNCHED ("first"/"second"; the product's benches
// ignore it, the simulated bench may declare an advantage to the side launched first) and
// recorded as the row's duet_lead: what was launched, not what was planned (Job::lead).
std::optional<Sample> run_job(Context& ctx, const Job& job, const StartGate* gate = nullptr, int gate_side = -1,
                              int launched = -1) {
  const int id = ctx.next_file++;
  const std::string stem = ctx.tmp_dir + "/p" + std::to_string(id);
  const std::string out_path = stem + ".json", record_path = stem + ".record.json", count_path = stem + ".callgrind";
  // The process's own TMPDIR (kernels/common/scratch.h's TempDir honours it): removed below with
  // whatever is in it, so a process killed at its time limit or by a crash leaks nothing.
  const std::string process_tmp = stem + ".tmp";
  std::error_code ec;
  if (!fs::create_directory(process_tmp, ec)) {
    return failed_sample(job, "cannot create its temporary directory " + process_tmp + ": " +
                                  (ec ? ec.message() : "it exists already"));
  }
  std::vector<std::string> argv;
  if (job.kind == Kind::kInstructions) argv = instruction_counter_prefix(ctx.counter, count_path);
  const std::vector<std::string> binaries = binaries_of(*job.experiment);
  for (const std::string& a : {layout_binary(binaries, job.layout),
                               "--pairbench_profile=" + ctx.options.profile,
                               "--pairbench_only=" + job.benchmark->name, "--benchmark_out=" + out_path,
                               std::string("--benchmark_out_format=json"), std::string("--benchmark_repetitions=1"),
                               "--pairbench_record=" + record_path}) {
    argv.push_back(a);
  }
  if (job.kind == Kind::kCalibrate) {
    argv.push_back(calibration_min_time(ctx));
  } else {
    argv.push_back("--pairbench_iterations=" + std::to_string(job.iterations));
  }
  if (job.kind == Kind::kTime && !job.check) argv.push_back("--pairbench_check=0");
  // Calibration too: its batches show a stall inside the ramp (calibration_problem).
  if (job.kind != Kind::kInstructions) argv.push_back("--pairbench_batches=" + std::to_string(ctx.options.plan.batches));
  if (job.kind == Kind::kInstructions) argv.push_back("--pairbench_count_instructions=" + ctx.counter.name);

  // The simulator runs the timed regions ~50x slower: give it room.
  const double limit = job.kind == Kind::kInstructions ? 10 * ctx.options.timeout_s : ctx.options.timeout_s;
  auto env = job_env(ctx, job);
  for (const auto& [k, v] : layout_env(job.layout)) env[k] = v;
  env["TMPDIR"] = process_tmp;
  if (launched >= 0) env["PAIRBENCH_DUET_LAUNCHED"] = launched == 0 ? "first" : "second";
  std::vector<int> gate_fds;
  if (gate) {
    env["PAIRBENCH_START_GATE"] = gate->env_value(gate_side);
    gate_fds = gate->child_fds(gate_side);
  }
  say_launch(argv, env);
  const ProcessResult pr =
      run_process(argv, env, std::chrono::duration<double>(limit), job.cpus, 64u << 10, gate_fds);
  const auto gbench = read_json(out_path);
  const auto record = read_json(record_path);
  // Callgrind's output: its total and every function's own share of it (a file it cannot use,
  // truncated say, leaves the process without a count, with why).
  std::optional<CallgrindProfile> callgrind;
  std::string callgrind_problem;
  if (job.kind == Kind::kInstructions && ctx.counter.name == "callgrind" && fs::exists(count_path)) {
    try {
      callgrind = read_callgrind_profile(count_path);
    } catch (const std::runtime_error& e) {
      callgrind_problem = e.what();
    }
  }
  for (const auto& p : {out_path, record_path, count_path}) fs::remove(p, ec);
  fs::remove_all(process_tmp, ec);
  if (pr.status == ProcessResult::Status::kInterrupted) return std::nullopt;

  Sample s;
  if (pr.status == ProcessResult::Status::kExited && gbench) {
    s = sample_from_gbench(*gbench, *job.experiment, *job.benchmark, job.repetition);
  } else {
    std::string reason = pr.describe();
    if (const std::string tail = last_line(pr.output); !tail.empty() && pr.status != ProcessResult::Status::kTimedOut) {
      reason += ": " + tail;
    }
    s = failed_sample(job, reason);
  }
  s.process_wall_s = pr.wall_s;
  s.side = job.side;
  s.pair = job.pair;
  s.duet_lead = job.pair >= 0 && launched == 0;
  s.cpu = job.cpus.empty() ? -1 : job.cpus.front();
  s.cpus = job.cpus;
  s.iterations = job.iterations;
  s.layout = job.layout;
  if (!s.has_value || !has_usable_value(s.verification)) return s;

  if (job.kind == Kind::kCalibrate) {
    if (record) s.gbench["pairbench_record"] = *record;
    return s;
  }
  if (!record) {
    return failed_sample(job, "the process wrote no timed-region record (--pairbench_record)");
  }
  take_record(s, *record);
  if (job.kind == Kind::kTime) {
    add_batches(s, *record, *job.experiment);
    return s;
  }
  // Instructions per iteration, in place of the metric.
  std::optional<double> total;
  if (ctx.counter.name == "callgrind" && callgrind) total = static_cast<double>(callgrind->total);
  if (ctx.counter.name == "perf" && record->contains("instructions")) total = (*record)["instructions"].get<double>();
  s.instrument = Instrument::instructions;
  s.batches.clear();
  const auto counted = record->value("counted_regions", std::int64_t{0});  // the first region is left out
  if (!total || counted <= 0 || *total <= 0) {
    std::string why = record->contains("instruction_error") ? ": " + (*record)["instruction_error"].get<std::string>()
                                                            : std::string();
    if (!callgrind_problem.empty()) why = ": " + callgrind_problem;
    Sample f = failed_sample(job, ctx.counter.name + " gave no instruction count" + why);
    f.instrument = Instrument::instructions;
    f.process_wall_s = pr.wall_s;
    return f;
  }
  s.metric_value = *total / static_cast<double>(counted);
  if (callgrind) s.functions = function_breakdown(*callgrind, static_cast<double>(counted));
  return s;
}

// The key under which a job may share a process with others (RunOptions::share_processes): its
// experiment and its arm's environment; "" = it runs in a process of its own (its binary cannot
// share, its experiment measures the process's own history, or a side plants work in it).
std::string share_key(const Job& j, const std::vector<Side>& sides) {
  if (!j.benchmark->shared_process) return "";
  for (const Side& side : sides) {
    if (side.benchmark_env.count(j.benchmark->name)) return "";
  }
  std::string key = j.experiment->name;
  for (const auto& arm : j.experiment->arms) {
    if (arm.name != j.benchmark->arm) continue;
    for (const auto& [k, v] : arm.env) key += "|" + k + "=" + v;
  }
  return key;
}

// The jobs that would each run alone, `singles`, as units: one process each, or (sharing) one
// shared process per key, chunk and side, chunks of at most `max_shared` benchmarks (by name,
// the same chunks on both sides). A unit of several jobs then carries its chunk in Job::share.
std::vector<std::vector<Job>> single_units(std::vector<Job> singles, const std::vector<Side>& sides,
                                           const RunOptions& options) {
  std::vector<std::vector<Job>> units;
  if (!options.share_processes || options.max_shared < 2) {
    for (const Job& j : singles) units.push_back({j});
    return units;
  }
  std::map<std::string, std::set<std::string>> names;  // key -> its benchmarks, both sides
  std::vector<std::string> keys;
  for (const Job& j : singles) {
    keys.push_back(share_key(j, sides));
    if (!keys.back().empty()) names[keys.back()].insert(j.benchmark->name);
  }
  std::map<std::string, std::string> chunk_of;  // benchmark -> key#chunk
  for (const auto& [key, members] : names) {
    if (members.size() < 2) continue;
    const std::size_t chunks = (members.size() + static_cast<std::size_t>(options.max_shared) - 1) /
                               static_cast<std::size_t>(options.max_shared);
    std::size_t i = 0;
    for (const std::string& name : members) chunk_of[name] = key + "#" + std::to_string(i++ % chunks);
  }
  std::map<std::pair<std::string, int>, std::size_t> unit_of;  // (chunk, side) -> its unit
  for (std::size_t k = 0; k < singles.size(); ++k) {
    Job& j = singles[k];
    const auto chunk = keys[k].empty() ? chunk_of.end() : chunk_of.find(j.benchmark->name);
    if (chunk == chunk_of.end()) {
      units.push_back({j});
      continue;
    }
    j.share = chunk->second;
    const auto [it, added] = unit_of.emplace(std::make_pair(j.share, j.side), units.size());
    if (added) units.emplace_back();
    units[it->second].push_back(j);
  }
  return units;
}

// A time process's sample of `job` from what it left: its Google Benchmark entry and its
// timed-region record (absent: the process's `failure` names why).
Sample time_sample(const Job& job, const std::optional<nlohmann::json>& gbench,
                   const std::optional<nlohmann::json>& record, const std::string& failure, double wall_s) {
  Sample s = gbench ? sample_from_gbench(*gbench, *job.experiment, *job.benchmark, job.repetition)
                    : failed_sample(job, failure);
  s.process_wall_s = wall_s;
  s.side = job.side;
  s.iterations = job.iterations;
  s.layout = job.layout;
  if (!s.has_value || !has_usable_value(s.verification)) return s;
  if (job.kind == Kind::kCalibrate) {  // as run_job's: the record rides along in the entry
    if (record) s.gbench["pairbench_record"] = *record;
    return s;
  }
  if (!record) {
    Sample f = failed_sample(job, "the process wrote no timed-region record");
    f.process_wall_s = wall_s;
    return f;
  }
  take_record(s, *record);
  add_batches(s, *record, *job.experiment);
  return s;
}

// One process for the time jobs of a shared unit, in their order (bench --pairbench_plan): each
// benchmark's JSON and record are written as it ends, so a crash or hang costs only the benchmark
// it happened in, recorded failed with the process's reason; the benchmarks after it run again in
// a new process. A benchmark's process wall is its own span in the process plus an equal share
// of the start and exit. Nothing for the jobs not finished when pairbench was interrupted.
std::vector<std::optional<Sample>> run_shared(Context& ctx, const std::vector<Job>& jobs, int& next_shared_id) {
  std::vector<std::optional<Sample>> results(jobs.size());
  std::size_t from = 0;
  while (from < jobs.size()) {
    const int id = ctx.next_file++;
    const int shared_id = next_shared_id++;
    const std::string stem = ctx.tmp_dir + "/p" + std::to_string(id);
    const std::string process_tmp = stem + ".tmp";
    std::error_code ec;
    if (!fs::create_directory(process_tmp, ec)) {
      for (std::size_t k = from; k < jobs.size(); ++k) {
        results[k] = failed_sample(jobs[k], "cannot create its temporary directory " + process_tmp);
      }
      return results;
    }
    nlohmann::json plan{{"benchmarks", nlohmann::json::array()}};
    for (std::size_t k = from; k < jobs.size(); ++k) {
      const std::string member = stem + "." + std::to_string(k);
      plan["benchmarks"].push_back({{"name", jobs[k].benchmark->name}, {"iterations", jobs[k].iterations},
                                    {"out", member + ".json"}, {"record", member + ".record.json"},
                                    {"check", jobs[k].kind != Kind::kTime || jobs[k].check}});
    }
    const std::string plan_path = stem + ".plan.json";
    write_json_atomically(plan_path, plan);
    const Job& first = jobs[from];
    std::vector<std::string> argv = {layout_binary(binaries_of(*first.experiment), first.layout),
                                           "--pairbench_profile=" + ctx.options.profile,
                                           "--pairbench_plan=" + plan_path, "--benchmark_repetitions=1",
                                           "--pairbench_batches=" + std::to_string(ctx.options.plan.batches)};
    if (first.kind == Kind::kCalibrate) argv.push_back(calibration_min_time(ctx));
    auto env = job_env(ctx, first);  // the same for every job of the unit (round_units_of)
    for (const auto& [k, v] : layout_env(first.layout)) env[k] = v;
    env["TMPDIR"] = process_tmp;
    const double limit = ctx.options.timeout_s * static_cast<double>(jobs.size() - from);
    say_launch(argv, env);
    const ProcessResult pr = run_process(argv, env, std::chrono::duration<double>(limit), std::vector<int>{});
    std::vector<std::optional<nlohmann::json>> gbench, record;
    for (std::size_t k = from; k < jobs.size(); ++k) {
      const std::string member = stem + "." + std::to_string(k);
      gbench.push_back(read_json(member + ".json"));
      record.push_back(read_json(member + ".record.json"));
      for (const char* suffix : {".json", ".record.json", ".json.partial", ".record.json.partial"}) {
        fs::remove(member + suffix, ec);
      }
    }
    fs::remove(plan_path, ec);
    fs::remove_all(process_tmp, ec);
    // The benchmarks that ended: those with both outputs, up to the first without.
    std::size_t done = 0;
    while (done < gbench.size() && gbench[done] && record[done] && record[done]->contains("finished_s")) ++done;
    const double last_finished = done > 0 ? (*record[done - 1])["finished_s"].get<double>() : 0.0;
    const bool all_done = done == gbench.size();
    const double start_share = all_done && done > 0 ? std::max(0.0, pr.wall_s - last_finished) / static_cast<double>(done) : 0.0;
    double previous = 0;
    for (std::size_t k = 0; k < done; ++k) {
      const double finished = (*record[k])["finished_s"].get<double>();
      Sample s = time_sample(jobs[from + k], gbench[k], record[k], "", finished - previous + start_share);
      previous = finished;
      s.shared_process = shared_id;
      s.shared_benchmarks = static_cast<int>(gbench.size());
      s.shared_position = static_cast<int>(k);
      results[from + k] = std::move(s);
    }
    if (all_done) return results;
    if (pr.status == ProcessResult::Status::kInterrupted) return results;  // the rest measured nothing
    // The benchmark it was running: failed with the process's reason; the rest run again.
    const Job& failed_job = jobs[from + done];
    std::string reason = pr.describe();
    if (pr.status == ProcessResult::Status::kExited && pr.exit_code == 0) {
      reason = "the process ended without its outputs";
    } else if (const std::string tail = last_line(pr.output); !tail.empty() && pr.status != ProcessResult::Status::kTimedOut) {
      reason += ": " + tail;
    }
    Sample s = failed_sample(failed_job, reason);
    s.process_wall_s = pr.wall_s - last_finished;
    s.shared_process = shared_id;
    s.shared_benchmarks = static_cast<int>(gbench.size());
    s.shared_position = static_cast<int>(done);
    results[from + done] = std::move(s);
    from += done + 1;
  }
  return results;
}

// What an uncalibrated benchmark's processes are sized by.
const Calibration kUncalibrated{1e-3, 1e-3, ""};

struct Calibrated {
  std::map<std::string, std::int64_t> time_iterations, instruction_iterations;
  int calibrated = 0;
  double wall_s = 0;
  std::set<std::string> checked;  // benchmarks whose calibration passed its check, no ramp of it wrong
  std::set<std::string> ramp_found_wrong;  // benchmarks a retried ramp found wrong
};

// Why a calibration process's record cannot size the benchmark ("" when it can): no value, or its
// in-process batches orders of magnitude apart (a stall or hang inside the ramp's last step).
std::string calibration_problem(const Sample& s) {
  if (!s.has_value || !s.gbench.contains("pairbench_record")) {
    return s.reason.empty() ? "the calibration process produced no timing" : s.reason;
  }
  const auto& rec = s.gbench["pairbench_record"];
  if (rec.value("iterations_recorded", 0.0) <= 0 || rec.value("measured_s", 0.0) <= 0) {
    return "the calibration process timed no iteration";
  }
  const auto seconds = rec.value("batch_seconds", std::vector<double>{});
  const auto iterations = rec.value("batch_iterations", std::vector<double>{});
  double lo = 0, hi = 0;
  for (std::size_t b = 0; b < std::min(seconds.size(), iterations.size()); ++b) {
    if (iterations[b] <= 0 || seconds[b] <= 0) continue;
    const double per = seconds[b] / iterations[b];
    lo = lo > 0 ? std::min(lo, per) : per;
    hi = std::max(hi, per);
  }
  if (wildly_off(lo, hi)) {
    char why[200];
    std::snprintf(why, sizeof why, "calibration refused: its batches took from %.3g to %.3g s per iteration", lo, hi);
    return why;
  }
  return "";
}

// A calibration process's seconds per iteration (0 when it timed none).
double calibration_per_iteration(const Sample& s) {
  if (!s.has_value || !s.gbench.contains("pairbench_record")) return 0;
  const auto& rec = s.gbench["pairbench_record"];
  const double n = rec.value("iterations_recorded", 0.0), measured = rec.value("measured_s", 0.0);
  return n > 0 && measured > 0 ? measured / n : 0;
}

// Whether a calibration ramp may have been fooled by a stall: it ended on fewer iterations than
// the plan's batches, or its batches disagree by orders of magnitude. A process that crashed,
// hung or timed nothing is not run again (it would do the same, at the cost of its timeout).
bool worth_another_ramp(const Sample& s, int batches) {
  if (!(calibration_per_iteration(s) > 0)) return false;
  if (s.gbench["pairbench_record"].value("iterations_recorded", 0.0) < std::max(2, batches)) return true;
  return !calibration_problem(s).empty();
}

// Whether calibration `a` is to be kept over `b`: usable where `b` is not, else the faster.
bool better_calibration(const Sample& a, const Sample& b) {
  const double pa = calibration_per_iteration(a), pb = calibration_per_iteration(b);
  if (!(pa > 0)) return false;
  const bool a_ok = calibration_problem(a).empty(), b_ok = pb > 0 && calibration_problem(b).empty();
  if (a_ok != b_ok) return a_ok;
  return !(pb > 0) || pa < pb;
}

// Fixed iteration counts for every runnable benchmark: from the cache, or from one calibration
// process (Google Benchmark's ramp to the profile's measured time per process) that is not kept.
// A benchmark that cannot be calibrated is remembered in the cache with why and not retried
// (--recalibrate retries); its processes run the fallback count and the run names it once.
Calibrated calibrate(Context& ctx, const std::vector<Job>& runnable, CalibrationCache& cache) {
  Calibrated out;
  const auto start = Clock::now();
  std::map<std::string, const Job*> first;  // one job per benchmark name (side 0's binary first)
  for (const Job& j : runnable) first.emplace(j.benchmark->name, &j);
  std::vector<const Job*> missing;
  for (const auto& [name, job] : first) {
    if (ctx.options.recalibrate || (!cache.find(name) && !cache.failure(name))) missing.push_back(job);
  }
  // Every ramp in a shared process where its benchmark may share one (one ramp each, in name
  // order; single_units), else one per process. A ramp can be fooled by a stall (a preemption on
  // a loaded machine): one that stopped after fewer iterations than the plan has batches has no
  // batches to show it, and one 150 ms stall of its first iteration reads as 150 ms per iteration,
  // every later process then running one iteration; one whose batches show it is refused. Stalls
  // only add time, so such a ramp runs again (twice at most, together with the others that need
  // it) and the fastest unrefused one is kept.
  std::vector<Job> ramps;
  for (const Job* j : missing) {
    Job c = *j;
    c.kind = Kind::kCalibrate;
    c.repetition = -1;
    ramps.push_back(std::move(c));
  }
  int shared_id = 0;
  auto ramp_all = [&](const std::vector<Job>& jobs) {
    std::map<std::string, std::optional<Sample>> out;
    for (const std::vector<Job>& unit : single_units(jobs, ctx.sides, ctx.options)) {
      if (unit.front().share.empty()) {
        out[unit.front().benchmark->name] = run_job(ctx, unit.front());
        continue;
      }
      std::vector<std::optional<Sample>> results = run_shared(ctx, unit, shared_id);
      for (std::size_t k = 0; k < unit.size(); ++k) out[unit[k].benchmark->name] = std::move(results[k]);
    }
    return out;
  };
  std::map<std::string, std::optional<Sample>> ramped = ramp_all(ramps);
  for (int retry = 0; retry < 2; ++retry) {
    std::vector<Job> again;
    for (const Job& c : ramps) {
      const std::optional<Sample>& r = ramped[c.benchmark->name];
      if (r && worth_another_ramp(*r, ctx.options.plan.batches)) again.push_back(c);
    }
    if (again.empty()) break;
    for (auto& [name, second] : ramp_all(again)) {
      std::optional<Sample>& kept = ramped[name];
      if (second && second->verification == Verification::incorrect) out.ramp_found_wrong.insert(name);
      if (!second) {
        kept.reset();  // interrupted
      } else if (better_calibration(*second, *kept)) {
        kept = std::move(second);
      }
    }
  }
  int done = 0;
  for (const Job& c : ramps) {
    std::optional<Sample>& result = ramped[c.benchmark->name];
    if (!result) break;  // interrupted: the timed loop launches nothing either
    const Sample& s = *result;
    ++done;
    if (ctx.options.progress_tty) {
      say() << "\r\033[Kcalibrating " << done << "/" << missing.size() << " " << c.benchmark->name << std::flush;
    }
    // Not supported here, or wrong: the timed processes report it (and it is no calibration matter).
    if (s.verification == Verification::not_supported || s.verification == Verification::incorrect) continue;
    if (const std::string problem = calibration_problem(s); !problem.empty()) {
      cache.put_failure(c.benchmark->name, problem);
      continue;
    }
    if (s.verification == Verification::passed && !out.ramp_found_wrong.count(c.benchmark->name)) {
      out.checked.insert(c.benchmark->name);
    }
    const auto& rec = s.gbench["pairbench_record"];
    const double n = rec.value("iterations_recorded", 0.0);
    const double measured = rec.value("measured_s", 0.0), wall = rec.value("loop_wall_s", 0.0);
    cache.put(c.benchmark->name, {measured / n, (n > 1 ? wall / (n - 1) : wall / n), utc_stamp("%Y-%m-%dT%H:%M:%SZ")});
    ++out.calibrated;
  }
  if (ctx.options.progress_tty && !missing.empty()) say() << "\r\033[K";
  if (!missing.empty() && speaks(Verbosity::normal)) {
    std::cerr << "pairbench: calibrated " << out.calibrated << " of " << missing.size() << " benchmarks ("
              << std::fixed;
    const auto precision = std::cerr.precision(1);
    std::cerr << std::chrono::duration<double>(Clock::now() - start).count() << " s); cache "
              << (cache.path().empty() ? "in memory" : cache.path()) << "\n";
    std::cerr.unsetf(std::ios::fixed);
    std::cerr.precision(precision);
  }
  for (const auto& [name, job] : first) {
    const Calibration* c = cache.find(name);
    if (const auto* f = cache.failure(name)) {
      say(Verbosity::quiet) << "pairbench: " << name << " is not calibrated (" << f->reason << (f->at.empty() ? "" : ", " + f->at)
                << "): it runs " << planned_iterations(kUncalibrated, ctx.options.plan)
                << " iterations per process; --recalibrate tries again\n";
    }
    // Uncalibrated: the fallback count (the timed processes say why where they fail).
    const std::int64_t n = planned_iterations(c ? *c : kUncalibrated, ctx.options.plan);
    out.time_iterations[name] = n;
    out.instruction_iterations[name] = instruction_iterations(c ? *c : kUncalibrated, n);
  }
  out.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

}  // namespace

Sample sample_from_gbench(const nlohmann::json& out, const ExperimentEntry& e, const BenchmarkEntry& b,
                          int repetition) {
  Sample s;
  s.benchmark = b.name;
  s.experiment = e.name;
  s.arm = b.arm;
  s.repetition = repetition;
  const nlohmann::json* run = nullptr;
  if (out.contains("benchmarks")) {
    for (const auto& entry : out["benchmarks"]) {
      if (entry.value("run_type", "iteration") == "iteration") run = &entry;
    }
  }
  if (!run) {
    s.verification = Verification::failed;
    s.reason = "no result in the benchmark's JSON output";
    return s;
  }
  if (run->value("error_occurred", false)) {
    const std::string message = run->value("error_message", "");
    s.verification = verification_from_error(message);
    s.reason = strip_status(message);
    return s;
  }
  s.gbench = *run;
  if (!run->contains(e.metric) || !(*run)[e.metric].is_number()) {
    s.verification = Verification::failed;
    s.reason = "benchmark did not report its metric '" + e.metric + "'";
    return s;
  }
  s.metric_value = (*run)[e.metric].get<double>();
  s.has_value = std::isfinite(s.metric_value) && s.metric_value > 0;
  if (!s.has_value) {
    s.verification = Verification::failed;
    s.reason = "metric '" + e.metric + "' is not a positive number";
    return s;
  }
  // 1: checked in this process; 2: its check was not due here (bench experiment.h, check_due).
  const double verified = run->value("verified", 0.0);
  s.verification = verified == 1.0 || verified == 2.0 ? Verification::passed : Verification::not_verified;
  s.checked_elsewhere = verified == 2.0;
  return s;
}

void add_batches(Sample& s, const nlohmann::json& record, const ExperimentEntry& e) {
  s.batches.clear();
  if (e.time_relation == "none" || !s.has_value) return;
  const auto iterations = record.value("batch_iterations", std::vector<double>{});
  const auto seconds = record.value("batch_seconds", std::vector<double>{});
  const double total_n = record.value("iterations_recorded", 0.0), total_s = record.value("measured_s", 0.0);
  if (iterations.size() != seconds.size() || iterations.size() < 2 || total_n <= 0 || total_s <= 0) return;
  const double mean_per_iteration = total_s / total_n;
  for (std::size_t k = 0; k < iterations.size(); ++k) {
    if (!(iterations[k] > 0) || !(seconds[k] > 0)) continue;
    const double per_iteration = seconds[k] / iterations[k];
    s.batches.push_back(e.time_relation == "proportional" ? s.metric_value * per_iteration / mean_per_iteration
                                                          : s.metric_value * mean_per_iteration / per_iteration);
  }
}

RunOutcome run_experiments(const std::vector<ExperimentEntry>& experiments, const RunOptions& options) {
  return run_sides({Side{"", experiments, {}, {}, {}}}, options);
}

namespace {

// Arms that cannot run here are recorded once (as not_supported samples) and never launched.
std::vector<Job> runnable_jobs(const std::vector<Side>& sides, RunOutcome& outcome) {
  std::vector<Job> runnable;
  for (std::size_t side = 0; side < sides.size(); ++side) {
    for (const auto& e : sides[side].experiments) {
      for (const auto& b : e.benchmarks) {
        if (b.available) {
          runnable.push_back({&e, &b, 0, static_cast<int>(side)});
        } else {
          Sample s;
          s.benchmark = b.name;
          s.experiment = e.name;
          s.arm = b.arm;
          s.verification = Verification::not_supported;
          s.reason = b.reason;
          s.side = static_cast<int>(side);
          outcome.samples.push_back(s);
        }
      }
    }
  }
  return runnable;
}

// Cores per side of a duet pair: the larger of the two sides' declared threads (an old build's
// listing declares none: 1).
int pair_threads(const Job& a, const Job& b) { return std::max({1, a.benchmark->threads, b.benchmark->threads}); }

// Whether a benchmark gets instruction-counting processes under `counter`: where its experiment
// declares counts meaningful, unless (callgrind) one iteration is too slow to simulate.
enum class Counting { kNo, kTooSlow, kYes };
Counting counting_of(const Job& j, const std::string& counter, const CalibrationCache& cache) {
  if (counter.empty() || !j.benchmark->instructions) return Counting::kNo;
  const Calibration* c = cache.find(j.benchmark->name);
  if (counter == "callgrind" && c && c->measured_s_per_iteration > kMaxSimulatedIterationS) return Counting::kTooSlow;
  return Counting::kYes;
}

// "3.5 s", "0.42 s", "35 s".
std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s >= 10 ? "%.0f s" : "%.2g s", s);
  return buf;
}

// The benchmarks whose instruction counts exercise the same code: one experiment's arm at the same
// non-numeric grid values (op, device, mode), whatever its sizes. "precision.cpu_gemm_loops/blocked"
// for every n:, "precision.bandwidth_ops/bf16|device:cpu|op:layer_norm" for every elements:.
std::string counting_family(const ExperimentEntry& e, const BenchmarkEntry& b) {
  std::string key = e.name + "/" + b.arm;
  for (const auto& [axis, value] : b.params) {
    char* end = nullptr;
    (void)std::strtod(value.c_str(), &end);
    const bool numeric = !value.empty() && end && *end == '\0';
    key += "|" + axis + (numeric ? "" : ":" + value);
  }
  return key;
}

// Instructions per iteration follow the code, not the size: a benchmark whose one counting process
// costs more than its whole counting budget is not counted where a cheaper grid point of its
// family (counting_family) is; that point covers its code. The cheapest known point of a family is
// always counted. Only under an instruction budget (the nightly), and only from walls learnt here.
void cover_costly_counting(RunPlan& plan, const std::vector<Job>& runnable, const RunOptions& options,
                           const std::string& counter) {
  if (!(options.instruction_budget_s > 0)) return;
  std::map<std::string, std::string> family_of;
  for (const Job& j : runnable) family_of.emplace(j.benchmark->name, counting_family(*j.experiment, *j.benchmark));
  std::map<std::string, BenchmarkPlan*> cheapest;  // per family, among the counted points with a known wall
  for (BenchmarkPlan& b : plan.benchmarks) {
    if (b.profile_instruction_processes == 0 || !(b.instruction_wall_s > 0)) continue;
    BenchmarkPlan*& c = cheapest[family_of.at(b.benchmark)];
    if (!c || b.instruction_wall_s < c->instruction_wall_s) c = &b;
  }
  for (BenchmarkPlan& b : plan.benchmarks) {
    if (b.profile_instruction_processes == 0 || !(b.instruction_wall_s > options.instruction_budget_s)) continue;
    const BenchmarkPlan* c = cheapest.at(family_of.at(b.benchmark));
    if (c == &b) continue;
    b.instruction_processes = 0;
    b.counted_at = c->benchmark;
    b.reason = b.reason.substr(0, b.reason.find("; instructions ")) + "; instructions 0 of " +
               std::to_string(b.profile_instruction_processes) + ": " + seconds_text(b.instruction_wall_s) + " per " +
               counter + " process, more than the whole budget of " + seconds_text(options.instruction_budget_s) +
               "; its code is counted at " + c->benchmark + " (" + seconds_text(c->instruction_wall_s) + " per process)";
  }
}

// Every runnable benchmark's processes under the profile's budgets (calibration.h, budgeted_processes),
// from what its processes took in earlier runs here; `iterations`: per benchmark, the count its
// time processes run (absent: not known, so neither is its wall). Each benchmark once, whatever
// the sides; its processes on every side.
RunPlan plan_processes(const std::vector<Job>& runnable, const RunOptions& options, const CalibrationCache& cache,
                       const std::map<std::string, std::int64_t>& iterations, const std::string& counter) {
  RunPlan plan;
  plan.budgeted = options.process_budget_s > 0 || options.instruction_budget_s > 0;
  plan.process_budget_s = options.process_budget_s;
  plan.instruction_budget_s = options.instruction_budget_s;
  plan.min_repetitions = options.min_repetitions;
  plan.min_instruction_processes = options.min_instruction_processes;
  std::map<std::string, const Job*> first;
  std::map<std::string, int> sides;
  for (const Job& j : runnable) {
    first.emplace(j.benchmark->name, &j);
    ++sides[j.benchmark->name];
  }
  for (const auto& [name, job] : first) {
    BenchmarkPlan b;
    b.benchmark = name;
    const ProcessWalls* walls = cache.walls(name);
    const auto it = iterations.find(name);
    if (it != iterations.end()) b.process_wall_s = projected_process_wall_s(walls, cache.find(name), it->second);
    b.profile_processes = options.repetitions;
    b.processes = budgeted_processes(options.process_budget_s, b.process_wall_s, options.min_repetitions,
                                     options.repetitions);
    b.reason = std::to_string(b.processes) + " of " + std::to_string(b.profile_processes) + ": ";
    if (!(b.process_wall_s > 0)) {
      b.reason += "its process wall is not known here yet";
    } else {
      b.reason += seconds_text(b.process_wall_s) + " per process";
      if (options.process_budget_s > 0) b.reason += ", budget " + seconds_text(options.process_budget_s);
      if (options.process_budget_s > 0 && b.processes * b.process_wall_s > options.process_budget_s) {
        b.reason += " (the minimum)";
      }
    }
    if (options.instruction_processes > 0 && counting_of(*job, counter, cache) == Counting::kYes) {
      b.profile_instruction_processes = options.instruction_processes;
      b.instruction_wall_s = projected_instruction_wall_s(walls, counter);
      b.instruction_processes = budgeted_processes(options.instruction_budget_s, b.instruction_wall_s,
                                                   options.min_instruction_processes, options.instruction_processes);
      b.reason += "; instructions " + std::to_string(b.instruction_processes) + " of " +
                  std::to_string(b.profile_instruction_processes) + ": ";
      if (!(b.instruction_wall_s > 0)) {
        b.reason += "its " + counter + " process wall is not known here yet";
      } else {
        b.reason += seconds_text(b.instruction_wall_s) + " per " + counter + " process";
        if (options.instruction_budget_s > 0) b.reason += ", budget " + seconds_text(options.instruction_budget_s);
      }
    }
    plan.benchmarks.push_back(std::move(b));
  }
  cover_costly_counting(plan, runnable, options, counter);
  for (const BenchmarkPlan& b : plan.benchmarks) {
    const int n = sides[b.benchmark];
    plan.processes += static_cast<std::size_t>(n * (b.processes + b.instruction_processes));
    plan.projected_wall_s += n * (b.processes * b.process_wall_s + b.instruction_processes * b.instruction_wall_s);
    if (!(b.process_wall_s > 0) || (b.instruction_processes > 0 && !(b.instruction_wall_s > 0))) ++plan.unknown;
    if (b.cut()) ++plan.cut;
  }
  return plan;
}

// One more run in the cache's process walls: per benchmark, the median over this run's processes
// that measured something. Sides with planted work (selftest) teach nothing.
void learn_walls(CalibrationCache& cache, const std::vector<Sample>& samples, const std::vector<Side>& sides,
                 const std::string& counter) {
  std::map<std::string, std::vector<double>> overhead, loop, counting, run_per_iteration;
  for (const Sample& s : samples) {
    const Side& side = sides[static_cast<std::size_t>(s.side)];
    if (!side.benchmark_env.empty() || !side.instruction_env.empty()) continue;
    if (!s.has_value || !has_usable_value(s.verification) || !(s.process_wall_s > 0)) continue;
    if (s.instrument == Instrument::instructions) {
      counting[s.benchmark].push_back(s.process_wall_s);
    } else if (s.iterations > 0 && s.loop_wall_s > 0) {
      overhead[s.benchmark].push_back(s.process_wall_s - s.loop_wall_s);
      loop[s.benchmark].push_back(s.loop_wall_s / static_cast<double>(s.iterations));
      // `run` alone (one side) teaches "its time in run"; ab's two sides never do.
      if (sides.size() == 1 && s.measured_s > 0) {
        run_per_iteration[s.benchmark].push_back(s.measured_s / static_cast<double>(s.iterations));
      }
    }
  }
  for (const auto& [name, values] : overhead) {
    cache.record_time_walls(name, stats::median(values), stats::median(loop[name]));
  }
  for (const auto& [name, values] : run_per_iteration) cache.record_run_per_iteration(name, stats::median(values));
  if (counter.empty()) return;
  for (const auto& [name, values] : counting) cache.record_instruction_wall(name, counter, stats::median(values));
}

// What runs at once in one round: one process, or (duet) the same benchmark of both sides, each
// side on as many cores as it runs threads. Where both sides' threads do not fit on the pool at
// once (2 x threads > CPUs), each side is a unit of its own, run one at a time and unpinned as in
// sequential pairing, and the benchmark is named in `sequential` with why. The jobs that run
// alone share processes where they may (single_units).
std::vector<std::vector<Job>> round_units_of(const std::vector<Job>& runnable, const std::vector<Side>& sides,
                                             const RunOptions& options, bool duet, std::size_t pool_cpus,
                                             std::vector<SequentialInDuet>& sequential) {
  const std::map<std::string, std::string>& one_side_at_a_time = options.one_side_at_a_time;
  if (!duet) return single_units(runnable, sides, options);
  std::vector<std::vector<Job>> round_units;
  std::vector<Job> singles;
  std::map<std::string, const Job*> other;
  for (const Job& j : runnable) {
    if (j.side == 1) other.emplace(j.benchmark->name, &j);
  }
  std::set<std::string> paired;
  for (const Job& j : runnable) {
    if (j.side != 0) continue;
    const auto it = other.find(j.benchmark->name);
    if (it == other.end()) {
      singles.push_back(j);
      continue;
    }
    paired.insert(j.benchmark->name);
    const int threads = pair_threads(j, *it->second);
    const bool cuda = j.benchmark->cuda || it->second->benchmark->cuda;
    const auto forced = one_side_at_a_time.find(j.benchmark->name);
    if (!cuda && forced == one_side_at_a_time.end() && 2 * static_cast<std::size_t>(threads) <= pool_cpus) {
      round_units.push_back({j, *it->second});
      continue;
    }
    singles.push_back(j);
    singles.push_back(*it->second);
    // Two processes on one GPU time its time-slicing between their contexts, not the code (9-29x
    // their calibrated time per iteration on an H200, docs/gate.md).
    sequential.push_back({j.benchmark->name, threads,
                          cuda ? std::string("both sides would share the CUDA device")
                          : forced != one_side_at_a_time.end()
                              ? forced->second
                              : std::to_string(threads) + " threads per side need " + std::to_string(2 * threads) +
                                     " cores for both sides at once; " + std::to_string(pool_cpus) + " usable"});
  }
  for (const Job& j : runnable) {
    if (j.side == 1 && !paired.count(j.benchmark->name)) singles.push_back(j);
  }
  for (auto& unit : single_units(std::move(singles), sides, options)) round_units.push_back(std::move(unit));
  return round_units;
}

// Whether a time process's check before timing is drawn: a quarter of them, from the run's seed,
// the benchmark and its repetition, so both sides of a repetition draw alike.
bool check_drawn(std::uint64_t seed, const std::string& benchmark, int repetition) {
  std::uint64_t h = seed ^ 0x636865636bULL;
  for (const char c : benchmark) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ULL;
  h ^= static_cast<std::uint64_t>(repetition) * 0x9E3779B97F4A7C15ULL;
  h ^= h >> 31;
  h *= 0xBF58476D1CE4E5B9ULL;
  h ^= h >> 29;
  return h % 4 == 0;
}

// Blocked randomisation: each round runs every benchmark once, in a fresh random order, so that
// drift over the run spreads evenly over the arms instead of favouring whichever ran first.
// With two sides (`ab`), two rounds make one block and a benchmark's processes of both rounds run
// back to back: its duet pair twice, cores swapped (a crossover), or its sides one at a time in
// the order A B B A (first side drawn at random). The machine's speed drifts in modes that last
// from tens of milliseconds to minutes, each core its own (on a 2-vCPU Zen 3 VM one process of a
// 262144-element axpb ran 1.6x faster than the next in a quarter of processes, and two duet sides
// of one binary differed by 26 % (SD of the log ratio) where two processes back to back on one core
// differed by 5 %); a block's two pairs see the same modes with the sides exchanged, so their mean
// cancels them, and the sampling decides on block means (harness/sampling/paired.cpp add_round). `pool`: the CPUs duet
// pairs are placed on.
std::vector<std::vector<Job>> timed_units(const std::vector<Job>& runnable, const std::vector<Side>& sides,
                                          const RunOptions& options, const Calibrated& cal, const std::vector<int>& pool,
                                          RunOutcome& outcome, std::mt19937_64& rng) {
  std::vector<std::vector<Job>> units;
  const std::vector<std::vector<Job>> round_units =
      round_units_of(runnable, sides, options, outcome.pairing == "duet", pool.size(), outcome.sequential_in_duet);
  // A benchmark's units of one round (its duet pair, or each side's process; a shared process's
  // chunk on each side), in launch order.
  std::vector<std::vector<std::vector<Job>>> groups;
  std::map<std::string, std::size_t> group_of;
  for (const auto& unit : round_units) {
    const std::string key = unit.front().share.empty() ? unit.front().benchmark->name : "shared:" + unit.front().share;
    const auto [it, added] = group_of.emplace(key, groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(unit);
  }
  const bool two_sides = std::any_of(runnable.begin(), runnable.end(), [](const Job& j) { return j.side == 1; });
  const int block = two_sides ? 2 : 1;
  int pair_id = 0;
  for (int r0 = 0; r0 < options.repetitions; r0 += block) {
    std::vector<std::vector<std::vector<Job>>> round = groups;
    std::shuffle(round.begin(), round.end(), rng);
    for (auto& group : round) {
      // Which side goes first (one at a time) or takes the first cores (duet) in the block's first
      // round, drawn: with identical builds a block's mean is then exactly symmetric about 0,
      // whatever the cores' or the drift's own asymmetries (what the robust sequence assumes).
      const std::size_t flip = block == 2 ? static_cast<std::size_t>(std::uniform_int_distribution<int>(0, 1)(rng)) : 0;
      if (group.size() == 2 && flip == 1) std::swap(group[0], group[1]);
      // Duet: whether the side on the pool's first cores is launched first, drawn per block and
      // kept for both its pairs, so that launch order moves with the cores: the block's two pairs
      // then have the same placement and order with the sides exchanged.
      const bool lead_on_first_cores = block == 2 && std::uniform_int_distribution<int>(0, 1)(rng) == 1;
      for (int r = r0; r < std::min(r0 + block, options.repetitions); ++r) {
        if (r > r0 && group.size() == 2) std::swap(group[0], group[1]);
        for (const auto& planned : group) {
          std::vector<Job> unit;
          // A benchmark planned k < n processes (the budget) runs in k of the n rounds, spread
          // evenly over them, so that drift over the run hits it as it hits the others.
          for (const Job& j : planned) {
            const BenchmarkPlan* p = outcome.plan.find(j.benchmark->name);
            const int k_of = p ? p->processes : options.repetitions, n = options.repetitions;
            const int repetition = r * k_of / n;
            if ((r + 1) * k_of / n == repetition) continue;
            unit.push_back(j);
            unit.back().repetition = repetition;
          }
          if (unit.empty()) continue;
          // A shared process runs its benchmarks in an order of its own.
          if (!unit.front().share.empty()) std::shuffle(unit.begin(), unit.end(), rng);
          for (std::size_t k = 0; k < unit.size(); ++k) {
            Job& j = unit[k];
            j.kind = Kind::kTime;
            j.iterations = cal.time_iterations.at(j.benchmark->name);
            j.check_drawn = check_drawn(outcome.seed, j.benchmark->name, j.repetition);
            if (is_pair(unit)) {
              // `threads` cores per side, the first or the second `threads` of the pool; swapped
              // every round, so a core's own quirks hit both sides equally often.
              const auto threads = static_cast<std::size_t>(pair_threads(unit[0], unit[1]));
              const std::size_t first = (k + static_cast<std::size_t>(r) + flip) % 2 * threads;
              j.cpus.assign(pool.begin() + static_cast<std::ptrdiff_t>(first),
                            pool.begin() + static_cast<std::ptrdiff_t>(first + threads));
              j.pair = pair_id;
              j.lead = (first == 0) == lead_on_first_cores;
            }
          }
          if (is_pair(unit)) ++pair_id;
          units.push_back(unit);
        }
      }
    }
  }
  // Each time process's placement: from the run's seed and its index in the planned order, so the
  // same seed gives the same layouts; both sides drawn alike.
  // A shared process draws one for all its benchmarks.
  if (options.layout == "random") {
    std::uint64_t index = 0;
    for (auto& unit : units) {
      if (!unit.front().share.empty()) {
        const ProcessLayout layout = draw_layout(outcome.seed, index++, static_cast<int>(binaries_of(*unit.front().experiment).size()));
        for (Job& j : unit) j.layout = layout;
        continue;
      }
      for (Job& j : unit) {
        j.layout = draw_layout(outcome.seed, index++, static_cast<int>(binaries_of(*j.experiment).size()));
      }
    }
  }
  return units;
}

// Instruction counts do not depend on what else runs: after the timed rounds, one at a time. A
// benchmark too slow to simulate under callgrind is recorded once as not_supported.
void add_instruction_units(std::vector<std::vector<Job>>& units, const std::vector<Job>& runnable, const Context& ctx,
                           const RunOptions& options, const Calibrated& cal, const CalibrationCache& cache,
                           RunOutcome& outcome) {
  if (ctx.counter.name.empty()) return;
  for (int r = 0; r < options.instruction_processes; ++r) {
    for (const Job& base : runnable) {
      const Counting counting = counting_of(base, ctx.counter.name, cache);
      if (counting == Counting::kNo) continue;
      if (counting == Counting::kTooSlow) {
        const Calibration* c = cache.find(base.benchmark->name);
        if (r == 0) {
          char why[160];
          std::snprintf(why, sizeof why, "one iteration takes %.0f ms natively: too slow to simulate (limit %.0f ms)",
                        1e3 * c->measured_s_per_iteration, 1e3 * kMaxSimulatedIterationS);
          Sample s = job_sample(base, Verification::not_supported, why);
          s.instrument = Instrument::instructions;
          outcome.samples.push_back(s);
        }
        continue;
      }
      const BenchmarkPlan* p = outcome.plan.find(base.benchmark->name);
      if (p && !p->counted_at.empty()) {
        if (r == 0) {
          Sample s = job_sample(base, Verification::not_supported,
                                "not counted in this run: one counting process costs more than the whole instruction "
                                "budget; its code is counted at " + p->counted_at);
          s.instrument = Instrument::instructions;
          outcome.samples.push_back(s);
        }
        continue;
      }
      if (p && r >= p->instruction_processes) continue;  // the instruction budget
      Job j = base;
      j.kind = Kind::kInstructions;
      j.repetition = r;
      j.iterations = cal.instruction_iterations.at(j.benchmark->name);
      units.push_back({j});
    }
  }
}

// One progress line per finished process (or, on a terminal, one line rewritten in place).
void report_progress(const Sample& s, const Job& job, const std::vector<Side>& sides, const RunOptions& options,
                     std::size_t done, std::size_t total, double elapsed_s) {
  const bool bad = went_wrong(s.verification);
  const double eta = elapsed_s / static_cast<double>(done) * static_cast<double>(total - done);
  char head[64];
  std::snprintf(head, sizeof head, "[%zu/%zu]", done, total);
  std::string what = s.has_value && !bad ? to_string(s.verification) : to_string(s.verification) + ": " + s.reason;
  if (job.kind == Kind::kInstructions) what = "instructions " + what;
  if (sides.size() > 1) what = sides[static_cast<std::size_t>(job.side)].name + " " + what;
  if (options.progress_tty) {
    if (bad) say(Verbosity::quiet) << "\r\033[K" << job.benchmark->name << " rep " << job.repetition << ": " << what << "\n";
    std::string line = std::string(head) + " " + job.benchmark->name;
    if (line.size() > 90) line = line.substr(0, 87) + "...";
    say() << "\r\033[K" << line << "  ETA " << format_duration(eta) << std::flush;
  } else if (speaks(bad ? Verbosity::quiet : Verbosity::normal)) {  // a failed process is said even when quiet
    std::cerr << head << " " << job.benchmark->name << " rep " << job.repetition << ": " << what << " (" << std::fixed;
    const auto precision = std::cerr.precision(2);
    std::cerr << s.process_wall_s << " s) ETA " << format_duration(eta) << "\n";
    std::cerr.unsetf(std::ios::fixed);
    std::cerr.precision(precision);
  }
}

// Runs the units in order (a duet pair's two processes at once), until done or interrupted.
void launch_units(Context& ctx, const std::vector<std::vector<Job>>& units, RunOutcome& outcome) {
  std::size_t total_processes = 0, done_processes = 0;
  for (const auto& u : units) total_processes += u.size();
  const auto timed_start = Clock::now();
  int sequence = 0, shared_id = 0;
  std::set<std::string> found_wrong;  // check keys of arms a check of this run found incorrect
  // Whether a benchmark's processes may rely on other processes' checks: only where every side's
  // binary takes the request (an older one refuses --pairbench_check), every side has passed a
  // check in this run and none has failed one. Decided for all sides alike, so that both sides of
  // a pair start timing from the same state.
  std::map<std::string, std::size_t> takes_request;  // benchmark -> the sides whose binary lists check_on_request
  for (const Side& side : ctx.sides) {
    for (const ExperimentEntry& e : side.experiments) {
      for (const BenchmarkEntry& b : e.benchmarks) takes_request[b.name] += b.check_on_request;
    }
  }
  const auto may_skip = [&](const std::string& benchmark) {
    if (takes_request[benchmark] != ctx.sides.size()) return false;
    for (std::size_t side = 0; side < ctx.sides.size(); ++side) {
      const std::string key = check_key(static_cast<int>(side), benchmark);
      if (!outcome.checked.count(key) || found_wrong.count(key)) return false;
    }
    return true;
  };
  for (std::vector<Job> unit : units) {
    if (interrupt_signal()) break;  // launch nothing more; what finished is kept
    for (Job& j : unit) j.check = j.check_drawn || !may_skip(j.benchmark->name);
    std::vector<std::optional<Sample>> results(unit.size());
    const double unit_start = std::chrono::duration<double>(Clock::now() - timed_start).count();
    bool gated = false;
    if (!unit.front().share.empty()) {
      results = run_shared(ctx, unit, shared_id);
    } else if (unit.size() == 1) {
      results[0] = run_job(ctx, unit[0]);
    } else {
      // A duet pair: its lead launched first, both held at the start gate where both binaries
      // have one (start_gate.h), so that their timed regions begin together.
      std::optional<StartGate> gate;
      if (std::all_of(unit.begin(), unit.end(), [](const Job& j) { return j.kind == Kind::kTime && j.benchmark->start_gate; })) {
        gate.emplace(static_cast<int>(unit.size()));
        if (!gate->ok()) gate.reset();
      }
      std::vector<std::size_t> order(unit.size());
      std::iota(order.begin(), order.end(), std::size_t{0});
      std::stable_partition(order.begin(), order.end(), [&](std::size_t k) { return unit[k].lead; });
      std::vector<std::thread> threads;
      for (const std::size_t k : order) {
        // Its place in the order it is launched in, here (not the plan's Job::lead): the process
        // is told it and its row records it (run_job).
        const int launched = static_cast<int>(threads.size());
        threads.emplace_back([&, k, launched] {
          results[k] = run_job(ctx, unit[k], gate ? &*gate : nullptr, static_cast<int>(k), launched);
          if (gate) gate->side_ended(static_cast<int>(k));
        });
      }
      if (gate) gated = gate->release(std::chrono::duration<double>(ctx.options.timeout_s));
      for (auto& t : threads) t.join();
    }
    for (std::size_t k = 0; k < unit.size(); ++k) {
      if (!results[k]) continue;  // killed by the interrupt: measured nothing
      Sample& s = *results[k];
      const Job& job = unit[k];
      s.sequence = sequence;
      s.start_s = unit_start;
      s.duet_start_gate = gated;
      if (job.kind == Kind::kInstructions) s.instrument = Instrument::instructions;
      if (job.kind == Kind::kTime && s.verification == Verification::passed && !s.checked_elsewhere) {
        outcome.checked.insert(check_key(job.side, job.benchmark->name));
      }
      if (s.verification == Verification::incorrect) found_wrong.insert(check_key(job.side, job.benchmark->name));
      if (went_wrong(s.verification)) ++outcome.failed_processes;
      ++done_processes;
      report_progress(s, job, ctx.sides, ctx.options, done_processes, total_processes,
                      std::chrono::duration<double>(Clock::now() - timed_start).count());
      outcome.samples.push_back(std::move(s));
    }
    ++sequence;
  }
  if (ctx.options.progress_tty) say() << "\r\033[K";
  // An arm a check of this run found wrong (a drawn check, on that process's inputs) is wrong in
  // every process: those that relied on the others' checks, and those whose own inputs passed,
  // are refused like the process that found it.
  for (Sample& s : outcome.samples) {
    if (s.verification != Verification::passed || !found_wrong.count(check_key(s.side, s.benchmark))) continue;
    ++outcome.failed_processes;
    s.verification = Verification::incorrect;
    s.reason = "another process of this run found this arm wrong in its check before timing";
  }
  outcome.completed_processes = done_processes;
  outcome.planned_processes = total_processes;
  if (done_processes < total_processes) outcome.interrupted_by = interrupt_signal();
}

// GPU samples taken while the GPU slowed its clock (thermal, power): named, each in its row.
void name_throttled(const std::vector<Sample>& samples) {
  std::map<std::string, int> by_reason;
  int throttled = 0;
  for (const Sample& s : samples) {
    if (s.gpu_throttling.empty()) continue;
    ++throttled;
    ++by_reason[s.gpu_throttling];
  }
  if (throttled == 0) return;  // said even when quiet: it bears on whether the figures can be trusted
  std::cerr << "pairbench: " << throttled << " GPU sample(s) ran while the GPU slowed its clock (";
  bool first = true;
  for (const auto& [reason, n] : by_reason) std::cerr << (first ? "" : "; ") << reason << ": " << n, first = false;
  std::cerr << "); each row's gpu_clock names it\n";
}

// Where the processes' wall time went, part by part (issue 36: a sample should cost its work):
// inside the timed loops, before them (set-up and the check before timing), after them, and the
// rest (process start and exit, shared equally among a shared process's benchmarks). With the
// experiments that spend most outside their timed loops, which is what a cheaper sample must cut.
void name_where_wall_went(const std::vector<Sample>& samples) {
  double wall = 0, loop = 0, measured = 0, setup = 0, after = 0;
  std::map<std::string, double> outside_by_experiment;
  int n = 0;
  for (const Sample& s : samples) {
    if (s.instrument != Instrument::time || !(s.process_wall_s > 0) || !(s.loop_wall_s > 0)) continue;
    ++n;
    wall += s.process_wall_s, loop += s.loop_wall_s, measured += s.measured_s, setup += s.setup_s, after += s.after_s;
    outside_by_experiment[s.experiment] += s.process_wall_s - s.loop_wall_s;
  }
  if (n == 0 || !(wall > 0) || !speaks(Verbosity::normal)) return;
  const auto pct = [&](double v) { return fmt_g(std::round(1000 * v / wall) / 10) + " %"; };
  std::cerr << "pairbench: " << n << " samples, " << fmt_g(std::round(wall * 10) / 10) << " s of process wall: timed loops "
            << pct(loop) << " (inside the timed regions " << pct(measured) << "), before them " << pct(setup)
            << ", after them " << pct(after) << ", process start and exit " << pct(std::max(0.0, wall - loop - setup - after))
            << "; most outside the timed loops:";
  std::vector<std::pair<double, std::string>> top;
  for (const auto& [experiment, seconds] : outside_by_experiment) top.emplace_back(seconds, experiment);
  std::sort(top.rbegin(), top.rend());
  for (std::size_t i = 0; i < std::min<std::size_t>(3, top.size()); ++i) {
    std::cerr << (i ? ", " : " ") << top[i].second << " " << fmt_g(std::round(top[i].first * 10) / 10) << " s";
  }
  std::cerr << " (rows: sample_wall)\n";
}

// A benchmark 100x off its calibration has it refused (forgotten: calibrated again next run). One
// now 3x faster or slower than its calibration keeps its iteration count (a new
// count would change the work measured, and with it the baseline comparison) and is named.
void note_drift(CalibrationCache& cache, RunOutcome& outcome) {
  std::map<std::string, std::vector<double>> observed;
  for (const Sample& s : outcome.samples) {
    if (s.instrument == Instrument::time && s.has_value && s.iterations > 0 && s.measured_s > 0) {
      observed[s.benchmark].push_back(s.measured_s / static_cast<double>(s.iterations));
    }
  }
  for (const auto& [name, values] : observed) {
    const Calibration* c = cache.find(name);
    if (c && wildly_off(c->measured_s_per_iteration, stats::median(values))) {
      // Orders of magnitude from its own iterations: the calibration measured something else.
      char why[200];
      std::snprintf(why, sizeof why, "calibration refused: %.3g s per iteration, its processes took %.3g",
                    c->measured_s_per_iteration, stats::median(values));
      say(Verbosity::quiet) << "pairbench: " << name << ": " << why << "; calibrated again in the next run\n";
      outcome.drifted.push_back(name);
      cache.forget(name);
      continue;
    }
    if (c && calibration_drifted(*c, stats::median(values))) {
      outcome.drifted.push_back(name);
      if (!speaks(Verbosity::normal)) continue;
      std::cerr << "pairbench: " << name << " runs " << std::fixed;
      const auto precision = std::cerr.precision(1);
      std::cerr << stats::median(values) / c->measured_s_per_iteration
                << "x its calibrated time per iteration; its iteration count stays (--recalibrate to renew it)\n";
      std::cerr.unsetf(std::ios::fixed);
      std::cerr.precision(precision);
    }
  }
}

// Per benchmark and side, the median over its time processes of measured seconds per iteration
// against the calibration: the same work, in this run's regime (duet pair, load) vs alone.
std::vector<CalibrationRatio> calibration_ratios(const CalibrationCache& cache, const std::vector<Sample>& samples) {
  std::map<std::pair<std::string, int>, std::vector<double>> observed;
  for (const Sample& s : samples) {
    if (s.instrument == Instrument::time && s.has_value && s.iterations > 0 && s.measured_s > 0) {
      observed[{s.benchmark, s.side}].push_back(s.measured_s / static_cast<double>(s.iterations));
    }
  }
  std::vector<CalibrationRatio> out;
  for (const auto& [key, values] : observed) {
    // Against its time in `run` where runs here have taught it (ProcessWalls::run_s_per_iteration),
    // else against the calibration's ramp.
    const ProcessWalls* w = cache.walls(key.first);
    const double in_run = w ? running_median(w->run_s_per_iteration) : 0;
    if (in_run > 0) {
      out.push_back({key.first, key.second, stats::median(values), in_run, true, run_spread(w->run_s_per_iteration)});
      continue;
    }
    const Calibration* c = cache.find(key.first);
    if (!c || !(c->measured_s_per_iteration > 0)) continue;
    out.push_back({key.first, key.second, stats::median(values), c->measured_s_per_iteration, false});
  }
  return out;
}

}  // namespace

RunOutcome run_sides(const std::vector<Side>& sides, const RunOptions& options) {
  RunOutcome outcome;
  outcome.seed = options.seed ? options.seed
                              : static_cast<std::uint64_t>(Clock::now().time_since_epoch().count()) ^ getpid();
  std::mt19937_64 rng(outcome.seed);
  const std::vector<Job> runnable = runnable_jobs(sides, outcome);

  // Under $TMPDIR (or /tmp); removed with everything in it on every way out of this function.
  remove_stale_run_scratch();  // left by a run that was killed or interrupted twice
  const kernels::TempDir run_tmp(run_scratch_prefix());
  Context ctx{sides, options, run_tmp.path().string(), {}};
  const bool any_instructions = options.instruction_processes > 0 &&
                                std::any_of(runnable.begin(), runnable.end(), [](const Job& j) { return j.benchmark->instructions; });
  if (any_instructions) {
    ctx.counter = choose_instruction_counter(options.instruction_counter);
  } else {
    ctx.counter.reason = options.instruction_processes > 0 ? "no selected experiment declares instruction counts meaningful"
                                                           : "not requested (--instruction-processes 0)";
  }
  outcome.instruction_counter = ctx.counter;

  const auto start = Clock::now();
  CalibrationCache cache(options.calibration_path);
  if (!cache.load_problem().empty()) say(Verbosity::quiet) << "pairbench: warning: " << cache.load_problem() << "\n";
  const Calibrated cal = calibrate(ctx, runnable, cache);
  // One side: its calibration processes checked its arms (a run with two sides checks both in
  // their first pair alike).
  if (sides.size() == 1) {
    for (const std::string& name : cal.checked) outcome.checked.insert(check_key(0, name));
  }
  outcome.calibrated = cal.calibrated;
  outcome.calibration_wall_s = cal.wall_s;
  outcome.iterations = cal.time_iterations;
  outcome.plan = plan_processes(runnable, options, cache, cal.time_iterations, ctx.counter.name);

  // Duet pairs: the same benchmark on both sides, started together, each side on its own cores.
  const std::vector<int> cpus = options.duet_cpu_pool.empty() ? kernels::usable_cpu_list() : options.duet_cpu_pool;
  outcome.pairing = options.pairing == "duet" && sides.size() == 2 && cpus.size() >= 2 ? "duet" : "sequential";
  if (options.pairing == "duet" && sides.size() == 2 && outcome.pairing != "duet") {
    say(Verbosity::quiet) << "pairbench: warning: duet pairing needs two sides and two usable CPUs; running sequentially\n";
  }
  if (outcome.pairing == "duet") outcome.duet_cpus = {cpus[0], cpus[1]};

  std::vector<std::vector<Job>> units = timed_units(runnable, sides, options, cal, cpus, outcome, rng);
  add_instruction_units(units, runnable, ctx, options, cal, cache, outcome);
  launch_units(ctx, units, outcome);
  name_throttled(outcome.samples);
  name_where_wall_went(outcome.samples);
  learn_walls(cache, outcome.samples, sides, ctx.counter.name);
  note_drift(cache, outcome);
  outcome.calibration_ratios = calibration_ratios(cache, outcome.samples);
  if (const std::string problem = cache.save(); !problem.empty()) {
    say(Verbosity::quiet) << "pairbench: warning: calibration cache not saved: " << problem << "\n";
  }
  outcome.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return outcome;
}

const BenchmarkPlan* RunPlan::find(const std::string& benchmark) const {
  const auto it = std::lower_bound(benchmarks.begin(), benchmarks.end(), benchmark,
                                   [](const BenchmarkPlan& b, const std::string& name) { return b.benchmark < name; });
  return it != benchmarks.end() && it->benchmark == benchmark ? &*it : nullptr;
}

RunPlan plan_run(const std::vector<ExperimentEntry>& experiments, const RunOptions& options) {
  RunOutcome unused;
  const std::vector<Side> sides = {Side{"", experiments, {}, {}, {}}};  // the jobs point into it
  const std::vector<Job> runnable = runnable_jobs(sides, unused);
  const CalibrationCache cache(options.calibration_path);
  if (!cache.load_problem().empty()) say(Verbosity::quiet) << "pairbench: warning: " << cache.load_problem() << "\n";
  // As run_sides sizes them, without calibrating: a benchmark not in the cache has no count yet.
  std::map<std::string, std::int64_t> iterations;
  for (const Job& j : runnable) {
    const std::string& name = j.benchmark->name;
    if (options.recalibrate) continue;
    if (const Calibration* c = cache.find(name)) {
      iterations[name] = planned_iterations(*c, options.plan);
    } else if (cache.failure(name)) {
      iterations[name] = planned_iterations(kUncalibrated, options.plan);
    }
  }
  const bool any_instructions = options.instruction_processes > 0 &&
                                std::any_of(runnable.begin(), runnable.end(), [](const Job& j) { return j.benchmark->instructions; });
  const std::string counter = any_instructions ? choose_instruction_counter(options.instruction_counter).name : "";
  return plan_processes(runnable, options, cache, iterations, counter);
}

}  // namespace pairbench::harness
