// The gate on synthetic runs of the profiles' shape, many times over: whole-gate false
// regressions on A/A pairs and detection of a planted slowdown, per noise model. Not a test
// (ctest does not run it): the tool behind the design figures in docs/gate.md.
//
//   build/tests/gate_simulation --benchmarks 335 --processes 9 --gates 1000 --noise measured
//   build/tests/gate_simulation ... --shift 0.05          (every benchmark 5 % slower)
//   options: --noise homogeneous|lognormal|measured  --outliers 0.03  --moderation eb|none  --trim 0.2
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "harness/gate/gate.h"

using namespace pairbench::harness;

int main(int argc, char** argv) {
  int benchmarks = 335, processes = 9, gates = 200;
  std::string noise = "measured";
  double outliers = 0.03, shift = 0;
  GateOptions options;
  options.undecided = UndecidedPolicy::pass;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--benchmarks") benchmarks = std::atoi(v.c_str());
    else if (k == "--processes") processes = std::atoi(v.c_str());
    else if (k == "--gates") gates = std::atoi(v.c_str());
    else if (k == "--noise") noise = v;
    else if (k == "--outliers") outliers = std::atof(v.c_str());
    else if (k == "--shift") shift = std::log1p(std::atof(v.c_str()));
    else if (k == "--moderation" && moderation_from_string(v)) options.moderation = *moderation_from_string(v);
    else if (k == "--trim") options.trim = std::atof(v.c_str());
    else {
      std::fprintf(stderr, "gate_simulation: unknown option %s\n", k.c_str());
      return 2;
    }
  }
  std::vector<double> measured;
  {
    std::ifstream in(PROCESS_NOISE_FIXTURE);
    for (std::string line; std::getline(in, line);) {
      if (!line.empty() && line[0] != '#') measured.push_back(std::atof(line.c_str()));
    }
  }
  // Per-benchmark noise, the same in every gate (a benchmark's noise is a property of it).
  std::mt19937_64 noise_rng(7);
  std::normal_distribution<double> z(0, 1);
  std::vector<double> cv(static_cast<std::size_t>(benchmarks), 0.02);
  for (double& c : cv) {
    if (noise == "lognormal") c = std::clamp(0.09 * std::exp(0.6 * z(noise_rng)), 0.005, 0.38);
    if (noise == "measured") c = measured[noise_rng() % measured.size()];
  }
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> u(0, 1);
  int failed = 0;
  long rows = 0, regressions = 0, unchanged = 0, undecided = 0, quiet = 0, quiet_caught = 0;
  for (int g = 0; g < gates; ++g) {
    nlohmann::json docs[2];
    for (auto& d : docs) {
      d = {{"context", nlohmann::json::object()}, {"benchmarks", nlohmann::json::array()}};
      d["pairbench"] = {{"schema_version", 1},
                        {"environment", {{"cpu_model", "simulated"}}},
                        {"not_run", nlohmann::json::array()},
                        {"experiments", {{{"name", "sim"}, {"metric", "t"}, {"unit", "ns"}, {"better", "lower"}}}}};
    }
    for (int b = 0; b < benchmarks; ++b) {
      for (int side = 0; side < 2; ++side) {
        for (int p = 0; p < processes; ++p) {
          double v = cv[static_cast<std::size_t>(b)] * z(rng) + (side ? shift : 0);
          if (u(rng) < outliers) v += std::log(1.1 + 0.5 * u(rng));  // a neighbour's burst: 10-60 % slower
          docs[side]["benchmarks"].push_back({{"name", "b" + std::to_string(b)}, {"experiment", "sim"}, {"arm", "a"},
                                              {"real_time", 1.0}, {"metric_value", 100 * std::exp(v)}});
        }
      }
    }
    const GateReport r = compare_runs(docs[0], docs[1], options, "a", "b");
    failed += r.failed();
    for (const auto& v : r.rows) {
      ++rows;
      regressions += v.verdict == Verdict::regression;
      unchanged += v.verdict == Verdict::unchanged;
      undecided += v.verdict == Verdict::undecided;
      if (cv[static_cast<std::size_t>(std::stoi(v.benchmark.substr(1)))] <= 0.03) {
        ++quiet;
        quiet_caught += v.verdict == Verdict::regression;
      }
    }
  }
  std::printf("%d benchmarks x %d processes, noise %s, outliers %.0f%%, shift %+.1f%%, moderation %s, trim %.2f, "
              "%d gates:\n  gates with a regression %d (%.2f%%); verdicts: regression %.3f, unchanged %.3f, "
              "undecided %.3f; benchmarks with noise <= 3%%: regression %.3f\n",
              benchmarks, processes, noise.c_str(), 100 * outliers, 100 * std::expm1(shift), to_string(options.moderation).c_str(),
              options.trim, gates, failed, 100.0 * failed / gates, double(regressions) / rows, double(unchanged) / rows,
              double(undecided) / rows, quiet ? double(quiet_caught) / quiet : 0.0);
  return 0;
}
