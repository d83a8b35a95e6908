#!/usr/bin/env bash
# The README's main command: installs what is missing, builds, runs the suite on this machine
# (profile ${PROFILE:-quick}), writes a run file under results/, prints the summary, and renders
# the plot report into results/report/index.html.
# Extra arguments go to `pairbench run` (e.g. --experiments dispatch --repetitions 9); the run
# file's name is set here.
set -euo pipefail
cd "$(dirname "$0")/.."
"./ci/build.sh"
pairbench="${BUILD_DIR:-build}/bin/pairbench"
"$pairbench" env
profile="${PROFILE:-quick}"
run_file="results/run-$(date -u +%Y%m%dT%H%M%SZ)-${profile}.json"
# A crashed, hung or wrong benchmark makes `run` exit 3 after writing every other result: the
# report is still rendered, and the job still fails with run's status.
status=0
"$pairbench" run --profile "$profile" --out "$run_file" "$@" || status=$?
if [[ -f "$run_file" ]]; then
  history=()
  [[ -f results/history.sqlite ]] && history=(--history results/history.sqlite)
  "$pairbench" report --run "$run_file" "${history[@]}" -o results/report
fi
exit "$status"
