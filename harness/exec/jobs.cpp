// One bench process (or one shared process) for its jobs, and the samples read from what it left:
// its Google Benchmark JSON and its timed-region record (harness/exec/jobs.h).
#include "harness/exec/jobs.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "harness/exec/callgrind_profile.h"
#include "harness/exec/layout.h"
#include "harness/exec/process.h"
#include "harness/exec/say.h"
#include "harness/exec/start_gate.h"
#include "harness/store/run_file.h"

namespace pairbench::harness {
namespace fs = std::filesystem;
namespace detail {

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

Sample failed_sample(const Job& job, const std::string& reason) {
  return job_sample(job, Verification::failed, reason);
}

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
  return "--benchmark_min_time=" +
         fmt_g(std::max(0.002, 0.25 * ctx.options.plan.batches * ctx.options.plan.sample_time_s));
}

// What a sample takes from its process's timed-region record: measured time, the loop's wall, the
// iterations, and (a GPU benchmark) the SM clock right after it and what throttled it.
void take_record(Sample& s, const nlohmann::json& record) {
  s.measured_s = record.value("measured_s", 0.0);
  s.loop_wall_s = record.value("loop_wall_s", 0.0);
  if (const auto w = record.find("work_per_iteration"); w != record.end() && w->is_object()) {
    s.work_per_iteration = w->dump();
  }
  s.setup_s = record.value("setup_s", 0.0);
  s.after_s = record.value("after_s", 0.0);
  s.verify_s = record.value("verify_s", 0.0);
  s.setup_faults = record.value("setup_faults", std::int64_t{-1});
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
// The command line of one process of `job`: its binary (the layout variant it drew), the
// benchmark, where its outputs go, and what kind of process it is (a calibration ramp, fixed
// iterations with or without the check, or counted instructions under `ctx.counter`).
std::vector<std::string> job_argv(const Context& ctx, const Job& job, const std::string& out_path,
                                  const std::string& record_path, const std::string& count_path) {
  std::vector<std::string> argv;
  if (job.kind == Kind::kInstructions) argv = instruction_counter_prefix(ctx.counter, count_path);
  const std::vector<std::string> binaries = binaries_of(*job.experiment);
  for (const std::string& a : {layout_binary(binaries, job.layout), "--pairbench_profile=" + ctx.options.profile,
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
  if (job.kind != Kind::kInstructions)
    argv.push_back("--pairbench_batches=" + std::to_string(ctx.options.plan.batches));
  if (job.kind == Kind::kInstructions) argv.push_back("--pairbench_count_instructions=" + ctx.counter.name);
  return argv;
}

// A counting process's sample: instructions per iteration in place of the metric (callgrind's
// total with its function breakdown, or perf's count from the record), or failed with why.
Sample instruction_sample(const Context& ctx, const Job& job, Sample s, const nlohmann::json& record,
                          const std::optional<CallgrindProfile>& callgrind, const std::string& callgrind_problem) {
  std::optional<double> total;
  if (ctx.counter.name == "callgrind" && callgrind) total = static_cast<double>(callgrind->total);
  if (ctx.counter.name == "perf" && record.contains("instructions")) total = record["instructions"].get<double>();
  s.instrument = Instrument::instructions;
  s.batches.clear();
  const auto counted = record.value("counted_regions", std::int64_t{0});  // the first region is left out
  if (!total || counted <= 0 || *total <= 0) {
    std::string why =
        record.contains("instruction_error") ? ": " + record["instruction_error"].get<std::string>() : std::string();
    if (!callgrind_problem.empty()) why = ": " + callgrind_problem;
    Sample f = failed_sample(job, ctx.counter.name + " gave no instruction count" + why);
    f.instrument = Instrument::instructions;
    f.process_wall_s = s.process_wall_s;
    return f;
  }
  s.metric_value = *total / static_cast<double>(counted);
  if (callgrind) s.functions = function_breakdown(*callgrind, static_cast<double>(counted));
  return s;
}

std::optional<Sample> run_job(Context& ctx, const Job& job, const StartGate* gate, int gate_side, int launched) {
  const int id = ctx.next_file++;
  const std::string stem = ctx.tmp_dir + "/p" + std::to_string(id);
  const std::string out_path = stem + ".json", record_path = stem + ".record.json", count_path = stem + ".callgrind";
  // The process's own TMPDIR (kernels/common/scratch.h's TempDir honours it): removed below with
  // whatever is in it, so a process killed at its time limit or by a crash leaks nothing.
  const std::string process_tmp = stem + ".tmp";
  std::error_code ec;
  if (!fs::create_directory(process_tmp, ec)) {
    return failed_sample(
        job, "cannot create its temporary directory " + process_tmp + ": " + (ec ? ec.message() : "it exists already"));
  }
  const std::vector<std::string> argv = job_argv(ctx, job, out_path, record_path, count_path);
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
  const ProcessResult pr = run_process(argv, env, std::chrono::duration<double>(limit), job.cpus, 64u << 10, gate_fds);
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
  return instruction_sample(ctx, job, std::move(s), *record, callgrind, callgrind_problem);
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
      plan["benchmarks"].push_back({{"name", jobs[k].benchmark->name},
                                    {"iterations", jobs[k].iterations},
                                    {"out", member + ".json"},
                                    {"record", member + ".record.json"},
                                    {"check", jobs[k].kind != Kind::kTime || jobs[k].check}});
    }
    const std::string plan_path = stem + ".plan.json";
    write_json_atomically(plan_path, plan);
    const Job& first = jobs[from];
    std::vector<std::string> argv = {layout_binary(binaries_of(*first.experiment), first.layout),
                                     "--pairbench_profile=" + ctx.options.profile, "--pairbench_plan=" + plan_path,
                                     "--benchmark_repetitions=1",
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
    const double start_share =
        all_done && done > 0 ? std::max(0.0, pr.wall_s - last_finished) / static_cast<double>(done) : 0.0;
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
    } else if (const std::string tail = last_line(pr.output);
               !tail.empty() && pr.status != ProcessResult::Status::kTimedOut) {
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

}  // namespace detail

using detail::strip_status;
using detail::verification_from_error;

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

}  // namespace pairbench::harness
