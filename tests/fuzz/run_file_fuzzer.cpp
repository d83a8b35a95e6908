// libFuzzer target: any bytes as a run file or baseline (the reader behind compare, gate,
// baseline update and history import). Built by ci/fuzz.sh with ASan and UBSan.
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/fuzz_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  pairbench::fuzz::check_run_file_input({reinterpret_cast<const char*>(data), size});
  return 0;
}
