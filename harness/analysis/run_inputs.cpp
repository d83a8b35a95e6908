// Where a command's inputs come from (run_inputs.h).
#include "harness/analysis/run_inputs.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "harness/exec/interrupt.h"
#include "harness/store/file_checks.h"
#include "harness/store/json_field.h"
#include "harness/store/run_file.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

// `what` names the argument ("--baseline", "current run file") for a path that is no file.
nlohmann::json read_input(const std::string& path, const std::string& what) {
  nlohmann::json doc;
  try {
    require_regular_file(path, what);  // a FIFO would block the reader forever
    doc = read_run_file(path);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(path + ": unexpected JSON shape: " + json_exception_text(e));
  } catch (const std::runtime_error& e) {
    throw InputError(e.what());
  } catch (const std::invalid_argument& e) {
    throw InputError(e.what());
  }
  if (doc["benchmarks"].empty()) throw InputError(path + ": benchmarks: empty (no benchmark produced a sample)");
  return doc;
}

// The run's machine key (pairbench.environment.machine_key), a string.
std::string machine_key_of(const nlohmann::json& doc, const std::string& path) {
  try {
    return JsonField(doc, path)["pairbench"]["environment"]["machine_key"].string();
  } catch (const JsonFieldError& e) {
    throw InputError(e.what());
  }
}

std::unique_ptr<History> open_history_db(const std::string& db, const std::string& what, bool must_exist) {
  if (must_exist && !is_postgres_url(db) && !fs::exists(db)) {
    throw InputError(what + ": " + db + " does not exist (every `pairbench run` appends to it)");
  }
  try {
    return std::make_unique<History>(db);
  } catch (const NotAHistory& e) {
    throw InputError(what + ": " + e.what());
  }
}

double history_retry_s() {
  const char* text = std::getenv("PAIRBENCH_HISTORY_RETRY_S");
  if (!text || !*text) return 120;
  char* end = nullptr;
  const double s = std::strtod(text, &end);
  if (*end != '\0' || !(s >= 0 && s <= 86400)) {
    throw InputError(std::string("PAIRBENCH_HISTORY_RETRY_S: expected seconds from 0 to 86400, got '") + text + "'");
  }
  return s;
}

nlohmann::json record_history(const std::string& history_path, const nlohmann::json& doc, const std::string& run_file) {
  using Clock = std::chrono::steady_clock;
  const double budget_s = history_retry_s();
  const auto start = Clock::now();
  auto elapsed_s = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  nlohmann::json result = {{"db", redact_db(history_path)}};
  std::string error;
  int attempts = 0;
  double backoff_s = 0.5;
  for (;;) {
    ++attempts;
    // Each attempt waits for the lock a quarter of what is left (0.1 to 10 s), so a few
    // attempts fit in the budget and none outlasts it by much.
    const double wait_s = std::clamp((budget_s - elapsed_s()) / 4, 0.1, 10.0);
    try {
      std::error_code ec;
      const fs::path parent = is_postgres_url(history_path) ? fs::path() : fs::path(history_path).parent_path();
      if (!parent.empty()) fs::create_directories(parent, ec);
      History history(history_path, static_cast<int>(1000 * wait_s));
      bool stored_before = false;
      const std::int64_t id = history.append_run(doc, run_file, &stored_before);
      result["status"] = stored_before ? "already_stored" : "stored";
      result["history_run_id"] = id;
      result["attempts"] = attempts;
      return result;
    } catch (const HistoryBusy& e) {
      error = e.what();  // another writer holds the lock, or the server is unreachable: worth waiting for
    } catch (const std::exception& e) {
      error = e.what();  // not a lock (unwritable, not a history): retrying cannot help
      break;
    }
    const double left_s = budget_s - elapsed_s();
    if (left_s <= 0) break;
    if (!sleep_unless_interrupted(std::min(backoff_s, left_s))) {
      error += "; retries stopped by " + signal_name(interrupt_signal());
      break;
    }
    backoff_s = std::min(2 * backoff_s, 8.0);
  }
  char took[64];
  std::snprintf(took, sizeof took, " (%d attempt%s over %.1f s)", attempts, attempts == 1 ? "" : "s", elapsed_s());
  result["status"] = "failed";
  result["error"] = error + took;
  result["attempts"] = attempts;
  return result;
}

// The newest run file (by name: run-<UTC time>-...) in the results directory.
std::string newest_run(const std::string& results_dir) {
  std::string best;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(results_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("run-", 0) == 0 && entry.path().extension() == ".json" && entry.path().string() > best) {
      best = entry.path().string();
    }
  }
  if (best.empty()) throw InputError("--current: no run-*.json in " + results_dir + " (run `pairbench run` first)");
  return best;
}

// results/baselines/<machine_key>.json. The key comes from a run file (`run_path`): a key such as
// "../../x" must not place the baseline outside the results directory.
std::string baseline_path(const std::string& results_dir, const std::string& machine_key, const std::string& run_path) {
  try {
    return keyed_path_under(results_dir + "/baselines", machine_key, ".json",
                            run_path + ": pairbench.environment.machine_key");
  } catch (const FileCheckError& e) {
    throw InputError(e.what());
  }
}

StoredBaseline stored_baseline(const std::string& key, const std::string& db_name, const std::string& results_dir,
                               const std::string& current) {
  // Same machine key as the current run (CPU, GPU, driver, build): from the database where one is
  // named and holds it, else from results/baselines/.
  std::string in_db;
  if (!db_name.empty()) {
    const auto db = open_history_db(db_name, "--db", /*must_exist=*/true);
    if (const std::int64_t id = db->baseline_run(key)) {
      const auto info = db->run(id);
      const std::string label =
          db->name() + ": baseline of machine " + key + " (run " + (info ? info->run_uid : "?") + ")";
      if (auto doc = db->run_document(id)) return {std::move(*doc), label};
      in_db = "; " + label + " was stored without its run file (before schema 2)";
    }
    if (in_db.empty()) in_db = " or in " + db->name();
  }
  const std::string path = baseline_path(results_dir, key, current);
  if (!fs::exists(path)) {
    throw InputError("--baseline: no baseline for machine " + key + " (" + path + in_db +
                     "); store one with `pairbench baseline update`");
  }
  return {read_input(path, "--baseline"), path};
}

}  // namespace pairbench::harness
