// The environment fingerprint of a run and its sanity warnings (`pairbench env`): what machine,
// build and libraries produced the numbers, and what on this machine silently skews them.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "harness/exec/catalogue.h"
#include "harness/store/run_file.h"  // kComparableFields, kBuildFields

namespace pairbench::harness {

struct Environment {
  nlohmann::json fingerprint;         // flat-ish object, SI units; see environment.cpp
  std::vector<std::string> warnings;  // one line each
  nlohmann::json to_json() const;     // fingerprint + "warnings"
};

// Reads /proc, /sys, the OpenBLAS it links and the CUDA runtime. `source_dir` is where to ask git.
Environment capture_environment(const std::string& source_dir);

// A build's own fingerprint (its compiler, flags, build type), asked from the pairbench beside its
// bench binaries in `bench_dir` (`pairbench env --format json`); where that build has none, or it
// does not answer, this harness's (capture_environment(source_dir)).
Environment environment_of_build(const std::string& bench_dir, const std::string& source_dir);

// `env` with the build facts its bench binaries report (ExperimentEntry::build) written over its
// own, the machine key computed again: the binaries are what a run times, and a build directory
// without its own pairbench (bench binaries only) otherwise carries this harness's facts. Returns
// the warnings it adds to env.warnings: the fields the binaries changed, and where they disagree
// with each other (the first's facts stay) the field.
std::vector<std::string> apply_bench_build_facts(Environment& env, const std::vector<ExperimentEntry>& experiments);

// The fields where two builds are configured differently (baseline, candidate; their binaries'
// facts applied: CUDA on in one, other flags), which may differ in what they time for that reason
// alone; where there are any, a line saying so is added to `warnings`.
std::vector<std::string> build_differences_said(const Environment& baseline, const Environment& candidate,
                                                std::vector<std::string>& warnings);

// The OpenBLAS kernel this process selected (openblas_get_corename), e.g. "Prescott", "SkylakeX".
std::string openblas_core_name();

// Whether `core` is an OpenBLAS kernel older than what a CPU with these flags can run.
// Returns the kernel the CPU should use ("SkylakeX", "Haswell") or "" when `core` is fine.
std::string better_openblas_core(const std::string& core, const std::vector<std::string>& cpu_flags);

}  // namespace pairbench::harness
