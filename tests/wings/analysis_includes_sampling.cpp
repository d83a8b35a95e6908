// Must NOT compile: analysis/ sits below sampling/ (ab's runs build their run files through
// analysis, never the other way round), so a file built as part of the analysis wing cannot see
// sampling's headers.
#include "harness/sampling/ab_runs.h"

int wing_violation() { return 0; }
