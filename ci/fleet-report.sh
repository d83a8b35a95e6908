#!/usr/bin/env bash
# The cross-machine step, after every machine of a night has run and stored its run in the shared
# database: gates each machine's run of this commit against that machine's baseline
# (`pairbench gate --db DB --commit SHA`) and renders the report with its cross-machine page
# (fleet.html: each benchmark's trend per machine, each claim's verdict per machine kind).
# Run by the final job of ci/workflows/fleet.yml and by the job ci/slurm/submit.sh makes depend on
# the array.
#   ci/fleet-report.sh [RUN_FILE_OR_DIR...]   (run files of this night, or folders holding them:
#                                             the newest is the report's --run; none: no report)
# Environment: PAIRBENCH_DB (required), PAIRBENCH_COMMIT (default: this checkout's HEAD),
# ARTIFACTS_DIR (default results/fleet/<UTC time>), UNDECIDED=pass, BUILD_DIR, SKIP_BUILD=1.
# Exit: the gate's (0 passed, 1 regression, 4 undecided, 2 bad input); 3 when the gate passed but
# the report could not be written.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ -z "${PAIRBENCH_DB:-}" ]; then
  echo "ci/fleet-report.sh: PAIRBENCH_DB: expected the shared database (a postgresql:// URL or a SQLite path), is unset" >&2
  exit 2
fi
build="${BUILD_DIR:-build}"
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  # Only the harness: this step measures nothing.
  { ./ci/setup-deps.sh && cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null &&
    cmake --build "$build" -j"$(nproc)" --target pairbench; } || exit 2
fi
pb="$build/bin/pairbench"
sha="${PAIRBENCH_COMMIT:-$(git rev-parse HEAD 2>/dev/null)}"
if [ -z "$sha" ]; then
  echo "ci/fleet-report.sh: PAIRBENCH_COMMIT: expected the commit the machines ran, is unset (and this is no git checkout)" >&2
  exit 2
fi
out="${ARTIFACTS_DIR:-results/fleet/$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$out"

gate_status=0
"$pb" gate --db "$PAIRBENCH_DB" --commit "$sha" --undecided "${UNDECIDED:-fail}" --markdown "$out/gate.md" \
  --junit "$out/gate.xml" --json "$out/gate.json" || gate_status=$?
echo "ci/fleet-report.sh: gate of commit ${sha:0:12} across machines: status $gate_status"

runs=()
for arg in "$@"; do
  if [ -d "$arg" ]; then
    while IFS= read -r f; do runs+=("$f"); done < <(find "$arg" -maxdepth 3 -type f -name 'run-*.json')
  elif [ -f "$arg" ]; then
    runs+=("$arg")
  else
    echo "ci/fleet-report.sh: $arg: expected a run file or a folder of run files, is missing" >&2
    exit 2
  fi
done
report_status=0
if ((${#runs[@]} == 0)); then
  echo "ci/fleet-report.sh: no run file given: no report (the gate above still decided)" >&2
else
  newest=$(ls -t "${runs[@]}" | head -n 1)
  "$pb" report --run "$newest" --db "$PAIRBENCH_DB" -o "$out/report" || report_status=$?
  [ "$report_status" = 0 ] && echo "ci/fleet-report.sh: report $out/report/index.html (across machines: fleet.html)"
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$out/gate.md" ]; then
  cat "$out/gate.md" >> "$GITHUB_STEP_SUMMARY"
fi
echo "artifacts: $out"
if [ "$gate_status" != 0 ]; then exit "$gate_status"; fi
if [ "$report_status" != 0 ]; then echo "ci/fleet-report.sh: the report failed (status $report_status)" >&2; exit 3; fi
exit 0
