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

std::unique_ptr<History> open_history_db(const std::string& db, const std::string& what, bool must_exist) {
  if (must_exist && !is_postgres_url(db) && !fs::exists(db)) {
    throw UsageError(what + ": " + db + " does not exist (every `pairbench run` appends to it)");
  }
  try {
    return std::make_unique<History>(db);
  } catch (const NotAHistory& e) {
    throw UsageError(what + ": " + e.what());
  }
}

double history_retry_s() {
  const char* text = std::getenv("PAIRBENCH_HISTORY_RETRY_S");
  if (!text || !*text) return 120;
  char* end = nullptr;
  const double s = std::strtod(text, &end);
  if (*end != '\0' || !(s >= 0 && s <= 86400)) {
    throw UsageError(std::string("PAIRBENCH_HISTORY_RETRY_S: expected seconds from 0 to 86400, got '") + text + "'");
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

}  // namespace pairbench::harness
