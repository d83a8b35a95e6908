// bench_precision start-up: run the OpenBLAS kernel this CPU should run. OpenBLAS reads
// OPENBLAS_CORETYPE in its own library constructor, so when the variable is unset and OpenBLAS
// detected a lesser kernel, the process re-executes itself with the variable set (see openblas.h).
#include "kernels/gemm/openblas.h"

namespace {

// glibc passes (argc, argv, envp) to ELF constructors; the executable's run after its libraries',
// so OpenBLAS has already made its choice here. Priority 101: before the bench's own initialisers.
__attribute__((constructor(101))) void run_the_right_openblas_kernel(int, char** argv, char**) {
  pairbench::kernels::gemm::reexec_with_best_core_if_needed(argv);
}

}  // namespace
