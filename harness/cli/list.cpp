// `pairbench list`: every experiment with its arms, grid, claims and whether each arm can run
// here; docs/experiments.md's experiment table and docs/claims.md are generated from it (and
// docs/commands.md from the command table).
#include <fstream>
#include <iostream>
#include <sstream>

#include "harness/analysis/claims.h"
#include "harness/cli/command.h"
#include "harness/cli/options.h"
#include "harness/exec/catalogue.h"
#include "harness/exec/say.h"
#include "harness/store/file_checks.h"
#include "harness/store/run_file.h"

namespace pairbench::harness {
namespace fs = std::filesystem;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) throw UsageError(path + ": cannot be read");
  return text.str();
}

// --format markdown: docs/experiments.md's experiment table, printed, or refreshed in (--update) or
// checked against (--check, exit 1 when stale) the file between its markers.
int list_markdown(const std::vector<ExperimentEntry>& experiments, const std::string& profile,
                  const std::string& update_file, const std::string& check_file) {
  const std::string table = catalogue_to_markdown(experiments, profile);
  const std::string& file = update_file.empty() ? check_file : update_file;
  if (file.empty()) {
    std::cout << table;
    return kExitOk;
  }
  const std::string current = read_text(file);
  std::string refreshed;
  try {
    refreshed = replace_marked_section(current, table, file);
  } catch (const std::runtime_error& e) {
    throw UsageError(e.what());
  }
  const std::string command = "pairbench list --format markdown" +
                              (profile == "quick" ? std::string() : " --profile " + profile) + " --update " + file;
  if (!check_file.empty()) {
    if (refreshed == current) return kExitOk;
    say(Verbosity::quiet) << "pairbench: " << file << ": the experiment table is stale (the bench binaries list other "
                          << "experiments, arms or grids); refresh it with: " << command << "\n";
    return kExitRegression;
  }
  if (refreshed != current) write_text_atomically(file, refreshed);
  std::cout << file << ": experiment table " << (refreshed == current ? "already current" : "refreshed") << " ("
            << experiments.size() << " experiments)\n";
  return kExitOk;
}

int cmd_list(const std::string& bench_dir, const std::string& profile, const std::string& format,
             const std::string& update_file, const std::string& check_file) {
  if ((!update_file.empty() || !check_file.empty()) && format != "markdown") {
    throw UsageError(std::string(update_file.empty() ? "--check" : "--update") + ": expected --format markdown");
  }
  if (format == "commands-markdown") {  // docs/commands.md: the command table's help, no bench binary needed
    std::cout << command_reference_markdown(all_commands());
    return kExitOk;
  }
  if (format == "claims-json") {  // the catalogue as plots/report.py reads it (--claims): no bench binary needed
    std::cout << builtin_claims_document().dump(2) << "\n";
    return kExitOk;
  }
  const auto experiments = load_catalogue(find_bench_binaries(bench_dir), profile);
  if (format == "markdown") return list_markdown(experiments, profile, update_file, check_file);
  if (format == "json") {
    std::cout << catalogue_to_json(experiments).dump(2) << "\n";
    return kExitOk;
  }
  if (format == "claims-markdown") {  // docs/claims.md
    std::cout << claims_markdown(builtin_claims_document(), experiments);
    return kExitOk;
  }
  std::cout << catalogue_to_text(experiments, profile);
  return kExitOk;
}

}  // namespace

Command command_list() {
  return {
      "list", "experiments, arms, grids, claim ids, and whether each arm can run here",
      "0 listed (with --check: the table is current); 1 with --check: FILE's table is stale; 2 bad input",
      "a bench binary's catalogue or the environment", [](CLI::App& cmd) -> CommandAction {
        struct Args {
          std::string format = "table", profile = "quick", update, check, bench_dir = default_bench_dir();
        };
        auto a = std::make_shared<Args>();
        cmd.add_option("--format", a->format,
                       "table, json, markdown (docs/experiments.md's experiment table), claims-markdown "
                       "(docs/claims.md), commands-markdown (docs/commands.md: every command's --help) or "
                       "claims-json (the claims catalogue compiled in, as plots/report.py reads it with --claims)")
            ->check(
                CLI::IsMember({"table", "json", "markdown", "claims-markdown", "commands-markdown", "claims-json"}));
        cmd.add_option("--profile", a->profile)->check(CLI::IsMember(kProfiles));
        const auto markdown_file = path_is(regular_file_problem, "FILE");
        cmd.add_option("--update", a->update,
                       "with --format markdown: rewrite FILE's experiment table between its markers")
            ->check(markdown_file);
        cmd.add_option("--check", a->check, "with --format markdown: exit 1 when FILE's experiment table is stale")
            ->check(markdown_file)
            ->excludes("--update");
        cmd.add_option("--bench-dir", a->bench_dir, "directory of the bench_* binaries")
            ->check(path_is(directory_problem, "DIR"));
        return [a](const std::string&) { return cmd_list(a->bench_dir, a->profile, a->format, a->update, a->check); };
      }};
}

}  // namespace pairbench::harness
