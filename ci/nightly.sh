#!/usr/bin/env bash
# Nightly job: Release build, nightly profile, gate against this machine's baseline, plot report.
# Keeps the run file, gate outputs (Markdown, JUnit XML, JSON) and the report in $ARTIFACTS_DIR.
# Exit: 0 gate passed; 1 regression (or a benchmark that stopped working, or the fuzzing tier
# found a crash, hang or leak: ci/fuzz.sh, after the measurements); 4 the gate could not
# decide some benchmark (UNDECIDED=pass accepts that and exits 0; the summary still says so);
# 3 a benchmark crashed, hung or was wrong (the rest still gated); 2 bad input.
# Runs by hand too: `ci/nightly.sh` (PROFILE=quick for a short rehearsal).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD_TYPE=Release ./ci/build.sh || exit 2
pb="${BUILD_DIR:-build}/bin/pairbench"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
profile="${PROFILE:-nightly}"
artifacts="${ARTIFACTS_DIR:-results/artifacts/$stamp}"
mkdir -p "$artifacts"
run="results/run-$stamp-$profile.json"

"$pb" env | tee "$artifacts/environment.txt"
"$pb" run --profile "$profile" --out "$run" "$@"
run_status=$?
[ -f "$run" ] || { echo "ci/nightly.sh: no run file written (status $run_status)" >&2; exit "$run_status"; }
cp "$run" "$artifacts/"

gate_status=0
"$pb" gate --current "$run" --undecided "${UNDECIDED:-fail}" --markdown "$artifacts/gate.md" \
  --junit "$artifacts/gate.xml" --json "$artifacts/gate.json" || gate_status=$?
if [ "$gate_status" = 2 ] && [ ! -f "$artifacts/gate.md" ]; then
  # No baseline for this machine yet (or it cannot be compared): this run becomes the baseline.
  echo "ci/nightly.sh: no usable baseline; storing this run as the baseline" >&2
  "$pb" baseline update --run "$run"
  gate_status=0
fi
"$pb" history --last 60 > "$artifacts/history.txt" 2>&1 || true
if [ -f plots/report.py ]; then
  "$pb" report --run "$run" --history results/history.sqlite -o "$artifacts/report" || echo "ci/nightly.sh: report failed" >&2
fi
# Fuzzing tier after the measurements, which it would disturb: 10 minutes over the libFuzzer targets
# (ci/fuzz.sh; FUZZ_SECONDS=0 leaves it out). Inputs that crashed are kept in $artifacts/fuzz/.
fuzz_status=0
if [ "${FUZZ_SECONDS:-600}" != 0 ]; then
  ARTIFACTS_DIR="$artifacts" ./ci/fuzz.sh "${FUZZ_SECONDS:-600}" >"$artifacts/fuzz.txt" 2>&1 || fuzz_status=$?
  grep '^ci/fuzz.sh' "$artifacts/fuzz.txt"
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$artifacts/gate.md" ]; then
  cat "$artifacts/gate.md" >> "$GITHUB_STEP_SUMMARY"
fi
echo "artifacts: $artifacts"
[ -f "$artifacts/gate.json" ] && echo "gate: $(sed -n 's/^  "headline": "\(.*\)",$/\1/p' "$artifacts/gate.json")"
# A regression outranks everything; then a crashed benchmark; then an undecided gate.
if [ "$gate_status" = 1 ]; then exit 1; fi
if [ "$run_status" != 0 ]; then exit "$run_status"; fi
if [ "$fuzz_status" != 0 ]; then echo "ci/nightly.sh: the fuzz tier failed: $artifacts/fuzz.txt" >&2; exit 1; fi
exit "$gate_status"
