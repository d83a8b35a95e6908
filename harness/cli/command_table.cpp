// The command table: commands.def expanded twice. A test builds this file again with
// PAIRBENCH_COMMANDS_DEF naming its own table (the real one plus a throw-away command).
#include "harness/cli/command.h"

#ifndef PAIRBENCH_COMMANDS_DEF
#define PAIRBENCH_COMMANDS_DEF "harness/cli/commands.def"
#endif

namespace pairbench::harness {

#define PAIRBENCH_COMMAND(name) Command command_##name();
#include PAIRBENCH_COMMANDS_DEF
#undef PAIRBENCH_COMMAND

std::vector<Command> all_commands() {
  return {
#define PAIRBENCH_COMMAND(name) command_##name(),
#include PAIRBENCH_COMMANDS_DEF
#undef PAIRBENCH_COMMAND
  };
}

}  // namespace pairbench::harness
