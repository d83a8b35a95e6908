// `pairbench history speed`: how long `history` and `gate` take over a large history, on either
// back end (measure_history_speed, harness/analysis/history_views.h); selftest reports the same.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "harness/cli/command.h"
#include "harness/cli/gate_inputs.h"
#include "harness/cli/history_access.h"
#include "harness/exec/say.h"
#include "harness/store/history.h"
#include "harness/store/run_file.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

int cmd_history_speed(const std::string& db_arg, int runs, int benchmarks, int samples, const std::string& out) {
  std::string db = db_arg, tmpdir;
  if (db.empty()) {
    char tmpl[] = "/tmp/pairbench-history-speed-XXXXXX";
    if (!mkdtemp(tmpl)) throw std::runtime_error("history speed: cannot create a temporary directory");
    tmpdir = tmpl;
    db = tmpdir + "/history.sqlite";
  } else if (!is_postgres_url(db) && fs::exists(db)) {
    throw UsageError("--db: " + db + " exists; history speed fills a new history (give a new path)");
  }
  struct RemoveAtExit {
    std::string dir;
    ~RemoveAtExit() {
      std::error_code ec;
      if (!dir.empty()) fs::remove_all(dir, ec);
    }
  } cleanup{tmpdir};
  say() << "history speed: filling " << redact_db(db) << " with " << runs << " runs x " << benchmarks
        << " benchmarks x " << samples << " samples\n";
  nlohmann::json r;
  try {
    r = measure_history_speed(db, runs, benchmarks, samples, [&](int done) {
      say() << "history speed: " << done << " of " << runs << " runs stored\n";
    });
  } catch (const HistoryInputError& e) {
    throw UsageError(e.what());
  }
  std::printf(
      "history speed on %s: %d runs x %d benchmarks (%d samples each), filled in %.1f s\n"
      "  history (every benchmark's %d per-run medians, change points found and stored): %.2f s\n"
      "  gate from the database (baseline and latest run, noise of the last 30 runs, comparison): %.2f s\n",
      r["db"].get<std::string>().c_str(), runs, benchmarks, samples, r["fill_s"].get<double>(), runs,
      r["history_s"].get<double>(), r["gate_s"].get<double>());
  if (!out.empty()) write_json_atomically(out, r);
  return kExitOk;
}

}  // namespace pairbench::harness
