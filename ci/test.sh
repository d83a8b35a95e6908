#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, runs every test tier under ctest
# and the fuzzing tier for a fixed budget (ci/fuzz.sh). GPU tests (label `device`) are skipped with
# "skipped: no CUDA device" where there is no GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
"./ci/build.sh"
# Fuzzing tier first, so that ctest's summary closes the output: 30 s in total over the libFuzzer
# targets (ci/fuzz.sh; "skipped" where clang/libFuzzer is missing; FUZZ_SECONDS=0 leaves it out).
fuzz_status=0
if [ "${FUZZ_SECONDS:-30}" != 0 ]; then ./ci/fuzz.sh "${FUZZ_SECONDS:-30}" || fuzz_status=$?; fi
ctest --test-dir "${BUILD_DIR:-build}" -j"$(nproc)" --output-on-failure --timeout 600 "$@"
if [ "$fuzz_status" != 0 ]; then
  echo "ci/test.sh: the fuzz tier failed (exit $fuzz_status; see ci/fuzz.sh's lines above)" >&2
  exit "$fuzz_status"
fi
