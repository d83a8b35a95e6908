// The history as the commands use it (history_access.h).
#include "harness/cli/history_access.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <thread>

#include "harness/analysis/regressions.h"
#include "harness/cli/command.h"
#include "harness/exec/interrupt.h"
#include "harness/gate/gate.h"
#include "harness/store/run_file.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

}  // namespace pairbench::harness
