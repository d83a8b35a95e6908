// `pairbench history import RUN.json...`: stores run files whose history write failed (their
// `pairbench.history_write` says so) or that come from another machine's results. Idempotent: a
// run is stored once by its identity (pairbench.run_id), however often it is imported.
#include <iostream>

#include "harness/cli/command.h"
#include "harness/cli/history_access.h"
#include "harness/exec/interrupt.h"
#include "harness/exec/say.h"
#include "harness/store/history.h"
#include "harness/store/run_file.h"

namespace pairbench::harness {

int cmd_history_import(const std::vector<std::string>& run_files, const std::string& db_arg) {
  const std::string db = redact_db(db_arg);  // for messages; db_arg is what is opened
  history_retry_s();                         // a bad PAIRBENCH_HISTORY_RETRY_S is bad input: nothing stored
  // Every file is read and checked before anything is stored: bad input stores nothing.
  std::vector<nlohmann::json> docs;
  for (const std::string& path : run_files) {
    try {
      docs.push_back(read_run_file(path));
    } catch (const std::runtime_error& e) {
      throw UsageError(e.what());
    }
    if (const auto& pb = docs.back()["pairbench"]; pb.contains("interrupted")) {
      throw UsageError(path + ": pairbench.interrupted: a partial run (" + pb["interrupted"].dump() +
                       ") is not imported into the history");
    }
  }
  int failed = 0;
  for (std::size_t i = 0; i < docs.size(); ++i) {
    const nlohmann::json result = record_history(db_arg, docs[i], run_files[i]);
    const std::string status = result["status"];
    if (status == "stored") {
      std::cout << run_files[i] << ": stored in " << db << " as run " << result["history_run_id"] << "\n";
    } else if (status == "already_stored") {
      std::cout << run_files[i] << ": already in " << db << " as run " << result["history_run_id"]
                << "; not stored again\n";
    } else {
      say(Verbosity::quiet) << "pairbench: " << run_files[i] << ": not stored in " << db << ": "
                            << result["error"].get<std::string>() << "\n";
      ++failed;
    }
    if (interrupt_signal()) {
      say(Verbosity::quiet) << "pairbench: interrupted by " << signal_name(interrupt_signal()) << " after " << i + 1
                            << " of " << docs.size() << " run files\n";
      return interrupted_exit_status();
    }
  }
  return failed ? kExitBenchmarkFailed : kExitOk;
}

}  // namespace pairbench::harness
