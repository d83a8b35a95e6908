// Must NOT compile: sampling/ sits below cli/ (the commands' faces call the loop, never the other
// way round), so a file built as part of the sampling wing cannot see cli's headers.
#include "harness/cli/run_record.h"

int wing_violation() { return 0; }
