// Must compile: the control for sampling_includes_cli.cpp (sampling/ decides through gate/ and runs
// processes through exec/).
#include "harness/exec/runner.h"
#include "harness/gate/sequential.h"

int wing_allowed() { return 0; }
