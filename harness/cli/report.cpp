// `pairbench report`: plots/report.py on a run file, handed the claims catalogue compiled in and,
// with a history, its export; killed with its process group at --timeout or on SIGINT/SIGTERM.
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <unistd.h>

#include "harness/analysis/claims.h"
#include "harness/cli/command.h"
#include "harness/cli/history_access.h"
#include "harness/cli/options.h"
#include "harness/cli/run_record.h"
#include "harness/exec/interrupt.h"
#include "harness/exec/process.h"
#include "harness/exec/say.h"
#include "harness/store/file_checks.h"
#include "harness/store/run_file.h"
#include "pairbench/build_info.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

namespace {

// Runs per machine the report's history export holds (its trend figures and cross-machine page):
// a page over months of nightly runs on many machines would otherwise carry every median and
// process value of every benchmark.
constexpr int kReportExportRuns = 100;

// A new empty file in $TMPDIR (or /tmp) named PREFIX-XXXXXX, removed when this goes out of scope.
struct TemporaryFile {
  std::string path;
  explicit TemporaryFile(const std::string& prefix) {
    const char* tmpdir = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmpdir && *tmpdir ? tmpdir : "/tmp") + "/" + prefix + "-XXXXXX";
    const int fd = mkstemp(tmpl.data());
    if (fd < 0)
      throw std::runtime_error("report: cannot create a temporary file " + tmpl + ": " + std::strerror(errno));
    close(fd);
    path = tmpl;
  }
  ~TemporaryFile() { unlink(path.c_str()); }
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
};

int cmd_report(const std::string& run, const std::string& history, const std::string& gate,
               const std::string& confirmation, const std::string& out_dir, double timeout_s) {
  if (!confirmation.empty() && gate.empty())
    throw UsageError("--confirmation: needs --gate (the gate whose suspects it confirmed)");
  const std::string script = std::string(PAIRBENCH_SOURCE_DIR) + "/plots/report.py";
  if (!fs::exists(script)) throw UsageError("report: " + script + " not found");
  // Verdicts are the harness's: a run file written before it judged them is judged here, and the
  // report reads a copy that has them (plots/ never decides a verdict).
  std::string run_for_report = run;
  nlohmann::json doc = read_run_file(run);
  std::optional<TemporaryFile> judged_copy;
  if (ensure_claims(doc, run, default_bench_dir())) {
    judged_copy.emplace("pairbench-report");
    run_for_report = judged_copy->path;
    write_json_atomically(judged_copy->path, doc);
  }
  // Debian's matplotlib belongs to /usr/bin/python3; another python3 may come first on PATH.
  std::vector<std::string> argv = {"/usr/bin/python3", script, "--run", run_for_report, "-o", out_dir};
  // The claims catalogue is this build's (compiled in), never a file of the source tree.
  const TemporaryFile claims("pairbench-claims");
  write_json_atomically(claims.path, builtin_claims_document());
  argv.insert(argv.end(), {"--claims", claims.path});
  // The gate's own decisions, as it wrote them: the report shows each regression's function diff.
  if (!gate.empty()) argv.insert(argv.end(), {"--gate", gate});
  // The nightly's same-runner confirmation of the gate's suspects (ci/confirm.sh's confirmed.json).
  if (!confirmation.empty()) argv.insert(argv.end(), {"--confirmation", confirmation});
  // The history reaches the report only as its export (either back end): the trend figures, the
  // history section and the cross-machine page all read it.
  std::optional<TemporaryFile> exported;
  if (!history.empty()) {
    const auto db = open_history_db(history, "--db", /*must_exist=*/true);
    exported.emplace("pairbench-fleet");
    write_json_atomically(exported->path, history_export(*db, kReportExportRuns));
    argv.insert(argv.end(), {"--history-export", exported->path});
  }
  // Its own process group, killed whole at the time limit or on SIGINT/SIGTERM (run_process).
  const ProcessResult r = run_process(argv, {{"MPLBACKEND", "Agg"}}, std::chrono::duration<double>(timeout_s));
  std::cout << r.output;
  if (r.status == ProcessResult::Status::kInterrupted) {
    say(Verbosity::quiet) << "pairbench: report: interrupted by " << signal_name(r.signal)
                          << ": plots/report.py and its process group were killed; " << out_dir
                          << " may be incomplete\n";
    return interrupted_exit_status();
  }
  if (r.status == ProcessResult::Status::kTimedOut) {
    say(Verbosity::quiet) << "pairbench: report: plots/report.py " << r.describe() << " (--timeout " << timeout_s
                          << "): killed with its process group; " << out_dir << " may be incomplete\n";
    return kExitBenchmarkFailed;
  }
  if (r.status != ProcessResult::Status::kExited) throw std::runtime_error("report: plots/report.py " + r.describe());
  return r.exit_code;
}

}  // namespace

Command command_report() {
  return {"report", "render the plot report (plots/report.py) from a run file",
          "plots/report.py's: 0 written, 2 bad input; 3 killed at --timeout; 130/143 interrupted by SIGINT/SIGTERM",
          "the run file reported", [](CLI::App& cmd) -> CommandAction {
            struct Args {
              std::string run, history, gate, confirmation, out = "results/report";
              double timeout_s = 300;
            };
            auto a = std::make_shared<Args>();
            cmd.add_option("--run", a->run, "run file")->required()->check(path_is(regular_file_problem, "FILE"));
            cmd.add_option("--db,--history", a->history,
                           "history (an SQLite path or a postgresql:// URL; default: $PAIRBENCH_DB, else none): its "
                           "export (the last 100 runs per machine) gives the trend figures and the cross-machine page")
                ->envname(kDbEnv)
                ->check(history_path());
            cmd.add_option("--gate", a->gate,
                           "the gate's JSON (`gate`, `compare` or `ab` --json FILE): its headline and, per regression "
                           "and improvement, the functions that added (removed) the most instructions per iteration")
                ->check(path_is(regular_file_problem, "FILE"));
            cmd.add_option("--confirmation", a->confirmation,
                           "with --gate: the nightly's same-runner confirmation of its suspects (ci/confirm.sh's "
                           "confirmed.json): which were confirmed, cleared or unresolved, and why")
                ->check(path_is(regular_file_problem, "FILE"));
            cmd.add_option("-o,--out", a->out, "output directory")->check(path_is(directory_or_absent_problem, "DIR"));
            cmd.add_option("--timeout", a->timeout_s, "seconds before plots/report.py is killed with its process group")
                ->check(finite_in(0.001, 86400.0));
            return [a](const std::string&) {
              finish_up_on_interrupt();
              return cmd_report(a->run, a->history, a->gate, a->confirmation, a->out, a->timeout_s);
            };
          }};
}

}  // namespace pairbench::harness
