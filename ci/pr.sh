#!/usr/bin/env bash
# Pull-request job: quick profile of this branch against main.
# - With MAIN_BUILD_DIR (a build of main on this machine): `pairbench ab`, both builds
#   interleaved process by process in one run (drift between halves cannot read as a change).
# - Otherwise against main's latest results: MAIN_RUN_FILE (e.g. the nightly artifact), or this
#   machine's stored baseline.
# 9 processes per benchmark: with 5, no difference can survive the correction across benchmarks.
set -uo pipefail
cd "$(dirname "$0")/.."
./ci/build.sh || exit 2
pb="${BUILD_DIR:-build}/bin/pairbench"
artifacts="${ARTIFACTS_DIR:-results/artifacts/pr-$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$artifacts"
gate_outputs=(--markdown "$artifacts/gate.md" --junit "$artifacts/gate.xml" --json "$artifacts/gate.json")
if [ -n "${MAIN_BUILD_DIR:-}" ]; then
  "$pb" ab --baseline-build "$MAIN_BUILD_DIR" --candidate-build "${BUILD_DIR:-build}" --profile quick \
    --repetitions "${REPETITIONS:-9}" --out-dir "$artifacts" "${gate_outputs[@]}" "$@"
  status=$?
else
  run="$artifacts/run-quick.json"
  "$pb" run --profile quick --repetitions "${REPETITIONS:-9}" --out "$run" --no-history "$@"
  run_status=$?
  baseline_args=()
  if [ -n "${MAIN_RUN_FILE:-}" ]; then baseline_args=(--baseline "$MAIN_RUN_FILE"); fi
  "$pb" gate "${baseline_args[@]}" --current "$run" "${gate_outputs[@]}"
  status=$?
  if [ "$status" = 0 ]; then status=$run_status; fi
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$artifacts/gate.md" ]; then cat "$artifacts/gate.md" >> "$GITHUB_STEP_SUMMARY"; fi
exit "$status"
