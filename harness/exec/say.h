// The one place pairbench's progress and notices go (stderr), at a level: quiet (only what a user
// must see: warnings, failures, interruptions), normal (progress and notes, the default) and
// verbose (also each process's launch). `pairbench --quiet|--verbose CMD` sets the session's level
// (main.cpp); results (tables, verdicts, JSON) go to stdout or their files and are not levelled.
// nvbench sends its progress through one printer the same way.
#pragma once

#include <iostream>
#include <string>

namespace pairbench::harness {

enum class Verbosity { quiet = 0, normal = 1, verbose = 2 };

void set_verbosity(Verbosity v);
Verbosity verbosity();

// Whether a line at `level` is printed in this session.
inline bool speaks(Verbosity level) { return static_cast<int>(level) <= static_cast<int>(verbosity()); }

// `say(level) << a << b;` writes to stderr when the session speaks at `level`, else nothing (the
// arguments are still evaluated). Stream manipulators pass through.
class Say {
 public:
  explicit Say(Verbosity level) : out_(speaks(level) ? &std::cerr : nullptr) {}
  template <typename T>
  Say& operator<<(const T& x) {
    if (out_) *out_ << x;
    return *this;
  }
  Say& operator<<(std::ostream& (*manipulator)(std::ostream&)) {
    if (out_) *out_ << manipulator;
    return *this;
  }
  Say& operator<<(std::ios_base& (*manipulator)(std::ios_base&)) {
    if (out_) *out_ << manipulator;
    return *this;
  }

 private:
  std::ostream* out_;
};
inline Say say(Verbosity level = Verbosity::normal) { return Say(level); }

// printf-style, to stderr, when the session speaks at `level`.
void sayf(Verbosity level, const char* format, ...) __attribute__((format(printf, 2, 3)));

}  // namespace pairbench::harness
