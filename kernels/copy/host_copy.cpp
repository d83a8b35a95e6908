// Plain vs non-temporal copy loops (AVX2 where the CPU has it, SSE2 otherwise) and STREAM's
// copy and triad. Built with loop-idiom recognition off (kernels/CMakeLists.txt): GCC would
// otherwise turn these loops back into memcpy calls.
#include "kernels/copy/host_copy.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace pairbench::kernels::copy {
namespace {

// Copies fewer than 32 bytes with at most two (overlapping) loads and stores per width.
inline void copy_small(std::byte* d, const std::byte* s, std::size_t n) {
  auto pair = [&](auto tag) {
    using W = decltype(tag);
    W head, tail;
    std::memcpy(&head, s, sizeof(W));  // fixed-size memcpy: one load, not a call
    std::memcpy(&tail, s + n - sizeof(W), sizeof(W));
    std::memcpy(d, &head, sizeof(W));
    std::memcpy(d + n - sizeof(W), &tail, sizeof(W));
  };
  struct Bytes16 {
    std::uint64_t lo, hi;
  };
  if (n >= 16) return pair(Bytes16{});
  if (n >= 8) return pair(std::uint64_t{});
  if (n >= 4) return pair(std::uint32_t{});
  for (std::size_t i = 0; i < n; ++i) d[i] = s[i];
}

#if defined(__x86_64__)
// Read once: the copy loops are called per byte range, too often to ask the CPU each time.
const bool kHaveAvx2 = [] {
  __builtin_cpu_init();  // this initialiser may run before libgcc's own constructor
  return __builtin_cpu_supports("avx2") != 0;
}();

// Loads the first and last vector up front and stores them last: the unaligned ends are covered
// by two overlapping stores, and the loop in between stores to aligned addresses only.
__attribute__((target("avx2"))) void plain_avx2(std::byte* d, const std::byte* s, std::size_t n) {
  if (n < 32) return copy_small(d, s, n);
  const __m256i first = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s));
  const __m256i last = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + n - 32));
  std::size_t i = 32 - (reinterpret_cast<std::uintptr_t>(d) & 31);  // first aligned offset, in (0, 32]
  for (; i + 128 <= n; i += 128) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 32));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 64));
    const __m256i e = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 96));
    _mm256_store_si256(reinterpret_cast<__m256i*>(d + i), a);
    _mm256_store_si256(reinterpret_cast<__m256i*>(d + i + 32), b);
    _mm256_store_si256(reinterpret_cast<__m256i*>(d + i + 64), c);
    _mm256_store_si256(reinterpret_cast<__m256i*>(d + i + 96), e);
  }
  for (; i + 32 <= n; i += 32) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(d + i), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)));
  }
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(d), first);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(d + n - 32), last);
}

void plain_sse2(std::byte* d, const std::byte* s, std::size_t n) {
  if (n < 16) return copy_small(d, s, n);
  const __m128i first = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
  const __m128i last = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + n - 16));
  std::size_t i = 16 - (reinterpret_cast<std::uintptr_t>(d) & 15);
  for (; i + 64 <= n; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_store_si128(reinterpret_cast<__m128i*>(d + i), a);
    _mm_store_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
    _mm_store_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
    _mm_store_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
  }
  for (; i + 16 <= n; i += 16) {
    _mm_store_si128(reinterpret_cast<__m128i*>(d + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
  }
  _mm_storeu_si128(reinterpret_cast<__m128i*>(d), first);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(d + n - 16), last);
}

// Streaming stores need aligned addresses and must not overlap ordinary stores to the same
// bytes (their order is not guaranteed), so the head up to the first aligned address and the
// tail after the last full vector are copied with ordinary stores, without overlap.
constexpr std::size_t kStreamMin = 256;  // below this the head/tail dominate; copy_plain is used

__attribute__((target("avx2"))) void nontemporal_avx2(std::byte* d, const std::byte* s, std::size_t n) {
  if (n < kStreamMin) return plain_avx2(d, s, n);
  const std::size_t head = (32 - (reinterpret_cast<std::uintptr_t>(d) & 31)) & 31;
  copy_small(d, s, head);
  std::size_t i = head;
  for (; i + 128 <= n; i += 128) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 32));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 64));
    const __m256i e = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i + 96));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i), a);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i + 32), b);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i + 64), c);
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i + 96), e);
  }
  for (; i + 32 <= n; i += 32) {
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)));
  }
  copy_small(d + i, s + i, n - i);
  _mm_sfence();  // streaming stores are weakly ordered: make them visible before returning
}

void nontemporal_sse2(std::byte* d, const std::byte* s, std::size_t n) {
  if (n < kStreamMin) return plain_sse2(d, s, n);
  const std::size_t head = (16 - (reinterpret_cast<std::uintptr_t>(d) & 15)) & 15;
  copy_small(d, s, head);
  std::size_t i = head;
  for (; i + 64 <= n; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
  }
  for (; i + 16 <= n; i += 16) {
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
  }
  copy_small(d + i, s + i, n - i);
  _mm_sfence();
}
#else
// Portable fallback: 8-byte words through fixed-size memcpy (a load and a store each).
void plain_words(std::byte* d, const std::byte* s, std::size_t n) {
  if (n < 32) return copy_small(d, s, n);
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t w;
    std::memcpy(&w, s + i, 8);
    std::memcpy(d + i, &w, 8);
  }
  copy_small(d + i, s + i, n - i);
}
#endif

}  // namespace

void copy_plain(void* dst, const void* src, std::size_t bytes) {
  auto* d = static_cast<std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(src);
#if defined(__x86_64__)
  kHaveAvx2 ? plain_avx2(d, s, bytes) : plain_sse2(d, s, bytes);
#else
  plain_words(d, s, bytes);
#endif
}

void copy_nontemporal(void* dst, const void* src, std::size_t bytes) {
  auto* d = static_cast<std::byte*>(dst);
  const auto* s = static_cast<const std::byte*>(src);
#if defined(__x86_64__)
  kHaveAvx2 ? nontemporal_avx2(d, s, bytes) : nontemporal_sse2(d, s, bytes);
#else
  plain_words(d, s, bytes);  // never reached through the bench: the arm reports unavailable
#endif
}

std::string nontemporal_unavailable_reason() {
#if defined(__x86_64__)
  return "";
#else
  return "no non-temporal store path for this architecture (x86-64 only)";
#endif
}

const char* copy_vector_isa() {
#if defined(__x86_64__)
  return kHaveAvx2 ? "avx2" : "sse2";
#else
  return "scalar";
#endif
}

// target_clones: one build runs the widest loop this CPU has, as STREAM built with -march=native would.
#if defined(__x86_64__)
#define PB_STREAM_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define PB_STREAM_CLONES
#endif

PB_STREAM_CLONES void stream_copy(double* __restrict a, const double* __restrict b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) a[i] = b[i];
}

PB_STREAM_CLONES void stream_triad(double* __restrict a, const double* __restrict b, const double* __restrict c,
                                   double scalar, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) a[i] = b[i] + scalar * c[i];
}

}  // namespace pairbench::kernels::copy
