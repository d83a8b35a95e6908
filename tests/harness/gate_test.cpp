// Gate decisions on synthetic run files with known answers: regression, improvement, noise,
// too few samples, broken and missing benchmarks, mismatched machines; and the output formats.
#include "harness/gate.h"

#include <gtest/gtest.h>

#include <random>

namespace pairbench::harness {
namespace {

nlohmann::json environment(const std::string& cpu = "Test CPU") {
  return {{"cpu_model", cpu}, {"cpu_count", 2}, {"gpu_name", ""}, {"gpu_count", 0}, {"cuda_driver_version", 0},
          {"build_type", "Release"}, {"compiler", "GNU 12"}, {"compiler_flags", "-O3"}, {"machine_key", "k"}};
}

// A run file with the given samples per benchmark (all in experiment demo.x, lower is better).
nlohmann::json run_doc(const std::map<std::string, std::vector<double>>& samples, const std::string& cpu = "Test CPU",
                       const std::string& better = "lower") {
  nlohmann::json doc = {{"context", nlohmann::json::object()}, {"benchmarks", nlohmann::json::array()}};
  for (const auto& [name, values] : samples) {
    for (std::size_t i = 0; i < values.size(); ++i) {
      doc["benchmarks"].push_back({{"name", name}, {"experiment", "demo.x"}, {"arm", "a"}, {"real_time", 1.0},
                                   {"repetition_index", i}, {"metric_value", values[i]}});
    }
  }
  doc["pairbench"] = {{"schema_version", 1},
                      {"environment", environment(cpu)},
                      {"not_run", nlohmann::json::array()},
                      {"experiments", {{{"name", "demo.x"}, {"metric", "ns_per_op"}, {"unit", "ns"}, {"better", better}}}}};
  return doc;
}

// n samples around `center` with relative noise `cv` (fixed seed per call site).
std::vector<double> noisy(double center, double cv, int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> z(0, 1);
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(center * std::exp(cv * z(rng)));
  return out;
}

const BenchmarkVerdict& row(const GateReport& r, const std::string& name) {
  for (const auto& v : r.rows) {
    if (v.benchmark == name) return v;
  }
  throw std::runtime_error("no row " + name);
}

TEST(Gate, CatchesARegressionAndReportsAnImprovementWithoutFailing) {
  const auto base = run_doc({{"slow", noisy(100, 0.01, 9, 1)}, {"fast", noisy(100, 0.01, 9, 2)}, {"same", noisy(100, 0.01, 9, 3)}});
  const auto cur = run_doc({{"slow", noisy(110, 0.01, 9, 4)}, {"fast", noisy(80, 0.01, 9, 5)}, {"same", noisy(100, 0.01, 9, 6)}});
  const GateReport r = compare_runs(base, cur, {}, "a", "b");
  EXPECT_EQ(row(r, "slow").verdict, "regression");
  EXPECT_NEAR(row(r, "slow").slowdown, 0.10, 0.03);
  EXPECT_EQ(row(r, "fast").verdict, "improvement");
  EXPECT_EQ(row(r, "same").verdict, "unchanged");
  EXPECT_TRUE(r.failed());

  const GateReport only_improved = compare_runs(base, run_doc({{"slow", noisy(100, 0.01, 9, 7)},
                                                               {"fast", noisy(80, 0.01, 9, 8)},
                                                               {"same", noisy(100, 0.01, 9, 9)}}),
                                                {}, "a", "b");
  EXPECT_FALSE(only_improved.failed());
}

TEST(Gate, HigherIsBetterMetricsAreOrientedSoThatSlowdownIsPositive) {
  const auto base = run_doc({{"bw", noisy(10e9, 0.01, 9, 1)}}, "Test CPU", "higher");
  const auto cur = run_doc({{"bw", noisy(8e9, 0.01, 9, 2)}}, "Test CPU", "higher");
  const GateReport r = compare_runs(base, cur, {}, "a", "b");
  EXPECT_EQ(row(r, "bw").verdict, "regression");
  EXPECT_NEAR(row(r, "bw").slowdown, 0.25, 0.03);  // 10/8 - 1
}

TEST(Gate, NoisyBenchmarksAreReportedNotPassedSilently) {
  const auto base = run_doc({{"wobbly", noisy(100, 0.30, 9, 11)}});
  const auto cur = run_doc({{"wobbly", noisy(105, 0.30, 9, 12)}});
  const GateReport r = compare_runs(base, cur, {}, "a", "b");
  EXPECT_EQ(row(r, "wobbly").verdict, "noisy");
  EXPECT_GT(row(r, "wobbly").noise_cv, 0.1);
  EXPECT_NE(row(r, "wobbly").note.find("cannot rule out"), std::string::npos);
  EXPECT_FALSE(r.failed());
}

TEST(Gate, TooFewSamplesAfterCorrectionAreUndecidable) {
  std::map<std::string, std::vector<double>> b, c;
  for (int i = 0; i < 20; ++i) {
    b["x" + std::to_string(i)] = noisy(100, 0.01, 3, 100 + i);
    c["x" + std::to_string(i)] = noisy(150, 0.01, 3, 200 + i);  // huge change, but 3 vs 3 samples
  }
  const GateReport r = compare_runs(run_doc(b), run_doc(c), {}, "a", "b");
  EXPECT_EQ(r.count("undecidable"), 20);
  EXPECT_FALSE(r.failed());
}

TEST(Gate, BrokenMissingAndNewBenchmarks) {
  const auto base = run_doc({{"gone", {1, 1, 1}}, {"crashes", {1, 1, 1}}});
  auto cur = run_doc({{"fresh", {1, 1, 1}}});
  cur["pairbench"]["not_run"].push_back({{"name", "crashes"}, {"verification", "failed"}, {"reason", "killed by SIGSEGV"}});
  const GateReport r = compare_runs(base, cur, {}, "a", "b");
  EXPECT_EQ(row(r, "gone").verdict, "missing");
  EXPECT_EQ(row(r, "crashes").verdict, "broken");
  EXPECT_NE(row(r, "crashes").note.find("SIGSEGV"), std::string::npos);
  EXPECT_EQ(row(r, "fresh").verdict, "new");
  EXPECT_TRUE(r.failed());  // a benchmark that stopped working fails the gate
}

TEST(Gate, RefusesDifferentMachinesUnlessForcedAndNamesTheFields) {
  const auto base = run_doc({{"x", {1, 2, 3}}}, "CPU A");
  const auto cur = run_doc({{"x", {1, 2, 3}}}, "CPU B");
  try {
    compare_runs(base, cur, {}, "a", "b");
    FAIL() << "expected a refusal";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("cpu_model: \"CPU A\" vs \"CPU B\""), std::string::npos) << e.what();
  }
  GateOptions forced;
  forced.force = true;
  const GateReport r = compare_runs(base, cur, forced, "a", "b");
  EXPECT_TRUE(r.forced);
  ASSERT_EQ(r.fingerprint_differences.size(), 1u);
}

TEST(Gate, PerExperimentThresholdOverridesTheDefault) {
  auto base = run_doc({{"x", noisy(100, 0.005, 9, 1)}});
  auto cur = run_doc({{"x", noisy(103, 0.005, 9, 2)}});  // +3 %
  EXPECT_EQ(row(compare_runs(base, cur, {}, "a", "b"), "x").verdict, "unchanged");
  cur["pairbench"]["experiments"][0]["gate_threshold"] = 0.02;
  EXPECT_EQ(row(compare_runs(base, cur, {}, "a", "b"), "x").verdict, "regression");
}

TEST(Gate, OutputsEscapeNamesAndCarryVerdicts) {
  const auto base = run_doc({{"a<b>&\"c\"|d", noisy(100, 0.01, 9, 1)}});
  const auto cur = run_doc({{"a<b>&\"c\"|d", noisy(120, 0.01, 9, 2)}});
  const GateReport r = compare_runs(base, cur, {}, "base.json", "cur.json");
  const std::string junit = gate_junit(r);
  EXPECT_NE(junit.find("a&lt;b&gt;&amp;&quot;c&quot;|d"), std::string::npos);
  EXPECT_NE(junit.find("<failure"), std::string::npos);
  EXPECT_EQ(junit.find("<b>"), std::string::npos);
  const std::string md = gate_markdown(r);
  EXPECT_NE(md.find("**failed**"), std::string::npos);
  EXPECT_NE(md.find("a\\<b\\>&\"c\"\\|d"), std::string::npos) << md;
  const auto j = gate_json(r);
  EXPECT_TRUE(j["failed"].get<bool>());
  EXPECT_EQ(j["benchmarks"][0]["verdict"], "regression");
}

// A/A on synthetic data: identical distributions must (almost) never fail the gate.
TEST(Gate, AaComparisonsOfManyBenchmarksRarelyFail) {
  int failures = 0;
  for (int trial = 0; trial < 50; ++trial) {
    std::map<std::string, std::vector<double>> b, c;
    for (int i = 0; i < 40; ++i) {
      b["x" + std::to_string(i)] = noisy(100, 0.02, 9, 1000 * trial + 2 * i);
      c["x" + std::to_string(i)] = noisy(100, 0.02, 9, 1000 * trial + 2 * i + 1);
    }
    failures += compare_runs(run_doc(b), run_doc(c), {}, "a", "b").failed();
  }
  EXPECT_LE(failures, 1);
}

}  // namespace
}  // namespace pairbench::harness
