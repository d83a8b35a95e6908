// A throw-away command, built only into the tests' pairbench_throwaway: all that adding a command
// takes is this file and its line in the table (commands.def beside it, which adds to the real one).
#include <iostream>
#include <memory>

#include "harness/cli/command.h"
#include "harness/cli/options.h"

namespace pairbench::harness {

Command command_hello() {
  return {"hello", "greet someone (a throw-away command)", "0 greeted; 2 bad input", "nothing",
          [](CLI::App& cmd) -> CommandAction {
            auto name = std::make_shared<std::string>("world");
            cmd.add_option("--name", *name, "who to greet")->check(name_list("names"));
            return [name](const std::string&) {
              std::cout << "hello, " << *name << "\n";
              return kExitOk;
            };
          }};
}

}  // namespace pairbench::harness
