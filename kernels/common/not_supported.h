// The one "cannot run here" type: what this machine or this build cannot give a workload (memory,
// a lock limit, pinning, a CUDA device, CUDA itself). The message names the limit; bench arms
// report it as `not_supported: <message>`, which is not a failure.
#pragma once

#include <stdexcept>

namespace pairbench {

struct NotSupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace pairbench
