// The one CUDA seam: a kernel family declares its GPU entry points once, in its plain C++ header,
// marking each with one of these. With CUDA the family's .cu defines them; without it the marker
// is the definition, so no family has a stub file and the two builds differ only in which of
// kernels/CMakeLists.txt's CUDA_SOURCES are compiled.
//   void upload(std::span<const float> x) PAIRBENCH_CUDA_ENTRY;     // throws NotSupported without CUDA
//   ~Thing() PAIRBENCH_CUDA_ELSE();                                  // does nothing without CUDA
//   std::string nccl_reason() PAIRBENCH_CUDA_ELSE(std::string(...)); // returns that without CUDA
// A namespace-scope function also starts with PAIRBENCH_CUDA_INLINE: its body is then in a header.
//   PAIRBENCH_CUDA_INLINE void* pinned_allocate(std::size_t bytes) PAIRBENCH_CUDA_ENTRY;
#pragma once

#include "kernels/common/not_supported.h"

namespace pairbench::kernels::cuda {

// What an entry point throws in a build without CUDA.
inline constexpr const char* kNotCompiledWithCuda = "not compiled with CUDA";
[[noreturn]] inline void throw_not_compiled_with_cuda() { throw NotSupported(kNotCompiledWithCuda); }

}  // namespace pairbench::kernels::cuda

#if PAIRBENCH_HAVE_CUDA
#define PAIRBENCH_CUDA_INLINE
#define PAIRBENCH_CUDA_ENTRY
#define PAIRBENCH_CUDA_ELSE(...)
#else
#define PAIRBENCH_CUDA_INLINE inline
#define PAIRBENCH_CUDA_ENTRY \
  { ::pairbench::kernels::cuda::throw_not_compiled_with_cuda(); }
#define PAIRBENCH_CUDA_ELSE(...) \
  { return __VA_ARGS__; }
#endif
