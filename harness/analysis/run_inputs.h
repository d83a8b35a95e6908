// Where a command's inputs come from: run files read as a gate's input, this machine's stored
// baseline (from the history or results/baselines/), the history opened from an argument, and a
// run appended to it with retries. Bad input is an InputError naming the file or argument (the
// command's usage error: one line, exit 2).
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "harness/store/history.h"

namespace pairbench::harness {

struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A run file to compare; `what` names the argument ("--baseline", "current run file") for a path
// that is no file. InputError for a bad file or one without benchmarks.
nlohmann::json read_input(const std::string& path, const std::string& what);
// The run's machine key (pairbench.environment.machine_key), a string.
std::string machine_key_of(const nlohmann::json& doc, const std::string& path);
// Opens the history `db` (a path or postgresql:// URL) named by option `what`; InputError for
// what is not a history, or (`must_exist`) an SQLite path with nothing there.
std::unique_ptr<History> open_history_db(const std::string& db, const std::string& what, bool must_exist);

// Appends a run to the history database (once: a run already there by its pairbench.run_id is
// not stored again), retrying with backoff while another writer holds the lock, for up to
// PAIRBENCH_HISTORY_RETRY_S seconds (default 120) or until SIGINT/SIGTERM. Returns what the run
// file records as `pairbench.history_write`: {"db", "status": stored | already_stored | failed,
// "history_run_id" or "error", "attempts"}.
nlohmann::json record_history(const std::string& history_path, const nlohmann::json& doc, const std::string& run_file);
// PAIRBENCH_HISTORY_RETRY_S in seconds (default 120); throws InputError when it is not a number of seconds.
double history_retry_s();

// The newest run file (by name: run-<UTC time>-...) in the results directory.
std::string newest_run(const std::string& results_dir);
// results/baselines/<machine_key>.json, never outside the results directory.
std::string baseline_path(const std::string& results_dir, const std::string& machine_key, const std::string& run_path);
// This machine's baseline (machine key `key`): from the database `db` where one is named ("" = none)
// and holds it, else results_dir/baselines/<key>.json; `current` names the run it is for. InputError
// (naming --baseline) where neither has one.
struct StoredBaseline {
  nlohmann::json doc;
  std::string label;  // the file, or "DB: baseline of machine KEY (run UID)"
};
StoredBaseline stored_baseline(const std::string& key, const std::string& db, const std::string& results_dir,
                               const std::string& current);

}  // namespace pairbench::harness
