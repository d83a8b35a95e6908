// Must NOT compile: selftest/ sits below cli/ (the selftest command's face calls the studies, never
// the other way round), so a file built as part of the selftest wing cannot see cli's headers.
#include "harness/cli/command.h"

int wing_violation() { return 0; }
