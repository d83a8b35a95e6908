// Shared option validators and the gate's options; the bench directory and experiment selection.
#include "harness/cli/options.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <regex>
#include <sstream>

#include "harness/cli/command.h"
#include "harness/store/file_checks.h"
#include "harness/store/history.h"
#include "harness/store/json_field.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

// Every floating-point option: a finite number in [lo, hi]. CLI11's Range lets NaN through (each
// comparison with NaN is false), so `--alpha nan` once switched the gate off silently.
CLI::Validator finite_in(double lo, double hi) {
  std::ostringstream bounds;
  bounds << "[" << lo << ", " << hi << "]";
  const std::string expected = "a finite number in " + bounds.str();
  return CLI::Validator(
      [lo, hi, expected](std::string& text) -> std::string {
        double v = 0;
        const char* end = text.data() + text.size();
        const auto [stop, ec] = std::from_chars(text.data(), end, v);
        if (ec != std::errc() || stop != end || !std::isfinite(v) || v < lo || v > hi) {
          return "expected " + expected + ", got " + quoted_for_message(text);
        }
        return "";
      },
      "FLOAT in " + bounds.str());
}

// A seed: decimal digits that fit 64 bits (CLI11 alone takes "-1" as 2^64 - 1).
CLI::Validator unsigned_64() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::uint64_t v = 0;
        const char* end = text.data() + text.size();
        const auto [stop, ec] = std::from_chars(text.data(), end, v);
        if (text.empty() || ec != std::errc() || stop != end) {
          return "expected a whole number from 0 to 18446744073709551615, got " + quoted_for_message(text);
        }
        return "";
      },
      "UINT64");
}

// Comma-separated names: an empty item ("," or "a,,b") used to select nothing, run nothing and exit 0.
CLI::Validator name_list(const std::string& of_what) {
  return CLI::Validator(
      [of_what](std::string& text) -> std::string {
        std::string item;
        for (const char c : text + ",") {
          if (c != ',') {
            if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
              return "expected comma-separated " + of_what + " without spaces, got " + quoted_for_message(text);
            }
            item += c;
          } else if (item.empty()) {
            return "empty name in " + quoted_for_message(text) + " (expected comma-separated " + of_what + ")";
          } else {
            item.clear();
          }
        }
        return "";
      },
      "NAME[,NAME...]");
}

// A path check from file_checks.h as a validator: "--opt: PATH: is a FIFO (named pipe), expected ...".
CLI::Validator path_is(std::string (*problem)(const std::string&), const std::string& description) {
  return CLI::Validator([problem](std::string& path) { return problem(path); }, description);
}

CLI::Validator benchmark_regex() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        try {
          std::regex re(text, std::regex::ECMAScript);
        } catch (const std::regex_error& e) {
          return "not a regular expression: " + quoted_for_message(text) + " (" + e.what() + ")";
        }
        return "";
      },
      "REGEX");
}

// A history given by --db (or PAIRBENCH_DB): an SQLite path, absent (created on first use) or a
// pairbench history, or a postgresql:// URL (checked for syntax here, for identity on open);
// `keywords` ("auto", "none") pass as they are.
CLI::Validator history_path(std::vector<std::string> keywords) {
  return CLI::Validator(
      [keywords](std::string& path) -> std::string {
        if (std::find(keywords.begin(), keywords.end(), path) != keywords.end()) return "";
        try {
          History::check_path(path);
        } catch (const std::exception& e) {
          return e.what();
        }
        return "";
      },
      "HISTORY");
}

// `db_default`: whether PAIRBENCH_DB names the history where --db is absent (gate yes; compare,
// ab and selftest read a history only when one is named on their command line).
void add_process_sharing_option(CLI::App& cmd, std::string& process_sharing) {
  cmd.add_option("--process-sharing", process_sharing,
                 "experiment (default): the benchmarks of one experiment and arm environment that allow it share "
                 "a process, one sample each in an order drawn per process, so that a sample costs its work "
                 "and not a process start (an experiment that measures the process's own heap or pages runs "
                 "one benchmark per process; rows say shared_process); none: one benchmark per process")
      ->check(CLI::IsMember({"experiment", "none"}));
}

