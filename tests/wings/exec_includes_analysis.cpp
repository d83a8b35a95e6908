// Must NOT compile: exec/ sits below analysis/, so a file built as part of the exec wing cannot
// see analysis's headers (the wings' include roots, harness/CMakeLists.txt).
#include "harness/analysis/summary.h"

int wing_violation() { return 0; }
