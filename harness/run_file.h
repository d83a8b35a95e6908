// Run files: Google Benchmark's JSON shape (`context` + `benchmarks`, one entry per sample, so
// /usr/share/benchmark/compare.py reads them unchanged) plus a `pairbench` section with the
// environment, the samples that did not run and the experiment summary.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace pairbench::harness {

inline constexpr int kRunFileSchemaVersion = 1;

// The current UTC time in strftime's `format` ("%Y-%m-%dT%H:%M:%SZ").
std::string utc_stamp(const char* format);

// Writes `doc` to `path` atomically: a temporary file in the same directory, fsync, rename.
// Throws std::runtime_error naming the path on failure; the old file, if any, is untouched.
void write_json_atomically(const std::string& path, const nlohmann::json& doc);

// Writes text to `path` atomically (same method); throws std::runtime_error naming the path.
void write_text_atomically(const std::string& path, const std::string& text);

// Fails early (before hours of benchmarking) if `path` cannot be written: throws naming the path.
void check_writable(const std::string& path);

// Reads and validates a run file; throws std::runtime_error "PATH: FIELD: problem" on bad input
// (unreadable, truncated JSON, wrong schema version, missing fields, NaN or non-positive times).
nlohmann::json read_run_file(const std::string& path);

}  // namespace pairbench::harness