void add_gate_options(CLI::App* cmd, GateArgs& gate, bool db_default, bool db_option) {
  cmd->add_option("--threshold", gate.options.threshold, "relative slowdown that counts as a regression (0.05 = 5%)")
      ->check(finite_in(0.0001, 10.0));
  cmd->add_option("--instructions-threshold", gate.options.instructions_threshold,
                  "relative increase of instructions per iteration that counts (0.01 = 1%)")
      ->check(finite_in(0.0001, 10.0));
  cmd->add_option("--alpha", gate.options.alpha, "whole-gate false-regression level")->check(finite_in(1e-9, 0.5));
  // Typed options read as text: IsMember has refused any other name before the callback runs.
  cmd->add_option_function<std::string>(
         "--undecided", [&gate](const std::string& s) { gate.options.undecided = *undecided_policy_from_string(s); },
         "exit status when some benchmark could not be decided: fail (4, default) or pass (0)")
      ->check(CLI::IsMember({"pass", "fail"}));
  cmd->add_option_function<std::string>(
         "--correction", [&gate](const std::string& s) { gate.options.correction = *correction_from_string(s); },
         "holm (family-wise) or bh (false discovery rate)")
      ->check(CLI::IsMember({"holm", "bh"}));
  cmd->add_option_function<std::string>(
         "--moderation", [&gate](const std::string& s) { gate.options.moderation = *moderation_from_string(s); },
         "eb: borrow noise from every benchmark (empirical Bayes), none: each benchmark alone")
      ->check(CLI::IsMember({"eb", "none"}));
  cmd->add_option_function<std::string>(
         "--resolution", [&gate](const std::string& s) { gate.options.resolution = s == "on"; },
         "between two runs, on (default): a benchmark is unchanged when its interval lies inside +-max(threshold, its "
         "resolution), the smallest change its noise lets this comparison tell (docs/gate.md); off: inside +-threshold "
         "only, the rest undecided")
      ->check(CLI::IsMember({"on", "off"}));
  if (db_option) {
    auto* db =
        cmd->add_option("--db,--history", gate.history,
                        "history database (an SQLite path or a postgresql:// URL) for each benchmark's run-to-run "
                        "noise and, for gate, this machine's baseline (gate default: $PAIRBENCH_DB, else "
                        "results/history.sqlite where it exists; none to leave it out)")
            ->check(history_path({"auto", "none"}));
    if (db_default) db->envname(kDbEnv);
  }
  const auto output = path_is(regular_file_or_absent_problem, "FILE");
  cmd->add_option("--markdown", gate.markdown, "also write a Markdown report (CI job summary)")->check(output);
  cmd->add_option("--junit", gate.junit, "also write JUnit XML (CI test view)")->check(output);
  cmd->add_option("--json", gate.json, "also write the comparison as JSON")->check(output);
}

std::vector<std::string> split_csv(const std::string& s) {
  std::vector<std::string> out;
  std::string item;
  for (char c : s + ",") {
    if (c == ',') {
      if (!item.empty()) out.push_back(item);
      item.clear();
    } else {
      item += c;
    }
  }
  return out;
}

std::vector<ExperimentEntry> select_experiments(std::vector<ExperimentEntry> all, const std::string& experiments,
                                                const std::string& arms) {
  std::vector<ExperimentEntry> out;
  if (!experiments.empty()) {
    for (const std::string& want : split_csv(experiments)) {
      bool found = false;
      for (const auto& e : all) {
        const std::string area = e.name.substr(0, e.name.find('.'));
        if (e.name == want || area == want) {
          found = true;
          if (std::none_of(out.begin(), out.end(), [&](const auto& o) { return o.name == e.name; })) out.push_back(e);
        }
      }
      if (!found) {
        std::string known;
        for (const auto& e : all) known += (known.empty() ? "" : ", ") + e.name;
        throw UsageError("--experiments: unknown experiment '" + want + "' (known: " + known + ")");
      }
    }
  } else {
    out = std::move(all);
  }
  if (!arms.empty()) {
    const auto wanted = split_csv(arms);
    for (const std::string& want : wanted) {
      bool found = false;
      for (const auto& e : out) {
        for (const auto& a : e.arms) found = found || a.name == want;
      }
      if (!found) throw UsageError("--arms: unknown arm '" + want + "' in the selected experiments");
    }
    for (auto& e : out) {
      std::erase_if(e.benchmarks, [&](const BenchmarkEntry& b) {
        return std::find(wanted.begin(), wanted.end(), b.arm) == wanted.end();
      });
    }
  }
  return out;
}

}  // namespace pairbench::harness
