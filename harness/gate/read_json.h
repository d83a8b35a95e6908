// The gate's JSON read back (what gate_json writes for `gate`, `compare`, `ab` and `run --baseline`
// with --json): the one C++ reader of that file (`regressions record`, `bisect`, `selftest`'s
// studies). Every error is one line naming the file and the field.
#pragma once

#include <string>
#include <vector>

#include "harness/gate/gate.h"

namespace pairbench::harness {

struct GateJson {
  GateRun baseline_run, current_run;          // empty strings where the file was written before they were
  std::string baseline_build, current_build;  // each run's build (git sha, "-dirty" where uncommitted); "" where absent
  std::string headline;                       // "" where absent
  std::string run_shift;                      // RunShift::text(): "" where the run did not move, or absent
  double interval_level = 0;                  // 0 where absent
  // Every row: name, verdict, instrument, experiment, note, process counts, change with its
  // interval and its p-values (NaN where absent), threshold, resolution and gated_at (0 where
  // absent), whether it is a suspect, and its function diff; a regression row with all that
  // records it, checked.
  std::vector<BenchmarkVerdict> rows;
  std::vector<bool> suspect;  // per row, as written (false where absent)
};

// Reads the gate JSON at `path` (a regular file of at most 1 GiB). Throws JsonFieldError
// "PATH: FIELD: expected ..., is ..." for what is not JSON, not the gate's shape, or a row whose
// verdict or numbers are not the gate's; a `gate --commit` table (no rows) is refused by name.
GateJson read_gate_json(const std::string& path);

}  // namespace pairbench::harness
