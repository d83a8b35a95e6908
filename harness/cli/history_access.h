// The history as the commands use it: opened from an argument, trends with their change points,
// the export (what the report draws of a history), a run appended with retries; and the
// `history` command's subcommands that live in their own files.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/analysis/history_views.h"
#include "harness/store/history.h"

namespace pairbench::harness {

// Opens the history `db` (a path or postgresql:// URL) named by option `what`; UsageError for
// what is not a history, or (`must_exist`) an SQLite path with nothing there.
std::unique_ptr<History> open_history_db(const std::string& db, const std::string& what, bool must_exist);

// Appends a run to the history database (once: a run already there by its pairbench.run_id is
// not stored again), retrying with backoff while another writer holds the lock, for up to
// PAIRBENCH_HISTORY_RETRY_S seconds (default 120) or until SIGINT/SIGTERM. Returns what the run
// file records as `pairbench.history_write`: {"db", "status": stored | already_stored | failed,
// "history_run_id" or "error", "attempts"}.
nlohmann::json record_history(const std::string& history_path, const nlohmann::json& doc, const std::string& run_file);
// PAIRBENCH_HISTORY_RETRY_S in seconds (default 120); throws UsageError when it is not a number of seconds.
double history_retry_s();

// `history import RUN.json...` (history_import.cpp): stores run files in the history (each once,
// however often imported); exit 2 for a bad or partial run file (nothing stored), 3 when a write failed.
int cmd_history_import(const std::vector<std::string>& run_files, const std::string& db);
// `history speed`: measure_history_speed on a new history (`db`, or a temporary SQLite file).
int cmd_history_speed(const std::string& db, int runs, int benchmarks, int samples, const std::string& out);

}  // namespace pairbench::harness
