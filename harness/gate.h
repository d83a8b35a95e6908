// Comparing two runs benchmark by benchmark and deciding regressions (`pairbench compare`,
// `gate`, `ab`). A regression needs both: a significant difference after controlling false
// alarms across every benchmark compared (Holm by default), and a slowdown whose interval
// reaches the threshold. Improvements are reported, never failed; benchmarks whose noise cannot
// rule out a threshold-sized regression are reported as noisy, with their noise.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace pairbench::harness {

struct GateOptions {
  double threshold = 0.05;    // default relative slowdown that counts; experiments may set their own
  double alpha = 0.01;        // family-wise (Holm) or false-discovery (BH) level across all benchmarks
  std::string correction = "holm";  // holm | bh
  double confidence = 0.95;   // level of the change intervals
  bool force = false;         // compare runs from different machines or builds anyway
};

struct BenchmarkVerdict {
  std::string benchmark, experiment, metric, unit, better;
  int baseline_samples = 0, current_samples = 0;
  double baseline_median = 0, current_median = 0;
  // Relative slowdown of current vs baseline (+0.07 = 7 % worse; for higher-is-better metrics,
  // baseline/current - 1), Hodges–Lehmann on logs, with its interval.
  double slowdown = 0, slowdown_low = 0, slowdown_high = 0;
  double p_value = 1, p_adjusted = 1;
  double noise_cv = 0;  // the larger robust CV of the two sides
  double threshold = 0.05;
  // regression | improvement | unchanged | noisy | undecidable | broken | missing | new
  std::string verdict;
  std::string note;
};

struct GateReport {
  std::vector<BenchmarkVerdict> rows;
  std::vector<std::string> fingerprint_differences;  // "cpu_model: 'A' vs 'B'"
  bool forced = false;
  GateOptions options;
  std::string baseline_label, current_label;
  int count(const std::string& verdict) const;
  bool failed() const { return count("regression") + count("broken") > 0; }
};

// Fingerprint fields (kComparableFields) that differ between two environments.
std::vector<std::string> fingerprint_differences(const nlohmann::json& a, const nlohmann::json& b);

// Throws std::invalid_argument (exit 2) when fingerprints differ and !options.force.
GateReport compare_runs(const nlohmann::json& baseline, const nlohmann::json& current, const GateOptions& options,
                        const std::string& baseline_label, const std::string& current_label);

void print_gate_table(std::ostream& out, const GateReport& report);
std::string gate_markdown(const GateReport& report);
std::string gate_junit(const GateReport& report);
nlohmann::json gate_json(const GateReport& report);

}  // namespace pairbench::harness
