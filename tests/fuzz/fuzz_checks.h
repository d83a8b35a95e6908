// What the fuzz targets check on one input, shared with the GoogleTest that replays every input a
// fuzzer ever failed on (tests/fixtures/fuzz_regressions/). A bug shows as an exception other than
// the documented refusals escaping (libFuzzer reports it as a crash), an invariant broken
// (std::logic_error), or a sanitizer report in the fuzz build.
#pragma once

#include <string_view>

namespace pairbench::fuzz {

// Separates the baseline from the current run in a gate input. A raw newline cannot occur inside
// a JSON string, nor '#' outside one, so a valid baseline never contains it.
inline constexpr std::string_view kGateSeparator = "\n#### current run ####\n";

// Run-file (or baseline) text through parse_run_file_text: refused with a one-line RunFileError
// naming the input, or accepted, and then what pairbench writes of it (dump(2), as
// write_json_atomically writes) reads back equal. Returns whether it was accepted.
bool check_run_file_input(std::string_view data);

// Two run files joined by kGateSeparator: when both are accepted, compare_runs on them (forced
// past fingerprint differences, so that the rest is reached), then every gate output. compare_runs
// may refuse only with a one-line std::invalid_argument. Returns whether a report was made.
bool check_gate_input(std::string_view data);

}  // namespace pairbench::fuzz
