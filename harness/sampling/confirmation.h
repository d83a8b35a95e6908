// The nightly's same-runner confirmation (docs/gate.md, "Confirmation on the same runner"): which
// of a night's suspects one `pairbench ab` of the baseline's build against tonight's measures
// again, and what its verdicts make of each: confirmed (a regression, or broken), cleared
// (unchanged or improved), unresolved (anything else, or not measured). Only a confirmed regression
// fails the night. `pairbench confirm` is its face; ci/confirm.sh runs the ab between its steps.
// The policy reads the gate's JSON through its one typed reader (read_gate_json) and owns
// confirmed.json, what `ci/bisect.sh --confirmed` and `pairbench report --confirmation` read.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/gate/read_json.h"

namespace pairbench::harness {

// The suspects' names, at most `cap`: regressions and undecided rows first, then the other
// suspects by their one-sided p (the strongest evidence of a slowdown first; none known: last);
// returned sorted by name.
std::vector<std::string> select_suspects(const GateJson& night, int cap);

// An ECMAScript expression matching exactly these benchmark names (`ab --benchmarks`).
std::string anchored(const std::vector<std::string>& names);

struct ConfirmedRow {
  std::string benchmark, instrument, experiment, verdict, why;
  double change = 0, low = 0, high = 0, p_adjusted = 0;  // NaN where unknown (written as null)
};

// confirmed.json's content.
struct Confirmation {
  std::vector<ConfirmedRow> regressions, cleared, unresolved;
  std::string baseline_git_sha, current_git_sha;  // the builds less "-dirty"
  std::string baseline_build, current_build;
  double seconds = 0;  // the ab's wall time (0: no ab ran)
  bool failed() const { return !regressions.empty(); }
};

// Each suspect of the night as the ab left it (`ab`: the ab's gate JSON); a row the night did not
// suspect is never confirmed, whatever the ab says of it.
Confirmation classify(const GateJson& night, const GateJson& ab, double seconds);

// Nothing to confirm (no suspect): the builds only.
Confirmation no_suspects(const GateJson& night);

nlohmann::json to_json(const Confirmation& c);

// confirmation.md: the job summary's paragraph (its third line is the one-line summary).
std::vector<std::string> summary_lines(const Confirmation& c, int count);

// confirmed.json read back: its regressions' names and the two git shas ("" where absent). Throws
// JsonFieldError naming the file and field on anything else.
struct ConfirmedRegressions {
  std::vector<std::string> benchmarks;  // sorted, unique
  std::string baseline_git_sha, current_git_sha;
};
ConfirmedRegressions read_confirmed(const std::string& path);

}  // namespace pairbench::harness
