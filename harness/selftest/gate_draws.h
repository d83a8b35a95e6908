// The self-test's studies of the gate on drawn run files (`pairbench selftest`): the same build's
// runs and a planted one, gates drawn from their processes many times, each verdict tallied (A/A:
// every regression a false alarm; planted: what it catches), its noise bands, compare.py's rule on
// the same draws, and the report of it. The runs themselves are the command's (cli/selftest.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "harness/exec/environment.h"
#include "harness/gate/gate.h"

namespace pairbench::harness {

// Bad input naming what is missing ("DIR: needs runs A1 and A2 ..."): the command's usage error.
struct SelftestInputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Process entries of one run file, by benchmark: the time instrument (`benchmarks`) and
// instruction counts (`pairbench.instructions`).
struct Pool {
  std::map<std::string, std::vector<nlohmann::json>> time, instructions;
};

// A run file's processes by benchmark.
Pool pool_of(const nlohmann::json& doc);

// A run file holding n processes of each benchmark drawn without replacement from `doc`.
nlohmann::json draw(const nlohmann::json& doc, const Pool& pool, int n, int instruction_n, std::mt19937_64& rng);

// What the gates drawn of one kind decided, counted.
struct Tally {
  int gates = 0, gates_with_regression = 0, gates_passed = 0;
  long regressions = 0, decisions = 0, undecided = 0, unchanged = 0;
  long compare_py_flags = 0;                             // compare.py's rule, same draws
  std::map<std::string, std::pair<long, long>> by_band;  // noise band -> (caught, decisions)
  std::map<std::string, long> regressions_by_benchmark;
};

// A tally as the result JSON (--out) holds it: counts, rates, noise bands, the most regressed.
nlohmann::json tally_json(const Tally& t);

// Google Benchmark compare.py's rule on the same two run files: a two-sided U test on the
// process values at p < 0.05, uncorrected, counted as a slowdown flag when the median moved the
// worse way. Returns the number of benchmarks flagged.
int compare_py_flags(const nlohmann::json& base, const nlohmann::json& cur);

// The gate as a whole, both instruments: a benchmark is caught when either instrument calls it a
// regression; a gate failed when any benchmark was.
void tally_combined(Tally& t, const GateReport& report);

// One instrument's rows of a gate into its tally (`noise`: each benchmark's process noise, for its band).
void tally_gate(Tally& t, const GateReport& report, const std::string& instrument,
                const std::map<std::string, double>& noise);

inline constexpr int kPlantedLevels[] = {5, 10, 20};  // % of real work planted per timed region

// DIR/NAME.json: where the self-test keeps run NAME (A1, Y-A', night3, ...).
inline std::string selftest_run_path(const std::string& dir, const std::string& name) {
  return dir + "/" + name + ".json";
}

// The self-test's run files, read back (--from re-reads them): the same-build runs (A' last) and
// the planted sides, with their processes by benchmark.
struct SelftestRuns {
  std::vector<nlohmann::json> a_runs;
  std::vector<Pool> a_pools;
  std::map<int, nlohmann::json> planted;
};

SelftestRuns read_selftest_runs(const std::string& dir);

// The gate's options three ways: with the history a nightly gate would have (every run of the
// same build), for two sides of one run (their processes' noise only), and with no history.
struct SelftestGates {
  GateOptions gate, same_run, no_history;
};

SelftestGates selftest_gates(const GateOptions& asked, const SelftestRuns& runs);

// Each benchmark's process-to-process noise (robust SD of the log value, from A1): its band.
std::map<std::string, double> process_noise(const Pool& pool);

// instrument -> kind (aa, planted_<L>pct) -> tally, over gates drawn from the runs.
struct SelftestTallies {
  std::map<std::string, std::map<std::string, Tally>> by_instrument;
  Tally aa_without_history;
  // What the A/A gates' time rows were gated at (docs/gate.md, "Resolution"), every row of every
  // gate, and whether each of the first ten gates passed outright (no regression, nothing undecided).
  std::vector<double> aa_gated_at;
  int first_ten_passed = 0, first_ten = 0;
};

SelftestTallies draw_gates(int trials, std::uint64_t seed, const SelftestRuns& s, const SelftestGates& g,
                           const std::map<std::string, double>& noise, int n, int ni);

// What was planted, as measured: per level, the median over benchmarks of the planted side's
// median against A' (same run; time oriented so + = worse), and the same for instruction counts.
nlohmann::json planted_as_measured(const SelftestRuns& s);

// The share of `v` at most `bound` (0 when empty).
double share_at_most(const std::vector<double>& v, double bound);

// The mean process wall of the pools' time (or instruction-counting) processes.
double mean_wall(const std::vector<Pool>& pools, bool instructions);

// Instruction counts: their spread within a run (the processes of one run) and from run to run
// (the medians of the same-build runs), per benchmark, as a CV.
nlohmann::json instruction_count_spread(const std::vector<Pool>& pools);

// What the drawn-gate study is of: the machine, where its runs are, the profile, the processes
// per side drawn (time, counting) and the A/A draws.
struct DrawsContext {
  const Environment& env;
  std::string dir, profile;
  int n = 0, ni = 0, trials = 0;
};
// The study's result as --out writes it (print_selftest prints it): the machine, the runs, the
// gate's options, the noise, each kind's tally, what was planted as measured, the instruction
// counts' spread and the seconds of processes per decision.
nlohmann::json draws_result(const SelftestRuns& runs, const SelftestGates& gates, const SelftestTallies& tallies,
                            const std::map<std::string, double>& noise, const DrawsContext& c);

// The terminal report of the self-test's result (`result` as written with --out).
// The terminal report of the self-test's result (`result` as written with --out).
void print_selftest(const nlohmann::json& result, const SelftestTallies& t, const std::string& cpu_model);

}  // namespace pairbench::harness
