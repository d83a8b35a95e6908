// Which allocator answers malloc and operator new in this process, its version and the settings in
// force: the in-process check an environment arm (LD_PRELOAD of an allocator) runs before it is
// timed, so that a jemalloc arm can never be glibc timed under another name.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace pairbench::kernels::alloc {

enum class Allocator { kGlibc, kJemalloc, kTcmalloc, kMimalloc, kUnknown };

const char* allocator_name(Allocator a);  // "glibc", "jemalloc", "tcmalloc", "mimalloc", "unknown"
std::optional<Allocator> allocator_from_name(std::string_view name);
// From the path of the shared object a symbol lives in: ".../libjemalloc.so.2" -> kJemalloc,
// ".../libc.so.6" -> kGlibc, anything else -> kUnknown.
Allocator allocator_of_library(std::string_view path);

// A preloadable allocator as Debian ships it.
struct AllocatorLibrary {
  Allocator which;
  std::string path;     // e.g. "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"
  std::string package;  // e.g. "libjemalloc2"
};
// jemalloc, tcmalloc (minimal), mimalloc, in that order.
const std::vector<AllocatorLibrary>& preloadable_allocators();

struct AllocatorProbe {
  Allocator malloc_owner = Allocator::kUnknown;  // library the `malloc` symbol resolves to
  Allocator new_owner = Allocator::kUnknown;     // library behind operator new(size_t); libstdc++'s
                                                 // forwards to malloc, so it counts as malloc_owner
  std::string malloc_library;                    // path dladdr reports for malloc
  std::string new_library;                       // path dladdr reports for operator new
  // A real malloc(1 MiB) / operator new(1 MiB) was confirmed served by malloc_owner through that
  // allocator's own bookkeeping (jemalloc thread.allocated, tcmalloc GetOwnership, mimalloc
  // mi_is_in_heap_region, glibc mallinfo2).
  bool malloc_call_confirmed = false;
  bool new_call_confirmed = false;
  std::string version;   // "5.3.0-0-g54eaed1d...", "gperftools 2.10", "2.0.9", "2.36"
  std::string problem;   // why a check failed; empty when every check passed
  std::string settings;  // "MALLOC_CONF=unset; MALLOC_ARENA_MAX=unset; ...; THP=madvise"

  // malloc and operator new both resolve to `expected` and both real calls were confirmed.
  bool in_effect(Allocator expected) const;
  // One line for a benchmark label: "allocator=jemalloc 5.3.0-...; malloc=libjemalloc.so.2; ...".
  std::string describe() const;
};

// Never throws; safe under any allocator.
AllocatorProbe probe_allocator();

// A jemalloc ssize_t option read through mallctl, e.g. "opt.dirty_decay_ms"; nullopt where jemalloc
// does not answer (not loaded, or no such option).
std::optional<long long> jemalloc_ssize_option(const char* name);

// The allocator-relevant environment and kernel settings in force, one line:
// MALLOC_CONF, MALLOC_ARENA_MAX, GLIBC_TUNABLES (each "unset" when absent), every MIMALLOC_* and
// TCMALLOC_* variable that is set, and the transparent huge pages mode.
std::string allocator_settings();
// "always", "madvise" or "never" from /sys/kernel/mm/transparent_hugepage/enabled; "unknown".
std::string transparent_hugepages_mode();

}  // namespace pairbench::kernels::alloc
