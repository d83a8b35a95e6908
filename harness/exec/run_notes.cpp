// What a run says at its end about its processes: GPU samples taken while throttled, where the
// processes' wall time went, calibrations its processes drifted from; and the regime ratios its
// run file records (harness/exec/jobs.h).
#include "harness/exec/jobs.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "harness/exec/say.h"
#include "harness/stats/stats.h"

namespace pairbench::harness::detail {

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
  std::string reasons;
  for (const auto& [reason, n] : by_reason)
    reasons += (reasons.empty() ? "" : "; ") + reason + ": " + std::to_string(n);
  say(Verbosity::quiet) << "pairbench: " << throttled << " GPU sample(s) ran while the GPU slowed its clock ("
                        << reasons << "); each row's gpu_clock names it\n";
}

namespace {
// Pages made resident, as "3.2 GiB (842000 page faults)" at the system's base page size.
std::string resident_text(std::int64_t faults) {
  const double gib = static_cast<double>(faults) * static_cast<double>(sysconf(_SC_PAGESIZE)) / (1024.0 * 1024 * 1024);
  return fmt_g(std::round(gib * 10) / 10) + " GiB (" + std::to_string(faults) + " page faults)";
}
}  // namespace

// Where the processes' wall time went, part by part (issue 36: a sample should cost its work):
// inside the timed loops, before them (set-up and the check before timing), after them, and the
// rest (process start and exit, shared equally among a shared process's benchmarks). With the
// experiments that spend most outside their timed loops, which is what a cheaper sample must cut.
void name_where_wall_went(const std::vector<Sample>& samples) {
  double wall = 0, loop = 0, measured = 0, setup = 0, after = 0;
  std::int64_t faults = 0;
  bool faults_known = false;  // some bench recorded them (an older one does not)
  std::map<std::string, double> outside_by_experiment;
  int n = 0;
  for (const Sample& s : samples) {
    if (s.instrument != Instrument::time || !(s.process_wall_s > 0) || !(s.loop_wall_s > 0)) continue;
    ++n;
    wall += s.process_wall_s, loop += s.loop_wall_s, measured += s.measured_s, setup += s.setup_s, after += s.after_s;
    faults += std::max<std::int64_t>(0, s.setup_faults);
    faults_known = faults_known || s.setup_faults >= 0;
    outside_by_experiment[s.experiment] += s.process_wall_s - s.loop_wall_s;
  }
  if (n == 0 || !(wall > 0) || !speaks(Verbosity::normal)) return;
  const auto pct = [&](double v) { return fmt_g(std::round(1000 * v / wall) / 10) + " %"; };
  std::vector<std::pair<double, std::string>> top;
  for (const auto& [experiment, seconds] : outside_by_experiment) top.emplace_back(seconds, experiment);
  std::sort(top.rbegin(), top.rend());
  std::string most;
  for (std::size_t i = 0; i < std::min<std::size_t>(3, top.size()); ++i) {
    most += (i ? ", " : " ") + top[i].second + " " + fmt_g(std::round(top[i].first * 10) / 10) + " s";
  }
  say() << "pairbench: " << n << " samples, " << fmt_g(std::round(wall * 10) / 10) << " s of process wall: timed loops "
        << pct(loop) << " (inside the timed regions " << pct(measured) << "), before them " << pct(setup)
        << ", after them " << pct(after) << ", process start and exit "
        << pct(std::max(0.0, wall - loop - setup - after)) << "; most outside the timed loops:" << most
        << (faults_known ? "; set-up made " + resident_text(faults) + " resident" : std::string())
        << " (rows: sample_wall)\n";
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
      sayf(Verbosity::normal,
           "pairbench: %s runs %.1fx its calibrated time per iteration; its iteration count stays (--recalibrate to "
           "renew it)\n",
           name.c_str(), stats::median(values) / c->measured_s_per_iteration);
    }
  }
}

std::vector<std::string> forget_changed_work(CalibrationCache& cache, const std::vector<Sample>& samples) {
  std::map<std::string, std::string> work;
  for (const Sample& s : samples) {
    if (s.side == 0 && s.instrument == Instrument::time && s.has_value && !s.work_per_iteration.empty()) {
      work.emplace(s.benchmark, s.work_per_iteration);
    }
  }
  std::vector<std::string> forgotten;
  for (const auto& [name, w] : work) {
    const Calibration* c = cache.find(name);
    if (!c || c->work == w) continue;
    if (c->work.empty()) {
      Calibration adopted = *c;
      adopted.work = w;
      cache.put(name, adopted);
      continue;
    }
    say(Verbosity::quiet) << "pairbench: " << name << ": its iteration's work changed since it was calibrated here ("
                          << c->work << " -> " << w
                          << "): calibrated again in the next run; its learnt process walls forgotten\n";
    cache.forget(name);
    cache.forget_walls(name);
    forgotten.push_back(name);
  }
  return forgotten;
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

}  // namespace pairbench::harness::detail
