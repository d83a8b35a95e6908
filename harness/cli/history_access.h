// The `history` command's subcommands that live in their own files (the history opened from an
// argument and a run appended with retries: analysis/run_inputs.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/analysis/history_views.h"
#include "harness/analysis/run_inputs.h"
#include "harness/store/history.h"

namespace pairbench::harness {

// `history import RUN.json...` (history_import.cpp): stores run files in the history (each once,
// however often imported); exit 2 for a bad or partial run file (nothing stored), 3 when a write failed.
int cmd_history_import(const std::vector<std::string>& run_files, const std::string& db);
// `history speed`: measure_history_speed on a new history (`db`, or a temporary SQLite file).
int cmd_history_speed(const std::string& db, int runs, int benchmarks, int samples, const std::string& out);

}  // namespace pairbench::harness
