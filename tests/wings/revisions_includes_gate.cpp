// Must compile: the control for revisions_includes_cli.cpp (revisions/ runs git and ab through
// exec/ and reads ab's gate JSON through gate/).
#include "harness/exec/process.h"
#include "harness/gate/read_json.h"

int wing_allowed() { return 0; }
