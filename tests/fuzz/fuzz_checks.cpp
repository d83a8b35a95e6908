// The checks behind tests/fuzz/*_fuzzer.cpp and tests/fuzz/fuzz_regressions_test.cpp.
#include "tests/fuzz/fuzz_checks.h"

#include <sstream>
#include <stdexcept>
#include <string>

#include "harness/gate/gate.h"
#include "harness/gate/print.h"
#include "harness/store/run_file.h"

namespace pairbench::fuzz {
namespace {

// A refusal must be one line that starts with what names the input.
void check_message(const std::string& message, const std::string& source) {
  if (message.find('\n') != std::string::npos) throw std::logic_error("a refusal of more than one line: " + message);
  if (!source.empty() && message.rfind(source + ": ", 0) != 0) {
    throw std::logic_error("a refusal that does not start with '" + source + ": ': " + message);
  }
}

// The document, or nothing when the reader refused the text (correctly: in one line).
bool parse(std::string_view text, const std::string& source, nlohmann::json& doc) {
  try {
    doc = harness::parse_run_file_text(text, source);
    return true;
  } catch (const harness::RunFileError& e) {
    check_message(e.what(), source);
    return false;
  }
}

}  // namespace

bool check_run_file_input(std::string_view data) {
  nlohmann::json doc;
  if (!parse(data, "fuzz input", doc)) return false;
  // Accepted: written the way write_json_atomically writes it, it must read back the same. A
  // RunFileError here escapes: pairbench would have written a run file it then refuses.
  const std::string written = doc.dump(2) + "\n";
  if (harness::parse_run_file_text(written, "rewritten fuzz input") != doc) {
    throw std::logic_error("an accepted run file reads back different after it is written");
  }
  return true;
}

bool check_gate_input(std::string_view data) {
  const auto cut = data.find(kGateSeparator);
  if (cut == std::string_view::npos) return false;
  nlohmann::json baseline, current;
  if (!parse(data.substr(0, cut), "baseline", baseline)) return false;
  if (!parse(data.substr(cut + kGateSeparator.size()), "current", current)) return false;
  harness::GateOptions options;
  options.force = true;
  // The input's length picks the correction and the noise model, so that each path is fuzzed.
  if (data.size() % 2) options.correction = harness::Correction::bh;
  if (data.size() % 3 == 0) options.moderation = harness::Moderation::none;
  harness::GateReport report;
  try {
    report = harness::compare_runs(baseline, current, options, "baseline", "current");
  } catch (const std::invalid_argument& e) {
    check_message(e.what(), "");
    return false;
  }
  std::ostringstream table;
  harness::print_gate_table(table, report);
  const std::string outputs =
      harness::gate_markdown(report) + harness::gate_junit(report) + harness::gate_json(report).dump(2);
  const int status = report.exit_status();
  if (status != 0 && status != 1 && status != harness::kGateExitUndecided) {
    throw std::logic_error("gate exit status " + std::to_string(status));
  }
  if (table.str().rfind(report.headline(), 0) != 0 || outputs.empty()) {
    throw std::logic_error("the gate table does not open with the headline");
  }
  return true;
}

}  // namespace pairbench::fuzz
