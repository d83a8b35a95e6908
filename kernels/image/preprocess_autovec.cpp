// The autovec arm: the scalar arm's source (preprocess_rows.inc) compiled with the compiler's
// auto-vectorisation allowed. The build targets baseline x86-64 (SSE2), so on x86-64 GCC/Clang
// clone the loops per ISA (target_clones) and an ifunc resolver picks one at load time: the
// compiler alone, given the same runtime dispatch Highway has.
#include "kernels/image/preprocess.h"

namespace pairbench::kernels::image {

#define PB_PREPROCESS_ROWS_NAME preprocess_rows_autovec
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define PB_AUTOVEC_CLONES 1
#define PB_PREPROCESS_ROWS_ATTR __attribute__((target_clones("default", "arch=x86-64-v3", "arch=x86-64-v4")))
#else
#define PB_AUTOVEC_CLONES 0
#define PB_PREPROCESS_ROWS_ATTR
#endif
#include "kernels/image/preprocess_rows.inc"
#undef PB_PREPROCESS_ROWS_NAME
#undef PB_PREPROCESS_ROWS_ATTR

std::string autovec_target() {
#if PB_AUTOVEC_CLONES
  // The clone the resolver picks: the highest listed level this CPU supports.
  __builtin_cpu_init();
  if (__builtin_cpu_supports("x86-64-v4")) return "target_clones x86-64-v4 (AVX-512)";
  if (__builtin_cpu_supports("x86-64-v3")) return "target_clones x86-64-v3 (AVX2+FMA)";
  return "target_clones default (x86-64 baseline, SSE2)";
#else
  return "compiler default target";
#endif
}

}  // namespace pairbench::kernels::image
