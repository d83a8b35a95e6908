// Launching a run's units in order: one process, a shared process, or a duet pair's two at once
// behind their start gate; progress per process; the check once per run and what a failed one
// refuses (harness/exec/jobs.h).
#include "harness/exec/jobs.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <thread>

#include "harness/exec/interrupt.h"
#include "harness/exec/say.h"
#include "harness/exec/start_gate.h"

namespace pairbench::harness::detail {

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
    if (bad)
      say(Verbosity::quiet) << "\r\033[K" << job.benchmark->name << " rep " << job.repetition << ": " << what << "\n";
    std::string line = std::string(head) + " " + job.benchmark->name;
    if (line.size() > 90) line = line.substr(0, 87) + "...";
    say() << "\r\033[K" << line << "  ETA " << format_duration(eta) << std::flush;
  } else {  // a failed process is said even when quiet
    sayf(bad ? Verbosity::quiet : Verbosity::normal, "%s %s rep %d: %s (%.2f s) ETA %s\n", head,
         job.benchmark->name.c_str(), job.repetition, what.c_str(), s.process_wall_s, format_duration(eta).c_str());
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
      if (std::all_of(unit.begin(), unit.end(),
                      [](const Job& j) { return j.kind == Kind::kTime && j.benchmark->start_gate; })) {
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

}  // namespace pairbench::harness::detail
