// `pairbench compare`: two run files, benchmark by benchmark, through the gate.
#include "harness/cli/command.h"
#include "harness/cli/gate_inputs.h"
#include "harness/cli/options.h"
#include "harness/store/file_checks.h"

namespace pairbench::harness {

namespace {

int cmd_compare(const std::string& baseline, const std::string& current, const GateArgs& args) {
  check_gate_outputs(args);
  check_history_argument(args.history, "--db");
  const auto a = read_input(baseline, "baseline run file"), b = read_input(current, "current run file");
  return finish_gate(compare_or_refuse(a, b, args, baseline, current), args);
}

}  // namespace

Command command_compare() {
  return {"compare", "compare two run files benchmark by benchmark",
          "0 no regression; 1 a regression; 2 bad input; 4 some benchmark undecided (--undecided fail)",
          "the run files compared", [](CLI::App& cmd) -> CommandAction {
            struct Args {
              std::string baseline, current;
              GateArgs gate;
            };
            auto a = std::make_shared<Args>();
            const auto input = path_is(regular_file_problem, "FILE");
            cmd.add_option("baseline", a->baseline, "baseline run file")->required()->check(input);
            cmd.add_option("current", a->current, "current run file")->required()->check(input);
            cmd.add_flag("--force", a->gate.options.force, "compare runs from different machines or builds");
            add_gate_options(&cmd, a->gate);
            return [a](const std::string&) { return cmd_compare(a->baseline, a->current, a->gate); };
          }};
}

}  // namespace pairbench::harness
