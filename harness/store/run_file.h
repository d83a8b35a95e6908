// Run files: Google Benchmark's JSON shape (`context` + `benchmarks`, one entry per sample, so
// /usr/share/benchmark/compare.py reads them unchanged) plus a `pairbench` section with the
// environment, the samples that did not run and the experiment summary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "harness/store/json_schema.h"
#include "harness/store/sample.h"

namespace pairbench::harness {

// Must equal the schema's pairbench.schema_version const (a unit test checks).
inline constexpr int kRunFileSchemaVersion = 1;

// Bad run-file input: one line, "FILE: FIELD.PATH: expected ..., is ..." (or "FILE: problem" for
// the file as a whole). Never nlohmann's own exception text.
struct RunFileError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Fingerprint fields that must match for two runs to be compared (the machine key's inputs).
inline constexpr const char* kComparableFields[] = {"cpu_model",           "cpu_count",  "gpu_name", "gpu_count",
                                                    "cuda_driver_version", "build_type", "compiler", "compiler_flags"};

// Fingerprint fields (kComparableFields) that differ between two environments (pairbench.environment):
// "cpu_model: 'A' vs 'B'".
std::vector<std::string> fingerprint_differences(const nlohmann::json& a, const nlohmann::json& b);

// Fingerprint fields that say how a build was configured, as its bench binaries report them too
// (their listing's `build`): two builds that differ here may differ in what they time for that
// reason alone, whatever their code.
inline constexpr const char* kBuildFields[] = {"build_type",    "compiler",           "compiler_flags",
                                               "cuda_compiler", "cuda_architectures", "built_with_cuda"};

// kBuildFields that differ between two environments, in fingerprint_differences' words.
std::vector<std::string> build_differences(const nlohmann::json& a, const nlohmann::json& b);

// The run-file schema, results/schema/run-file.schema.json, embedded at build time.
const JsonSchema& run_file_schema();

// The schema's x-pairbench-limits: what a reader accepts before it parses anything.
struct RunFileLimits {
  std::uint64_t max_bytes;  // 1 GiB: a run file of the full profile is a few MB
  std::size_t max_depth;    // 64 levels of nesting: a run file needs 10
};
const RunFileLimits& run_file_limits();

// The current UTC time in strftime's `format` ("%Y-%m-%dT%H:%M:%SZ").
std::string utc_stamp(const char* format);

// Writes `doc` to `path` atomically: a temporary file in the same directory, fsync, rename.
// Throws std::runtime_error naming the path on failure; the old file, if any, is untouched.
void write_json_atomically(const std::string& path, const nlohmann::json& doc);

// Writes text to `path` atomically (same method); throws std::runtime_error naming the path.
void write_text_atomically(const std::string& path, const std::string& text);

// Fails early (before hours of benchmarking) if `path` cannot be written: throws naming the path.
void check_writable(const std::string& path);

// Reads and validates a run file (or a baseline, which is a stored run file); throws RunFileError
// on bad input. Refused before anything is parsed: what is not a regular file (a FIFO would block
// the reader forever, a device never ends) and a file over the size limit. Then: not JSON (with the
// field path where the text went wrong: a NaN or Infinity, a number too large for a double, a
// truncated file), nested deeper than the limit (checked by a SAX pass before any document is
// built: recursion over a deep document overflows the stack), the schema (which includes every
// metric value that is a ratio's input being > 0), and what a schema cannot say (see the schema's
// description).
nlohmann::json read_run_file(const std::string& path);

// The same checks on run-file text already in memory; `source` names it in errors.
nlohmann::json parse_run_file_text(std::string_view text, const std::string& source);

// ---- The writer -------------------------------------------------------------------------------
// What a run file records, typed; run_document() lays it out (the one writer, read_run_file the
// one reader). The parts that other wings serialise themselves arrive as their JSON: the
// environment (exec), the experiment summary and the claims (analysis).
struct RunRecord {
  std::string started_at, finished_at, command, profile, run_id;
  std::vector<Sample> samples;  // this side's, time and instruction counts
  int repetitions = 0;          // processes per benchmark
  int batches = 0;              // in-process samples per process
  double sample_time_s = 0, max_loop_wall_s = 0, timeout_s = 0, wall_s = 0;
  std::string calibration;  // the iteration cache's path, or "this run only"
  int calibrated_in_this_run = 0;
  std::vector<std::string> drifted_from_calibration;
  double calibration_wall_s = 0;
  std::string pairing;                   // duet | sequential
  std::string process_sharing = "none";  // experiment: rows with `shared_process` ran in a process with others | none
  std::vector<int> duet_cpus;
  // Duet: the benchmarks whose two sides ran one at a time (their threads did not fit twice).
  struct SequentialInDuet {
    std::string name, reason;
    int threads = 1;
  };
  std::vector<SequentialInDuet> sequential_in_duet;
  // `ab`: this side's time per iteration against the calibration `run` uses, where above `limit`.
  struct CalibrationRatio {
    std::string name;
    double s_per_iteration = 0, calibrated_s_per_iteration = 0, ratio = 0;
    bool against_run = false;  // the reference: its time per iteration in `run`, else the calibration's
    double run_spread = 0;     // its own runs' largest over their median (CalibrationRatio::run_spread)
  };
  struct CalibrationCheck {
    double limit = 1.5;
    std::optional<CalibrationRatio> max;  // the highest ratio of the side; none without calibrations
    std::vector<CalibrationRatio> over;   // every benchmark above the limit, highest first
  };
  std::optional<CalibrationCheck> calibration_check;
  // `run` under a profile's time budget: per benchmark, the processes planned and why, and what
  // the planned processes were projected to take (docs/gate.md, "Time budget").
  struct PlannedBenchmark {
    std::string name, reason;
    int processes = 0, profile_processes = 0, instruction_processes = 0, profile_instruction_processes = 0;
    double process_wall_s = 0, instruction_process_wall_s = 0;  // projected; 0 = not known
  };
  struct ProcessBudget {
    double budget_s = 0, instruction_budget_s = 0;
    int min_processes = 0, min_instruction_processes = 0;
    int benchmarks_cut = 0, unknown_wall = 0;
    double projected_wall_s = 0;
    std::vector<PlannedBenchmark> benchmarks;
  };
  std::optional<ProcessBudget> process_budget;
  int instruction_processes = 0;
  std::string instruction_counter = "none", instruction_counter_note;
  // Whether counting processes recorded where their instructions went (callgrind: the top functions,
  // pairbench.instructions[].functions), or why not (perf counts the total only; nothing counted).
  std::string instruction_functions;
  std::uint64_t seed = 0;
  nlohmann::json environment, experiments, claims;
  struct Interrupted {
    std::string signal;  // "SIGINT", "SIGTERM"
    std::size_t completed_processes = 0, planned_processes = 0;
  };
  std::optional<Interrupted> interrupted;
};
nlohmann::json run_document(const RunRecord& record);
// `sampling.against_calibration` of a run file: the limit, the side's highest ratio, those over it.
nlohmann::json calibration_check_json(const RunRecord::CalibrationCheck& check);

// 128 random bits as hex: a run's identity in the history, whatever its file is renamed to.
std::string new_run_id();

// Writes the run file to `wanted`, else under the same name in the current directory, else in
// $TMPDIR (or /tmp), saying on stderr why and where; with `to_stdout`, as a last resort, prints
// it on stdout. Returns where it went ("-" for stdout, "" for nowhere).
std::string write_run_file(const std::string& wanted, const nlohmann::json& doc, bool to_stdout);

}  // namespace pairbench::harness
