// Must compile: the control for exec_includes_analysis.cpp (exec/ may use store/ and stats/).
#include "harness/stats/stats.h"
#include "harness/store/run_file.h"

int wing_allowed() { return 0; }
