// `pairbench env`: the environment fingerprint that run files carry, and its warnings.
#include <iostream>

#include "harness/cli/command.h"
#include "harness/exec/environment.h"
#include "pairbench/build_info.h"

namespace pairbench::harness {

namespace {

int cmd_env(const std::string& format) {
  const Environment env = capture_environment(PAIRBENCH_SOURCE_DIR);
  if (format == "json") {
    std::cout << env.to_json().dump(2) << "\n";
    return kExitOk;
  }
  for (const auto& [k, v] : env.fingerprint.items()) {
    std::cout << "  " << k << ": " << (v.is_string() ? v.get<std::string>() : v.dump()) << "\n";
  }
  if (env.warnings.empty()) std::cout << "no warnings\n";
  for (const auto& w : env.warnings) std::cout << "WARNING: " << w << "\n";
  return kExitOk;
}

}  // namespace

Command command_env() {
  return {"env", "the environment fingerprint and its warnings", "0 printed; 2 bad input", "the environment",
          [](CLI::App& cmd) -> CommandAction {
            auto format = std::make_shared<std::string>("text");
            cmd.add_option("--format", *format)->check(CLI::IsMember({"text", "json"}));
            return [format](const std::string&) { return cmd_env(*format); };
          }};
}

}  // namespace pairbench::harness
