// `pairbench confirm`: the nightly's same-runner confirmation policy (harness/sampling/confirmation.h)
// as steps ci/confirm.sh calls around its `pairbench ab`: which suspects to measure again, and what
// the ab's verdicts make of them.
#include <iostream>
#include <memory>

#include "harness/cli/command.h"
#include "harness/cli/options.h"
#include "harness/sampling/confirmation.h"
#include "harness/store/file_checks.h"
#include "harness/store/run_file.h"

namespace pairbench::harness {
namespace {

struct ConfirmArgs {
  std::string gate, ab, out, summary, confirmed;
  int max_suspects = 40, count = 0;
  double seconds = 0;
};

int cmd_select(const ConfirmArgs& a) {
  const GateJson night = read_gate_json(a.gate);
  const std::vector<std::string> names = select_suspects(night, a.max_suspects);
  auto or_dash = [](const std::string& s) { return s.empty() ? std::string("-") : s; };
  std::cout << names.size() << " " << or_dash(night.baseline_build) << " " << or_dash(night.current_build) << " "
            << (names.empty() ? "-" : anchored(names)) << "\n";
  return kExitOk;
}

int cmd_none(const ConfirmArgs& a) {
  write_json_atomically(a.out, to_json(no_suspects(read_gate_json(a.gate))));
  return kExitOk;
}

int cmd_classify(const ConfirmArgs& a) {
  const Confirmation c = classify(read_gate_json(a.gate), read_gate_json(a.ab), a.seconds);
  write_json_atomically(a.out, to_json(c));
  const std::vector<std::string> lines = summary_lines(c, a.count);
  if (!a.summary.empty()) {
    std::string text;
    for (const std::string& line : lines) text += line + "\n";
    write_text_atomically(a.summary, text);
  }
  std::cout << lines[2] << "\n";
  return c.failed() ? kExitRegression : kExitOk;
}

int cmd_bisect_args(const ConfirmArgs& a) {
  const ConfirmedRegressions confirmed = read_confirmed(a.confirmed);
  if (confirmed.benchmarks.empty()) {
    std::cout << "none\n";
    return kExitOk;
  }
  // The shas confirmed.json names, else the gate's runs'.
  std::string good = confirmed.baseline_git_sha, bad = confirmed.current_git_sha;
  if ((good.empty() || bad.empty()) && !a.gate.empty()) {
    const GateJson gate = read_gate_json(a.gate);
    if (good.empty()) good = gate.baseline_run.git_sha;
    if (bad.empty()) bad = gate.current_run.git_sha;
  }
  if (good.empty() || bad.empty()) {
    throw UsageError(a.confirmed + ": no git sha for the " + (good.empty() ? "baseline" : "night") +
                     " (baseline_git_sha / current_git_sha there, or the runs of --gate)");
  }
  std::cout << good << " " << bad << " " << anchored(confirmed.benchmarks) << "\n";
  return kExitOk;
}

}  // namespace

Command command_confirm() {
  return {
      "confirm", "the nightly's same-runner confirmation of the gate's suspects (ci/confirm.sh's steps)",
      "0 done (classify: nothing confirmed); 1 classify: a regression confirmed; 2 bad input",
      "the gate's JSON or confirmed.json", [](CLI::App& cmd) -> CommandAction {
        cmd.require_subcommand(1);
        auto a = std::make_shared<ConfirmArgs>();
        const auto file = path_is(regular_file_problem, "FILE");
        auto* select = cmd.add_subcommand(
            "select",
            "print the suspects to measure again: COUNT BASELINE_BUILD CURRENT_BUILD REGEX (- for none); "
            "regressions and undecided first, then by p-value");
        select->add_option("--gate", a->gate, "the night's gate JSON (gate --json)")->required()->check(file);
        select->add_option("--max-suspects", a->max_suspects, "at most this many benchmarks")
            ->check(CLI::Range(0, 100000));
        auto* none = cmd.add_subcommand("none", "write confirmed.json with nothing to confirm (no suspect)");
        none->add_option("--gate", a->gate, "the night's gate JSON")->required()->check(file);
        none->add_option("--out", a->out, "confirmed.json to write")->required();
        auto* classify_cmd = cmd.add_subcommand(
            "classify",
            "each suspect as the ab left it: confirmed, cleared or unresolved (confirmed.json and the "
            "summary); exit 1 when a regression is confirmed");
        classify_cmd->add_option("--gate", a->gate, "the night's gate JSON")->required()->check(file);
        classify_cmd->add_option("--ab", a->ab, "the confirming ab's gate JSON (ab --json)")->required()->check(file);
        classify_cmd->add_option("--out", a->out, "confirmed.json to write")->required();
        classify_cmd->add_option("--summary", a->summary, "also write the job summary's paragraph (Markdown)");
        classify_cmd->add_option("--count", a->count, "how many suspects the ab measured")
            ->check(CLI::Range(0, 100000));
        classify_cmd->add_option("--seconds", a->seconds, "the ab's wall time")->check(CLI::Range(0.0, 1e9));
        auto* bisect = cmd.add_subcommand("bisect-args", "print GOOD BAD REGEX for ci/bisect.sh --confirmed, or none");
        bisect->add_option("--confirmed", a->confirmed, "confirmed.json")->required()->check(file);
        bisect->add_option("--gate", a->gate, "the night's gate JSON: its runs' git shas where confirmed.json has none")
            ->check(file);
        return [a, select, none, classify_cmd](const std::string&) {
          for (const std::string* out : {&a->out, &a->summary}) {
            if (out->empty()) continue;
            try {
              require_regular_file_or_absent(*out, "--out");
              check_writable(*out);
            } catch (const std::exception& e) {
              throw UsageError(e.what());
            }
          }
          if (*select) return cmd_select(*a);
          if (*none) return cmd_none(*a);
          if (*classify_cmd) return cmd_classify(*a);
          return cmd_bisect_args(*a);  // the fourth: one is required
        };
      }};
}

}  // namespace pairbench::harness
