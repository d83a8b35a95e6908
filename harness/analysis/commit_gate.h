// One commit gated on every machine of a history (`pairbench gate --commit SHA`): each machine's
// latest run of the commit against that machine's stored baseline, with the machine's run-to-run
// noise from its own runs; the worst outcome decides the exit status.
#pragma once

#include <string>
#include <vector>

#include "harness/gate/gate.h"
#include "harness/store/history.h"

namespace pairbench::harness {

// One machine's row: its outcome (pass, regression, undecided; no run, no baseline, error) and
// what its gate counted, or why there is none; `exit` its gate's exit status.
struct CommitGateRow {
  std::string machine, kind, run, outcome, detail;
  int regressions = 0, undecided = 0, unchanged = 0, improvements = 0, other = 0;
  int exit = 0;
};

// Every machine of `db`, in its order, with `asked` as the gate's options.
std::vector<CommitGateRow> gate_commit(History& db, const std::string& git_sha, const GateOptions& asked);

// The worst outcome decides: a regression anywhere (1), then a machine that could not be gated
// (3), then one undecided (4); else 0.
int commit_gate_status(const std::vector<CommitGateRow>& rows);

}  // namespace pairbench::harness
