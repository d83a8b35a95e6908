#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, runs every test tier under ctest.
# GPU tests (label `device`) are skipped with "skipped: no CUDA device" where there is no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
"./ci/build.sh"
ctest --test-dir "${BUILD_DIR:-build}" -j"$(nproc)" --output-on-failure --timeout 600 "$@"
