// Must compile: the control for selftest_includes_cli.cpp (the studies run ab through exec/ and
// read its gate JSON through gate/).
#include "harness/exec/process.h"
#include "harness/gate/read_json.h"

int wing_allowed() { return 0; }
