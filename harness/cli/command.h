// One pairbench command: its name and one line for `pairbench --help`, the exit statuses its own
// --help ends with, and the options it adds to its CLI11 subcommand. Each command is one file in
// harness/cli/ defining `Command command_<name>()`, listed once in commands.def (the table
// command_table.cpp builds); main.cpp only parses and dispatches. Adding a command is that file
// plus its table line (tests/harness/cli_command_table_test.cpp does it with a throw-away one).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "harness/exec/exit_status.h"
#include "harness/exec/interrupt.h"

namespace pairbench::harness {

// Bad input or usage: printed as one line, exit status 2.
struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What a command runs once its command line is parsed: the process exit status. `command_line`
// is the whole invocation (the run file records it). Bad input throws UsageError.
using CommandAction = std::function<int(const std::string& command_line)>;

struct Command {
  std::string name;
  std::string summary;        // its line in `pairbench --help`
  std::string exit_statuses;  // the last lines of its --help
  std::string reads_json;     // what JSON it reads, named in an "unexpected JSON shape" message
  // Adds the command's options to `cmd`, bound to state the returned action owns.
  std::function<CommandAction(CLI::App& cmd)> add_options;
};

// Every command, in the order `pairbench --help` lists them (commands.def).
std::vector<Command> all_commands();

// `cmd`, a subcommand of pairbench's CLI11 app, as the command table describes it: its exit
// statuses as the footer of its --help, its options bound to the returned action. main.cpp and the
// command reference both build the commands this way, so that the reference is the --help text.
CommandAction add_command(CLI::App& app, const Command& c);

// docs/commands.md: every command's --help (and its subcommands'), generated from the table.
std::string command_reference_markdown(const std::vector<Command>& commands);

// Commands that measure or wait on a child call this before they start: the first SIGINT/SIGTERM
// then lets them stop launching, keep what was measured and exit 130/143. Every other command
// ends at once, its children's process groups killed (main installs that).
inline void finish_up_on_interrupt() { install_interrupt_handlers(OnInterrupt::kFinishUp); }

}  // namespace pairbench::harness
