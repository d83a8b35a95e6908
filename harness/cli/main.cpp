// pairbench: runs matched experiments (bench binaries), records run files and history, compares
// runs and gates regressions. The commands are in the table (commands.def), each in its own file
// with its options, help and exit statuses; this file parses and dispatches. Exit statuses common
// to all: 0 ok; 2 bad input or usage; 130 / 143 interrupted by SIGINT / SIGTERM. Each command's
// --help lists its own (1 regression, 3 a benchmark process failed or a result could not be
// stored where asked, 4 the gate could not decide).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "harness/cli/command.h"
#include "harness/exec/interrupt.h"
#include "harness/exec/say.h"
#include "harness/store/history.h"
#include "harness/store/json_field.h"

using namespace pairbench::harness;

namespace {

// "pairbench: unknown command 'x' (list, run, ...; see --help)", from the table.
int unknown_command(const std::string& command, const std::vector<Command>& commands) {
  std::string names;
  for (const Command& c : commands) names += (names.empty() ? "" : ", ") + c.name;
  std::cerr << "pairbench: unknown command '" << command << "' (" << names << "; see --help)\n";
  return kExitUsage;
}

// The action's exit status; what escaped it as one line. `reads_json` names what the command reads.
int run_action(const CommandAction& action, const std::string& command_line, const std::string& reads_json) {
  try {
    return action(command_line);
  } catch (const HistoryBusy& e) {
    // The history's lock stayed held, or its server could not be reached: nothing was changed.
    std::cerr << "pairbench: " << e.what() << "\n";
    return interrupt_signal() ? interrupted_exit_status() : kExitBenchmarkFailed;
  } catch (const nlohmann::json::exception& e) {
    // A field read without a check somewhere: never nlohmann's "[json.exception...]" text.
    std::cerr << "pairbench: internal: unexpected JSON shape in " << reads_json << " (" << json_exception_text(e)
              << ")\n";
    return interrupt_signal() ? interrupted_exit_status() : kExitUsage;
  } catch (const std::exception& e) {
    std::cerr << "pairbench: " << e.what() << "\n";
    return interrupt_signal() ? interrupted_exit_status() : kExitUsage;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"pairbench: matched performance experiments (baseline vs treatment arms)"};
  app.require_subcommand(1);
  // The output level (harness/exec/say.h), before or after the command's name: taken out of the
  // arguments here, so that no command's own parsing falls through to its parent's options (a
  // nested command such as `history export` must still refuse what it does not know). Declared on
  // the app for its --help.
  bool quiet = false, verbose = false, help_only = false;
  app.add_flag("--quiet", help_only, "progress and notes left out: only warnings, failures and results");
  app.add_flag("--verbose", help_only, "also each benchmark process as it is launched (command line, environment set)");
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    const std::string a = argv[i];
    if (i > 0 && (a == "--quiet" || a == "--verbose")) {
      (a == "--quiet" ? quiet : verbose) = true;
      continue;
    }
    args.push_back(argv[i]);
  }
  if (quiet && verbose) {
    std::cerr << "pairbench: --quiet excludes --verbose (see --help)\n";
    return kExitUsage;
  }
  const std::vector<Command> commands = all_commands();
  std::vector<std::pair<CLI::App*, CommandAction>> parsed;
  for (const Command& c : commands) {
    CommandAction action = add_command(app, c);
    parsed.emplace_back(app.get_subcommand(c.name), std::move(action));
  }
  if (args.size() > 1 && args[1][0] != '-' &&
      std::none_of(commands.begin(), commands.end(), [&](const Command& c) { return c.name == args[1]; })) {
    return unknown_command(args[1], commands);
  }
  try {
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "pairbench: " << e.what() << " (see --help)\n";
    return kExitUsage;
  }
  // Every command ends at once on SIGINT/SIGTERM, no child left running, unless its action asks
  // to finish up (finish_up_on_interrupt: those that measure or wait on a child).
  install_interrupt_handlers(OnInterrupt::kExit);
  set_verbosity(quiet ? Verbosity::quiet : verbose ? Verbosity::verbose : Verbosity::normal);
  std::string command_line;
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);
  for (std::size_t i = 0; i < commands.size(); ++i) {
    if (*parsed[i].first) return run_action(parsed[i].second, command_line, commands[i].reads_json);
  }
  return kExitUsage;
}
