#include "harness/exec/say.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>

namespace pairbench::harness {
namespace {
std::atomic<Verbosity> g_verbosity{Verbosity::normal};
}  // namespace

void set_verbosity(Verbosity v) { g_verbosity = v; }
Verbosity verbosity() { return g_verbosity; }

void sayf(Verbosity level, const char* format, ...) {
  if (!speaks(level)) return;
  va_list args;
  va_start(args, format);
  std::vfprintf(stderr, format, args);
  va_end(args);
}

}  // namespace pairbench::harness
