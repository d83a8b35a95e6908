// `pairbench summarise`: the claims' verdicts of a run file, judged here where the file has none
// (written before the harness judged claims); --out writes the file with them.
#include <iostream>

#include "harness/analysis/claims.h"
#include "harness/cli/command.h"
#include "harness/cli/options.h"
#include "harness/cli/run_record.h"
#include "harness/store/file_checks.h"
#include "harness/store/run_file.h"

namespace pairbench::harness {

namespace {

int cmd_summarise(const std::string& run, const std::string& out, const std::string& bench_dir) {
  nlohmann::json doc = read_run_file(run);
  ensure_claims(doc, run, bench_dir);
  print_claims(std::cout, claims_from_json(doc["pairbench"]["claims"], run));
  if (!out.empty()) {
    write_json_atomically(out, doc);
    std::cout << "wrote " << out << "\n";
  }
  return kExitOk;
}

}  // namespace

Command command_summarise() {
  return {"summarise",
          "the claims' verdicts of a run file (judged here where the file has none); --out: the file with them",
          "0 printed (and written); 2 bad input", "the run file reported", [](CLI::App& cmd) -> CommandAction {
            struct Args {
              std::string run, out, bench_dir = default_bench_dir();
            };
            auto a = std::make_shared<Args>();
            cmd.add_option("--run", a->run, "run file")->required()->check(path_is(regular_file_problem, "FILE"));
            cmd.add_option("--out", a->out, "write the run file with pairbench.claims here (may be --run)")
                ->check(path_is(regular_file_or_absent_problem, "FILE"));
            cmd.add_option("--bench-dir", a->bench_dir, "bench_* binaries whose declared checks judge an old run file")
                ->check(path_is(directory_problem, "DIR"));
            return [a](const std::string&) { return cmd_summarise(a->run, a->out, a->bench_dir); };
          }};
}

}  // namespace pairbench::harness
