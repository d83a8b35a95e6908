#!/usr/bin/env bash
# Pull-request job: quick profile of this branch against main, gated.
# - With MAIN_BUILD_DIR (a build of main on this machine): `pairbench ab`, both builds in one run,
#   in duet pairs (each benchmark's two processes at once, one core each, cores swapped every
#   round), so what the machine does hits both sides alike.
# - Otherwise against main's latest results: MAIN_RUN_FILE (e.g. the nightly artifact), or this
#   machine's stored baseline.
# 9 processes per benchmark and side (REPETITIONS), 2 instruction-counting processes where an
# experiment declares counts meaningful, within the nightly's per-benchmark time budgets
# (PROCESS_BUDGET 2 s of time processes, at least 4; INSTRUCTION_BUDGET 4 s of counting, a benchmark
# whose one callgrind process costs more counted at its family's cheapest grid point; 0 = none):
# on a 2-vCPU AMD EPYC Zen 3 VM the run without them took 346 s, over the job's 5 minutes.
# Exit: 0 passed; 1 regression; 4 undecided (UNDECIDED=pass accepts it); 3 a benchmark crashed,
# hung or was wrong; 2 bad input.
set -uo pipefail
cd "$(dirname "$0")/.."
./ci/build.sh || exit 2
pb="${BUILD_DIR:-build}/bin/pairbench"
artifacts="${ARTIFACTS_DIR:-results/artifacts/pr-$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$artifacts"
gate_outputs=(--undecided "${UNDECIDED:-fail}" --markdown "$artifacts/gate.md" --junit "$artifacts/gate.xml"
              --json "$artifacts/gate.json")
if [ -n "${MAIN_BUILD_DIR:-}" ]; then
  "$pb" ab --baseline-build "$MAIN_BUILD_DIR" --candidate-build "${BUILD_DIR:-build}" --profile quick \
    --repetitions "${REPETITIONS:-9}" --pairing "${PAIRING:-duet}" --out-dir "$artifacts" "${gate_outputs[@]}" "$@"
  status=$?
else
  run="$artifacts/run-quick.json"
  "$pb" run --profile quick --repetitions "${REPETITIONS:-9}" --instruction-processes 2 \
    --process-budget "${PROCESS_BUDGET:-2}" --instruction-budget "${INSTRUCTION_BUDGET:-4}" --out "$run" --no-history "$@"
  run_status=$?
  baseline_args=()
  if [ -n "${MAIN_RUN_FILE:-}" ]; then baseline_args=(--baseline "$MAIN_RUN_FILE"); fi
  status=0
  "$pb" gate "${baseline_args[@]}" --current "$run" "${gate_outputs[@]}" || status=$?
  if [ "$status" != 1 ] && [ "$run_status" != 0 ]; then status=$run_status; fi
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$artifacts/gate.md" ]; then cat "$artifacts/gate.md" >> "$GITHUB_STEP_SUMMARY"; fi
exit "$status"
