// Planning a run: which jobs can run, how many processes each benchmark gets under the profile's
// budgets, the rounds of timed units (blocked, randomised, duet pairs and crossover blocks, each
// process's layout and whether its check is drawn) and the instruction-counting units after them.
#include "harness/exec/jobs.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <set>

#include "harness/exec/layout.h"
#include "harness/exec/say.h"
#include "harness/stats/stats.h"
#include "kernels/common/cpus.h"

namespace pairbench::harness {
namespace detail {

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

// Why a benchmark's two sides cannot run at once as a duet pair on `pool_cpus` cores ("" where they
// can): two processes on one GPU time its time-slicing between their contexts, not the code
// (measured: results/reference/gate-notebook.md, "Duet pairing"); the regime probe's or the
// caller's one_side_at_a_time; more threads per side than half the pool.
std::string sides_apart_reason(const Job& a, const Job& b, const RunOptions& options, std::size_t pool_cpus) {
  if (a.benchmark->cuda || b.benchmark->cuda) return "both sides would share the CUDA device";
  const auto forced = options.one_side_at_a_time.find(a.benchmark->name);
  if (forced != options.one_side_at_a_time.end()) return forced->second;
  const int threads = pair_threads(a, b);
  if (2 * static_cast<std::size_t>(threads) > pool_cpus) {
    return std::to_string(threads) + " threads per side need " + std::to_string(2 * threads) +
           " cores for both sides at once; " + std::to_string(pool_cpus) + " usable";
  }
  return "";
}

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
               "; its code is counted at " + c->benchmark + " (" + seconds_text(c->instruction_wall_s) +
               " per process)";
  }
}

// Every runnable benchmark's processes under the profile's budgets (calibration.h, budgeted_processes),
// from what its processes took in earlier runs here; `iterations`: per benchmark, the count its
// time processes run (absent: not known, so neither is its wall). Each benchmark once, whatever
// the sides; its processes on every side.
RunPlan plan_processes(const std::vector<Job>& runnable, const RunOptions& options, const CalibrationCache& cache,
                       const std::map<std::string, std::int64_t>& iterations, const std::string& counter,
                       const std::set<std::string>& at_once) {
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
    b.processes =
        budgeted_processes(options.process_budget_s, b.process_wall_s, options.min_repetitions, options.repetitions);
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
    // A duet pair's sides run at once: one side's time processes in wall time; the others take turns.
    const int n_wall = at_once.count(b.benchmark) ? 1 : n;
    plan.projected_wall_s +=
        n_wall * b.processes * b.process_wall_s + n * b.instruction_processes * b.instruction_wall_s;
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
  // The overhead's mean, not its median: a shared process's start lands on whichever benchmark runs
  // first in it, and a budget needs the expected total (what the processes will take together).
  for (const auto& [name, values] : overhead) {
    cache.record_time_walls(name,
                            std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size()),
                            stats::median(loop[name]));
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
    const std::string apart = sides_apart_reason(j, *it->second, options, pool_cpus);
    if (apart.empty()) {
      round_units.push_back({j, *it->second});
      continue;
    }
    singles.push_back(j);
    singles.push_back(*it->second);
    sequential.push_back({j.benchmark->name, pair_threads(j, *it->second), apart});
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
// from tens of milliseconds to minutes, each core its own (measured: results/reference/
// gate-notebook.md, "Duet pairing"); a block's two pairs see the same modes with the sides
// exchanged, so their mean cancels them, and the sampling decides on block means
// (harness/sampling/paired.cpp add_round). `pool`: the CPUs duet pairs are placed on.
std::vector<std::vector<Job>> timed_units(const std::vector<Job>& runnable, const std::vector<Side>& sides,
                                          const RunOptions& options, const Calibrated& cal,
                                          const std::vector<int>& pool, RunOutcome& outcome, std::mt19937_64& rng) {
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
        const ProcessLayout layout =
            draw_layout(outcome.seed, index++, static_cast<int>(binaries_of(*unit.front().experiment).size()));
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
                                "budget; its code is counted at " +
                                    p->counted_at);
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

}  // namespace detail

const BenchmarkPlan* RunPlan::find(const std::string& benchmark) const {
  const auto it = std::lower_bound(benchmarks.begin(), benchmarks.end(), benchmark,
                                   [](const BenchmarkPlan& b, const std::string& name) { return b.benchmark < name; });
  return it != benchmarks.end() && it->benchmark == benchmark ? &*it : nullptr;
}

RunPlan plan_run(const std::vector<ExperimentEntry>& experiments, const RunOptions& options) {
  return plan_run(std::vector<Side>{Side{"", experiments, {}, {}, {}}}, options);
}

RunPlan plan_run(const std::vector<Side>& sides, const RunOptions& options, const std::set<std::string>& probed) {
  RunOutcome unused;
  const std::vector<detail::Job> runnable = detail::runnable_jobs(sides, unused);  // they point into `sides`
  const CalibrationCache cache(options.calibration_path);
  if (!cache.load_problem().empty()) say(Verbosity::quiet) << "pairbench: warning: " << cache.load_problem() << "\n";
  // As run_sides sizes them, without calibrating: a benchmark not in the cache has no count yet.
  std::map<std::string, std::int64_t> iterations;
  for (const detail::Job& j : runnable) {
    const std::string& name = j.benchmark->name;
    if (options.recalibrate) continue;
    if (const Calibration* c = cache.find(name)) {
      iterations[name] = planned_iterations(*c, options.plan);
    } else if (cache.failure(name)) {
      iterations[name] = planned_iterations(detail::kUncalibrated, options.plan);
    }
  }
  const bool any_instructions =
      options.instruction_processes > 0 &&
      std::any_of(runnable.begin(), runnable.end(), [](const detail::Job& j) { return j.benchmark->instructions; });
  const std::string counter = any_instructions ? choose_instruction_counter(options.instruction_counter).name : "";
  // The benchmarks whose two sides a duet runs at once (run_sides' pairing, round_units_of's rule).
  std::set<std::string> at_once;
  const std::vector<int> cpus = options.duet_cpu_pool.empty() ? kernels::usable_cpu_list() : options.duet_cpu_pool;
  if (options.pairing == "duet" && sides.size() == 2 && cpus.size() >= 2) {
    std::map<std::string, const detail::Job*> other;
    for (const detail::Job& j : runnable) {
      if (j.side == 1) other.emplace(j.benchmark->name, &j);
    }
    for (const detail::Job& j : runnable) {
      const auto it = other.find(j.benchmark->name);
      if (j.side == 0 && it != other.end() &&
          detail::sides_apart_reason(j, *it->second, options, cpus.size()).empty()) {
        at_once.insert(j.benchmark->name);
      }
    }
  }
  RunPlan plan = detail::plan_processes(runnable, options, cache, iterations, counter, at_once);
  // ab's regime probe: one uncounted duet pair of each benchmark it probes, before the rest.
  for (const BenchmarkPlan& b : plan.benchmarks) {
    if (at_once.count(b.benchmark) && probed.count(b.benchmark)) plan.projected_wall_s += b.process_wall_s;
  }
  return plan;
}

}  // namespace pairbench::harness
