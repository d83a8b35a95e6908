// libFuzzer target: a baseline and a current run file (joined by kGateSeparator) through the
// reader, then the gate and its outputs. Built by ci/fuzz.sh with ASan and UBSan.
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  pairbench::fuzz::check_gate_input({reinterpret_cast<const char*>(data), size});
  return 0;
}
