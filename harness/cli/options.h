// What several commands' options share: validators that word bad values the same way
// everywhere, the gate's options (compare, gate, ab, selftest), the bench directory and the
// experiment selection (run, ab, selftest, list).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "harness/exec/catalogue.h"
#include "harness/gate/gate.h"

namespace pairbench::harness {

// Every floating-point option: a finite number in [lo, hi].
CLI::Validator finite_in(double lo, double hi);
// A seed: decimal digits that fit 64 bits.
CLI::Validator unsigned_64();
// Comma-separated names, none empty.
CLI::Validator name_list(const std::string& of_what);
// A path check from file_checks.h as a validator: "--opt: PATH: is a FIFO (named pipe), expected ...".
CLI::Validator path_is(std::string (*problem)(const std::string&), const std::string& description);
// A benchmark-name regular expression (ECMAScript, matched anywhere in the name, as Google
// Benchmark's --benchmark_filter): one that does not compile is refused with std::regex's reason.
CLI::Validator benchmark_regex();
// A history given by --db (or PAIRBENCH_DB): an SQLite path or a postgresql:// URL; `keywords`
// ("auto", "none") pass as they are.
CLI::Validator history_path(std::vector<std::string> keywords = {});

// The environment variable that names the history where --db is not given (contract: nightly
// jobs of a fleet point every command at one shared database).
inline constexpr const char* kDbEnv = "PAIRBENCH_DB";
inline const std::string kDbHelp = "history: an SQLite path or a postgresql:// URL (default: $PAIRBENCH_DB, else ";
inline const std::vector<std::string> kProfiles = {"quick", "nightly", "full"};

struct GateArgs {
  GateOptions options;
  std::string markdown, junit, json;  // extra outputs, written atomically where given
  // History database for each benchmark's run-to-run noise: "auto" = results/history.sqlite
  // where it exists (gate), "" = none (compare's default), else a path.
  std::string history;
};
// `db_default`: whether PAIRBENCH_DB names the history where --db is absent (gate yes; compare,
// ab and selftest read a history only when one is named on their command line). `db_option`: false
// where the command has its own --db (run, whose history also gives the gate its noise).
void add_gate_options(CLI::App* cmd, GateArgs& gate, bool db_default = false, bool db_option = true);

// --process-sharing experiment|none (run, ab): RunArgs::process_sharing.
void add_process_sharing_option(CLI::App& cmd, std::string& process_sharing);

std::vector<std::string> split_csv(const std::string& s);
// The experiments named (names or areas, comma-separated; "" = all) with only the arms named.
std::vector<ExperimentEntry> select_experiments(std::vector<ExperimentEntry> all, const std::string& experiments,
                                                const std::string& arms);

}  // namespace pairbench::harness
