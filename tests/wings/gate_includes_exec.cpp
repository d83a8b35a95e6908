// Must NOT compile: the gate decides from run files (store/) and statistics alone; it cannot see exec/.
#include "harness/exec/runner.h"

int wing_violation() { return 0; }
