// Each benchmark's fixed iteration count: from the per-machine cache, or from one calibration
// ramp (harness/exec/calibration.h for the cache and the counts' rules).
#include "harness/exec/jobs.h"

#include <cstdio>

#include "harness/exec/say.h"
#include "harness/store/run_file.h"

namespace pairbench::harness::detail {

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

// Whether a calibration ramp may have been fooled by a stall: its batches disagree by orders of
// magnitude, or it ended on fewer iterations than the plan's batches (so no batch can show a
// stall) while its thread was off its CPU for part of them (ramp_may_hide_stall). A process that
// crashed, hung or timed nothing is not run again (it would do the same, at the cost of its timeout).
bool worth_another_ramp(const Sample& s, int batches) {
  if (!(calibration_per_iteration(s) > 0)) return false;
  if (!calibration_problem(s).empty()) return true;
  const auto& rec = s.gbench["pairbench_record"];
  const double recorded = rec.value("iterations_recorded", 0.0);
  if (recorded >= std::max(2, batches)) return false;
  // The CPU time covers the ramp's iterations only where it tracked them all.
  if (rec.value("early_iterations", 0.0) < recorded) return true;
  return ramp_may_hide_stall(rec.value("early_wall_s", 0.0), rec.value("early_cpu_s", 0.0));
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
// Every ramp in a shared process where its benchmark may share one (one ramp each, in name order;
// single_units), else one per process. A ramp can be fooled by a stall (a preemption on a loaded
// machine): one that stopped after fewer iterations than the plan has batches has no batches to
// show it, and one 150 ms stall of its first iteration reads as 150 ms per iteration, every later
// process then running one iteration; one whose batches show it is refused. Such a ramp whose
// thread was off its CPU for part of its iterations, or was refused, runs again (twice at most,
// together with the others that need it; stalls only add time) and the fastest unrefused one is
// kept. A ramp of a few slow iterations whose thread ran throughout is its work, not a stall:
// running it again would only pay its set-up again. Per benchmark, the ramp kept (nothing: interrupted); the
// benchmarks a retried ramp found wrong go to `found_wrong`.
std::map<std::string, std::optional<Sample>> ramp_until_usable(Context& ctx, const std::vector<Job>& ramps,
                                                               std::set<std::string>& found_wrong) {
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
      if (second && second->verification == Verification::incorrect) found_wrong.insert(name);
      if (!second) {
        kept.reset();  // interrupted
      } else if (better_calibration(*second, *kept)) {
        kept = std::move(second);
      }
    }
  }
  return ramped;
}

Calibrated calibrate(Context& ctx, const std::vector<Job>& runnable, CalibrationCache& cache) {
  Calibrated out;
  const auto start = Clock::now();
  std::map<std::string, const Job*> first;  // one job per benchmark name (side 0's binary first)
  for (const Job& j : runnable) first.emplace(j.benchmark->name, &j);
  std::vector<const Job*> missing;
  for (const auto& [name, job] : first) {
    if (ctx.options.recalibrate || (!cache.find(name) && !cache.failure(name))) missing.push_back(job);
  }
  std::vector<Job> ramps;
  for (const Job* j : missing) {
    Job c = *j;
    c.kind = Kind::kCalibrate;
    c.repetition = -1;
    ramps.push_back(std::move(c));
  }
  std::map<std::string, std::optional<Sample>> ramped = ramp_until_usable(ctx, ramps, out.ramp_found_wrong);
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
    cache.put(c.benchmark->name, {measured / n, (n > 1 ? wall / (n - 1) : wall / n), utc_stamp("%Y-%m-%dT%H:%M:%SZ"),
                                  s.work_per_iteration});
    ++out.calibrated;
  }
  if (ctx.options.progress_tty && !missing.empty()) say() << "\r\033[K";
  if (!missing.empty()) {
    sayf(Verbosity::normal, "pairbench: calibrated %d of %zu benchmarks (%.1f s); cache %s\n", out.calibrated,
         missing.size(), std::chrono::duration<double>(Clock::now() - start).count(),
         cache.path().empty() ? "in memory" : cache.path().c_str());
  }
  for (const auto& [name, job] : first) {
    const Calibration* c = cache.find(name);
    if (const auto* f = cache.failure(name)) {
      say(Verbosity::quiet) << "pairbench: " << name << " is not calibrated (" << f->reason
                            << (f->at.empty() ? "" : ", " + f->at) << "): it runs "
                            << planned_iterations(kUncalibrated, ctx.options.plan)
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

}  // namespace pairbench::harness::detail
