// The CPU copy loops under test: ordinary vector stores vs non-temporal (streaming) stores, and
// STREAM's copy and triad loops. All are compiled loops, never calls to memcpy, so that glibc's
// memcpy (measured as a limit in the same run) is a yardstick and not the code under test.
#pragma once

#include <cstddef>
#include <string>

namespace pairbench::kernels::copy {

// Copies `bytes` (any size, any alignment, no overlap) with ordinary stores: every destination
// line is read into the cache before it is written, so a copy larger than the caches moves
// 3 x bytes through memory (read source, read-for-ownership of destination, write back).
void copy_plain(void* dst, const void* src, std::size_t bytes);

// Same contract, but the destination is written with non-temporal stores that bypass the caches
// (no read-for-ownership: 2 x bytes through memory), then fenced, so the data is visible to
// other threads when it returns. Unaligned head and tail bytes use ordinary stores.
void copy_nontemporal(void* dst, const void* src, std::size_t bytes);

// "" where copy_nontemporal really streams; else why it cannot here.
std::string nontemporal_unavailable_reason();
// Vector width both copy loops use on this CPU: "avx2" (32 B), "sse2" (16 B) or "scalar".
const char* copy_vector_isa();

// STREAM's kernels over doubles, as compiled loops: a[i] = b[i] and a[i] = b[i] + scalar * c[i].
void stream_copy(double* a, const double* b, std::size_t n);
void stream_triad(double* a, const double* b, const double* c, double scalar, std::size_t n);

}  // namespace pairbench::kernels::copy
