// Claim verdicts: each claim of harness/analysis/claims.json judged on one run's experiment summary by the
// verdict rules its experiments declare (bench VerdictCheck), written as `pairbench.claims`.
// The rules (docs/claims.md): per grid point `better`, `same` or `plateau`; over points any
// "did not hold" wins, then all "held", else "inconclusive"; nothing measured: "not run here", or
// "not testable here" when every arm that could have decided it needs a CUDA device.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "harness/analysis/summary.h"
#include "harness/store/vocabulary.h"

namespace pairbench::harness {

// A claim's verdict, and a grid point's (held, did not hold or inconclusive); the words are the
// run file's (`pairbench.claims[].verdict`, results/schema/run-file.schema.json).
enum class ClaimVerdict { held, did_not_hold, inconclusive, not_run_here, not_testable_here, recorded };
inline constexpr NameTable<ClaimVerdict, 6> kClaimVerdictNames{{{ClaimVerdict::held, "held"},
                                                                {ClaimVerdict::did_not_hold, "did not hold"},
                                                                {ClaimVerdict::inconclusive, "inconclusive"},
                                                                {ClaimVerdict::not_run_here, "not run here"},
                                                                {ClaimVerdict::not_testable_here, "not testable here"},
                                                                {ClaimVerdict::recorded, "recorded"}}};
inline std::string to_string(ClaimVerdict v) { return std::string(name_in(kClaimVerdictNames, v)); }
inline std::optional<ClaimVerdict> claim_verdict_from_string(std::string_view s) {
  return value_in(kClaimVerdictNames, s);
}
void to_json(nlohmann::json&, ClaimVerdict) = delete;  // no implicit JSON (vocabulary.h)
void from_json(const nlohmann::json&, ClaimVerdict&) = delete;

// An experiment claims.json lists as testing a claim.
struct ClaimExperiment {
  std::string name;
  bool planned = false;  // not implemented yet: "not run here" says so
};

// One claim of claims.json: what it is about, which experiments test it, how it is decided.
struct ClaimSpec {
  std::string id, text;
  std::string kind = "ratio";  // ratio: the experiments' checks | environment | limits
  std::vector<ClaimExperiment> experiments;
  std::string field, absent_reason_field;  // environment: the fingerprint field recorded
};

// claims.json's claims; throws JsonFieldError naming `source` and the field on bad input.
std::vector<ClaimSpec> parse_claims(const nlohmann::json& doc, const std::string& source);
// harness/analysis/claims.json as this pairbench was built with it (embedded at build time).
const nlohmann::json& builtin_claims_document();
const std::vector<ClaimSpec>& builtin_claims();

// A treatment at a grid point, judged by one check.
struct ClaimRow {
  std::string experiment, point, treatment, baseline;
  std::optional<double> ratio, ci_low, ci_high, confidence;
  ClaimVerdict verdict = ClaimVerdict::inconclusive;  // held, did not hold or inconclusive
  std::string why, test;
  std::string analogue;  // the argument, where the row comes from a CPU analogue of a GPU claim
};

// A treatment at a grid point that a check selected but that has no ratio, and why.
struct NotRunRow {
  std::string experiment, point, treatment, reason;
};

// One claim judged: its verdict, why, and the rows that decided it.
struct ClaimJudgement {
  std::string id, claim, kind;
  ClaimVerdict verdict = ClaimVerdict::not_run_here;
  std::string detail;                    // one line: why
  bool analogue = false;                 // decided by CPU analogue rows only
  std::vector<std::string> experiments;  // the experiments claims.json lists for it
  std::vector<ClaimRow> rows;
  std::vector<NotRunRow> not_run;
  std::vector<std::string> absent;    // listed experiments not in this run, with why
  std::vector<std::string> excluded;  // experiments declaring the claim that do not decide it, with why
  std::vector<std::string> recorded;  // environment and limits claims: what was recorded
  std::vector<std::string> details;   // nothing measured: every point's reason
};

// Every claim judged on the typed experiment summary (each experiment may carry its `verdict`
// checks, else the default check applies) and `environment` (pairbench.environment). A run file
// of any age is judged on summary_from_json of its `pairbench.experiments`; a figure it wrote as
// null (NaN) decides nothing.
std::vector<ClaimJudgement> judge_claims(const std::vector<ClaimSpec>& claims,
                                         const std::vector<ExperimentSummary>& experiments,
                                         const nlohmann::json& environment);

nlohmann::json to_json(const ClaimJudgement& v);
nlohmann::json claims_to_json(const std::vector<ClaimJudgement>& verdicts);  // `pairbench.claims`
// `pairbench.claims` of a run file read back (the inverse of claims_to_json); throws
// JsonFieldError naming `source` and the field on a wrong type or an unknown verdict.
std::vector<ClaimJudgement> claims_from_json(const nlohmann::json& claims, const std::string& source);

// docs/claims.md: each claim of `claims_doc` (claims.json), its source, the experiments that test
// it and how its verdict is decided, from the checks the `experiments` declare.
struct ExperimentEntry;
std::string claims_markdown(const nlohmann::json& claims_doc, const std::vector<ExperimentEntry>& experiments);

// One line per claim: "C6   held              held at all 12 points measured".
void print_claims(std::ostream& out, const std::vector<ClaimJudgement>& claims);

}  // namespace pairbench::harness
