#!/usr/bin/env bash
# The README's main command: installs what is missing, builds, runs the suite on this machine
# (profile ${PROFILE:-quick}), writes a run file under results/ and prints the summary.
# Extra arguments go to `pairbench run` (e.g. --experiments dispatch --repetitions 9).
set -euo pipefail
cd "$(dirname "$0")/.."
"./ci/build.sh"
"${BUILD_DIR:-build}/bin/pairbench" env
exec "${BUILD_DIR:-build}/bin/pairbench" run --profile "${PROFILE:-quick}" "$@"
