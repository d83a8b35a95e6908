// A run file from one side's samples: laid out by store/run_file's writer, with the experiment
// summary and the claims judged on it; the side's time per iteration against its calibration; the
// claims of a run file written before the harness judged them (`summarise`, `report`).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/analysis/claims.h"
#include "harness/analysis/summary.h"
#include "harness/exec/catalogue.h"
#include "harness/exec/environment.h"
#include "harness/exec/runner.h"
#include "harness/store/run_file.h"
#include "harness/store/sample.h"

namespace pairbench::harness {

// A run file and the typed values its summary and claims were serialised from (once), which the
// terminal prints.
struct RunDocument {
  nlohmann::json doc;
  std::vector<ExperimentSummary> summary;
  std::vector<ClaimJudgement> claims;
};

// A run file from the samples of one side of a run: the experiment summary and the claims judged
// on it, laid out by run_document (store/run_file.h). With `calibration_limit` > 0 it also records
// the side's time per iteration against its calibration (`sampling.against_calibration`).
RunDocument build_run_document(const std::vector<ExperimentEntry>& experiments, const std::vector<Sample>& samples,
                               const RunOptions& options, const RunOutcome& outcome, const Environment& env,
                               const std::string& started, const std::string& command, int side = 0,
                               double calibration_limit = 0);
// build_run_document's run file alone.
nlohmann::json build_run_doc(const std::vector<ExperimentEntry>& experiments, const std::vector<Sample>& samples,
                             const RunOptions& options, const RunOutcome& outcome, const Environment& env,
                             const std::string& started, const std::string& command, int side = 0,
                             double calibration_limit = 0);

// One side's ratios against the calibration: the highest, and every one above `limit`, highest first.
RunRecord::CalibrationCheck calibration_check(const RunOutcome& outcome, int side, double limit);

// Adds `pairbench.claims` to a run file written before the harness judged claims (true when it
// did): from its experiment summary read back (summary_from_json; errors name `source`), with the
// checks this build's bench binaries in `bench_dir` declare where the file carries none.
bool ensure_claims(nlohmann::json& doc, const std::string& source, const std::string& bench_dir);

}  // namespace pairbench::harness
