// The machine cannot give a workload what it needs (memory, a lock limit, pinning); the message
// names the limit. Bench arms report it as `not_supported: <message>`, which is not a failure.
#pragma once

#include <stdexcept>

namespace pairbench::kernels::copy {

struct NotSupported : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace pairbench::kernels::copy
