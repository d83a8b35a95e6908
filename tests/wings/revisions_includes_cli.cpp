// Must NOT compile: revisions/ sits below cli/ (bisect's face calls the bisection, never the other
// way round), so a file built as part of the revisions wing cannot see cli's headers.
#include "harness/cli/options.h"

int wing_violation() { return 0; }
