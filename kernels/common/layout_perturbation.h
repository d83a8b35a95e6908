// Force-included (-include) into every translation unit of the kernels libraries by the layout
// self-test's dead_code_* builds (PAIRBENCH_LAYOUT_PERTURBATION, cmake/PairbenchHelpers.cmake): a
// function of PAIRBENCH_LAYOUT_DEAD_CODE_BYTES bytes of code that nothing calls, kept by `used`.
// Behaviour is identical; only where the code after it lands changes.
#pragma once

#if defined(PAIRBENCH_LAYOUT_DEAD_CODE_BYTES) && !defined(__CUDACC__)
#define PAIRBENCH_LAYOUT_STR2(x) #x
#define PAIRBENCH_LAYOUT_STR(x) PAIRBENCH_LAYOUT_STR2(x)
[[gnu::used, gnu::noinline]] static void pairbench_layout_dead_code() {
  __asm__ volatile(".skip " PAIRBENCH_LAYOUT_STR(PAIRBENCH_LAYOUT_DEAD_CODE_BYTES) ", 0x90");
}
#endif
