// Allocator detection: dladdr on the resolved malloc and operator new, then a real 1 MiB call
// confirmed through the expected allocator's own bookkeeping, its version, and the settings.
#include "kernels/alloc/allocator_probe.h"

#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <malloc.h>
#include <sys/types.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>

extern char** environ;

namespace pairbench::kernels::alloc {
namespace {

constexpr std::size_t kProbeBytes = std::size_t{1} << 20;

// Makes `p` visible to the compiler as used, so a malloc/free pair cannot be elided.
inline void escape(void* p) { asm volatile("" : : "g"(p) : "memory"); }

std::string basename_of(std::string_view path) {
  const auto slash = path.rfind('/');
  return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

std::string library_of(const void* address) {
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

template <typename Fn>
Fn symbol(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

#if defined(__x86_64__)
constexpr const char* kMultiarchLib = "/usr/lib/x86_64-linux-gnu/";
#elif defined(__aarch64__)
constexpr const char* kMultiarchLib = "/usr/lib/aarch64-linux-gnu/";
#else
constexpr const char* kMultiarchLib = "/usr/lib/";
#endif

// Asks `owner`'s own bookkeeping whether `call` (malloc or operator new of kProbeBytes, freed by
// `release`) was served by it. Returns "" when confirmed, else why not.
template <typename Call, typename Release>
std::string confirm_call(Allocator owner, Call call, Release release) {
  switch (owner) {
    case Allocator::kJemalloc: {
      using Mallctl = int (*)(const char*, void*, std::size_t*, void*, std::size_t);
      const auto mallctl = symbol<Mallctl>("mallctl");
      if (!mallctl) return "jemalloc has no mallctl";
      std::uint64_t before = 0, after = 0;
      std::size_t len = sizeof before;
      if (mallctl("thread.allocated", &before, &len, nullptr, 0) != 0) return "mallctl thread.allocated failed";
      void* p = call();
      escape(p);
      len = sizeof after;
      const int rc = mallctl("thread.allocated", &after, &len, nullptr, 0);
      release(p);
      if (rc != 0) return "mallctl thread.allocated failed";
      return after - before >= kProbeBytes ? "" : "jemalloc's thread.allocated did not grow by the call";
    }
    case Allocator::kTcmalloc: {
      using Ownership = int (*)(const void*);
      const auto ownership = symbol<Ownership>("MallocExtension_GetOwnership");
      if (!ownership) return "tcmalloc has no MallocExtension_GetOwnership";
      void* p = call();
      const int owned = ownership(p);  // 1 = MallocExtension_kOwned
      release(p);
      return owned == 1 ? "" : "tcmalloc does not own the block";
    }
    case Allocator::kMimalloc: {
      using InHeap = bool (*)(const void*);
      const auto in_heap = symbol<InHeap>("mi_is_in_heap_region");
      if (!in_heap) return "mimalloc has no mi_is_in_heap_region";
      void* p = call();
      const bool owned = in_heap(p);
      release(p);
      return owned ? "" : "mimalloc does not own the block";
    }
    case Allocator::kGlibc: {
      // glibc's own mallinfo2, not an interposed one: only glibc's arenas grow by the call.
      void* libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
      using Mallinfo2 = struct mallinfo2 (*)();
      const auto info = libc ? reinterpret_cast<Mallinfo2>(dlsym(libc, "mallinfo2")) : nullptr;
      if (libc) dlclose(libc);
      if (!info) return "glibc has no mallinfo2";
      const struct mallinfo2 before = info();
      void* p = call();
      escape(p);
      const struct mallinfo2 after = info();
      release(p);
      const std::size_t grew = (after.uordblks + after.hblkhd) - (before.uordblks + before.hblkhd);
      return grew >= kProbeBytes ? "" : "glibc's arenas did not grow by the call";
    }
    case Allocator::kUnknown:
      break;
  }
  return "allocator not recognised";
}

std::string version_of(Allocator a) {
  switch (a) {
    case Allocator::kGlibc:
      return gnu_get_libc_version();
    case Allocator::kJemalloc: {
      using Mallctl = int (*)(const char*, void*, std::size_t*, void*, std::size_t);
      const auto mallctl = symbol<Mallctl>("mallctl");
      const char* v = nullptr;
      std::size_t len = sizeof v;
      if (mallctl && mallctl("version", &v, &len, nullptr, 0) == 0 && v) return v;
      return "unknown";
    }
    case Allocator::kTcmalloc: {
      using TcVersion = const char* (*)(int*, int*, const char**);
      const auto tc_version = symbol<TcVersion>("tc_version");
      int major = 0, minor = 0;
      const char* patch = nullptr;
      const char* v = tc_version ? tc_version(&major, &minor, &patch) : nullptr;
      return v ? v : "unknown";
    }
    case Allocator::kMimalloc: {
      using MiVersion = int (*)();
      const auto mi_version = symbol<MiVersion>("mi_version");
      if (!mi_version) return "unknown";
      const int v = mi_version();  // e.g. 209 for 2.0.9
      return std::to_string(v / 100) + "." + std::to_string(v / 10 % 10) + "." + std::to_string(v % 10);
    }
    case Allocator::kUnknown:
      break;
  }
  return "unknown";
}

}  // namespace

const char* allocator_name(Allocator a) {
  switch (a) {
    case Allocator::kGlibc:
      return "glibc";
    case Allocator::kJemalloc:
      return "jemalloc";
    case Allocator::kTcmalloc:
      return "tcmalloc";
    case Allocator::kMimalloc:
      return "mimalloc";
    case Allocator::kUnknown:
      break;
  }
  return "unknown";
}

std::optional<Allocator> allocator_from_name(std::string_view name) {
  for (Allocator a : {Allocator::kGlibc, Allocator::kJemalloc, Allocator::kTcmalloc, Allocator::kMimalloc}) {
    if (name == allocator_name(a)) return a;
  }
  return std::nullopt;
}

Allocator allocator_of_library(std::string_view path) {
  const std::string base = basename_of(path);
  if (base.find("jemalloc") != std::string::npos) return Allocator::kJemalloc;
  if (base.find("tcmalloc") != std::string::npos) return Allocator::kTcmalloc;
  if (base.find("mimalloc") != std::string::npos) return Allocator::kMimalloc;
  if (base.rfind("libc.so", 0) == 0 || base.rfind("libc-", 0) == 0) return Allocator::kGlibc;
  return Allocator::kUnknown;
}

const std::vector<AllocatorLibrary>& preloadable_allocators() {
  static const std::vector<AllocatorLibrary> libraries = {
      {Allocator::kJemalloc, std::string(kMultiarchLib) + "libjemalloc.so.2", "libjemalloc2"},
      {Allocator::kTcmalloc, std::string(kMultiarchLib) + "libtcmalloc_minimal.so.4", "libtcmalloc-minimal4"},
      {Allocator::kMimalloc, std::string(kMultiarchLib) + "libmimalloc.so.2", "libmimalloc2.0"},
  };
  return libraries;
}

bool AllocatorProbe::in_effect(Allocator expected) const {
  return malloc_owner == expected && new_owner == expected && malloc_call_confirmed && new_call_confirmed;
}

std::string AllocatorProbe::describe() const {
  std::string out = std::string("allocator=") + allocator_name(malloc_owner) + " " + version;
  out += "; malloc=" + (malloc_library.empty() ? std::string("?") : basename_of(malloc_library));
  out += "; operator_new=" + (new_library.empty() ? std::string("?") : basename_of(new_library));
  out += std::string("; real_calls=") + (malloc_call_confirmed && new_call_confirmed ? "confirmed" : "NOT confirmed");
  if (!problem.empty()) out += " (" + problem + ")";
  out += "; " + settings;
  return out;
}

std::string transparent_hugepages_mode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!std::getline(in, line)) return "unknown";
  const auto open = line.find('['), close = line.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return "unknown";
  return line.substr(open + 1, close - open - 1);
}

std::string allocator_settings() {
  std::string out;
  for (const char* name : {"MALLOC_CONF", "MALLOC_ARENA_MAX", "GLIBC_TUNABLES"}) {
    const char* v = std::getenv(name);
    out += std::string(name) + "=" + (v ? v : "unset") + "; ";
  }
  bool any_prefixed = false;
  for (char** e = environ; e && *e; ++e) {
    const std::string_view var(*e);
    if (var.rfind("MIMALLOC_", 0) == 0 || var.rfind("TCMALLOC_", 0) == 0) {
      out += std::string(var) + "; ";
      any_prefixed = true;
    }
  }
  if (!any_prefixed) out += "MIMALLOC_*/TCMALLOC_*=unset; ";
  out += "THP=" + transparent_hugepages_mode();
  return out;
}

std::optional<long long> jemalloc_ssize_option(const char* name) {
  using Mallctl = int (*)(const char*, void*, std::size_t*, void*, std::size_t);
  const auto mallctl = symbol<Mallctl>("mallctl");
  ssize_t value = 0;
  std::size_t len = sizeof value;
  if (!mallctl || mallctl(name, &value, &len, nullptr, 0) != 0 || len != sizeof value) return std::nullopt;
  return value;
}

AllocatorProbe probe_allocator() {
  AllocatorProbe probe;
  probe.malloc_library = library_of(dlsym(RTLD_DEFAULT, "malloc"));
  probe.malloc_owner = allocator_of_library(probe.malloc_library);
  // The address the program's own calls go through (its GOT entry), not just the symbol table.
  void* (*const new_fn)(std::size_t) = &::operator new;
  probe.new_library = library_of(reinterpret_cast<const void*>(new_fn));
  const std::string new_base = basename_of(probe.new_library);
  probe.new_owner = new_base.rfind("libstdc++", 0) == 0 ? probe.malloc_owner  // forwards to malloc
                                                        : allocator_of_library(probe.new_library);
  if (library_of(dlsym(RTLD_DEFAULT, "_Znwm")) != probe.new_library) {
    probe.problem = "operator new: the program's calls and dlsym disagree";
  }
  const std::string malloc_problem = confirm_call(
      probe.malloc_owner, [] { return std::malloc(kProbeBytes); }, [](void* p) { std::free(p); });
  const std::string new_problem = confirm_call(
      probe.new_owner, [] { return ::operator new(kProbeBytes); }, [](void* p) { ::operator delete(p); });
  probe.malloc_call_confirmed = malloc_problem.empty();
  probe.new_call_confirmed = new_problem.empty() && probe.problem.empty();
  for (const std::string& p : {malloc_problem, new_problem}) {
    if (!p.empty()) probe.problem += (probe.problem.empty() ? "" : "; ") + p;
  }
  probe.version = version_of(probe.malloc_owner);
  probe.settings = allocator_settings();
  return probe;
}

}  // namespace pairbench::kernels::alloc
