#!/usr/bin/env bash
# Nightly job: Release build, nightly profile, gate against this machine's baseline (each benchmark
# at the larger of its threshold and its resolution from the history, docs/gate.md), same-runner
# confirmation of the gate's suspects (ci/confirm.sh: one `pairbench ab` of the baseline's build
# against this build), plot report. Keeps the run file, gate outputs (Markdown, JUnit XML, JSON),
# the confirmation (confirm.json, confirmed.json, confirmation.md) and the report in $ARTIFACTS_DIR,
# and this build's bench binaries in BUILDS_DIR (results/builds/<git sha>, the newest KEEP_BUILDS=3
# and the baseline's), where a later night's confirmation finds its baseline's.
# Exit: 0 passed (no suspect, or every suspect cleared or unresolved by the confirmation); 1 a
# confirmed regression (or one the gate found where it could not be confirmed, or a benchmark that
# stopped working, or the fuzzing tier found a crash, hang or leak: ci/fuzz.sh, after the
# measurements, FUZZ_SECONDS, default 0 here: the workflow runs it as its own job); 4 the gate could
# not decide some benchmark and it could not be confirmed (UNDECIDED=pass accepts that and exits 0;
# the summary still says so); 3 a benchmark crashed, hung or was wrong (the rest still gated), or
# the database write failed (before any regression: the run is not in the history until replayed);
# 2 bad input. CONFIRM=0 leaves the confirmation out (the gate's verdicts stand);
# CONFIRM_BUDGET (240 s) bounds it.
# Runs by hand too: `ci/nightly.sh` (PROFILE=quick for a short rehearsal).
# PAIRBENCH_DB (a SQLite path or a postgresql:// URL, e.g. the database a fleet of machines
# shares): every command that takes --db gets it; when the run cannot be stored there, the run
# file stays in $ARTIFACTS_DIR and the job ends 3 naming it (replay: pairbench history import).
# RUN_TAG: appended to the run file's name (array tasks sharing one results/ must not collide).
# BUDGET=SECONDS (default 0: off): sample until decided. Where this machine has a stored baseline,
# `run --baseline history --budget SECONDS` adds processes for the time benchmarks still undecided
# against it (always-valid intervals, docs/gate.md) and gates in the same command, writing the same
# gate outputs; the fixed `gate` step is then left out (re-testing the sampled run with the fixed
# test would not be valid). MAX_REPETITIONS: its cap per benchmark (default 30). Without a stored
# baseline the night runs as without BUDGET and stores its run as the baseline.
# SKIP_BUILD=1: use the pairbench already built in BUILD_DIR.
set -uo pipefail
cd "$(dirname "$0")/.."
if [ "${SKIP_BUILD:-0}" != 1 ]; then BUILD_TYPE=Release ./ci/build.sh || exit 2; fi
pb="${BUILD_DIR:-build}/bin/pairbench"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
profile="${PROFILE:-nightly}"
artifacts="${ARTIFACTS_DIR:-results/artifacts/$stamp}"
mkdir -p "$artifacts"
run="results/run-$stamp-$profile${RUN_TAG:+-$RUN_TAG}.json"
db=()
if [ -n "${PAIRBENCH_DB:-}" ]; then db=(--db "$PAIRBENCH_DB"); fi

"$pb" env | tee "$artifacts/environment.txt"
gate_outputs=(--undecided "${UNDECIDED:-fail}" --markdown "$artifacts/gate.md" --junit "$artifacts/gate.xml"
              --json "$artifacts/gate.json")
gated_in_run=0
if [ "${BUDGET:-0}" != 0 ]; then
  "$pb" run --profile "$profile" --out "$run" "${db[@]}" --baseline history --budget "$BUDGET" \
    ${MAX_REPETITIONS:+--max-repetitions "$MAX_REPETITIONS"} "${gate_outputs[@]}" "$@"
  run_status=$?
  if [ "$run_status" = 2 ] && [ ! -f "$run" ]; then
    # Refused before measuring (no stored baseline for this machine yet, or bad input): the plain night.
    echo "ci/nightly.sh: run --baseline history --budget $BUDGET refused (above); running without sampling" >&2
  else
    gated_in_run=1
  fi
fi
if [ "$gated_in_run" = 0 ]; then
  "$pb" run --profile "$profile" --out "$run" "${db[@]}" "$@"
  run_status=$?
fi
[ -f "$run" ] || { echo "ci/nightly.sh: no run file written (status $run_status)" >&2; exit "$run_status"; }
cp "$run" "$artifacts/"
# The run file records whether the history write succeeded (pairbench.history_write).
db_failure=$(/usr/bin/python3 ci/nightly_steps.py db-failure "$run" 2>/dev/null)
if [ -n "$db_failure" ]; then
  db_failure_line="ci/nightly.sh: the database write failed ($db_failure); the run file is kept as an artifact: $artifacts/$(basename "$run") (replay it with: pairbench history import${PAIRBENCH_DB:+ --db <PAIRBENCH_DB>} $artifacts/$(basename "$run"))"
  echo "$db_failure_line" >&2
fi

gate_status=0
if [ "$gated_in_run" = 1 ]; then
  # run gated itself: its exit status puts a regression (1) before a failed process or write (3)
  # before undecided (4); the gate's own status is in gate.json.
  gate_status=$(/usr/bin/python3 ci/nightly_steps.py gate-status "$artifacts/gate.json" 2>/dev/null) || gate_status=$run_status
  if [ "$run_status" = 1 ] || [ "$run_status" = 4 ] || [ "$run_status" = "$gate_status" ]; then run_status=0; fi
else
  "$pb" gate --current "$run" "${db[@]}" "${gate_outputs[@]}" || gate_status=$?
fi
if [ "$gated_in_run" = 0 ] && [ "$gate_status" = 2 ] && [ ! -f "$artifacts/gate.md" ]; then
  # No baseline for this machine yet (or it cannot be compared): this run becomes the baseline.
  echo "ci/nightly.sh: no usable baseline; storing this run as the baseline" >&2
  "$pb" baseline update --run "$run" "${db[@]}"
  gate_status=0
fi
# Same-runner confirmation: only what one run of both builds confirms fails the night.
confirm_status=-
if [ "${CONFIRM:-1}" != 0 ] && [ -f "$artifacts/gate.json" ] && [ "$gate_status" != 2 ]; then
  ./ci/confirm.sh "$artifacts" "$profile"
  confirm_status=$?
  case "$confirm_status" in
    0)  # nothing confirmed: suspects cleared, or unresolved within the budget (said in the summary); a
        # benchmark that stopped working (broken) still fails the night
        if /usr/bin/python3 ci/nightly_steps.py has-broken "$artifacts/gate.json"; then gate_status=1; else gate_status=0; fi ;;
    1) gate_status=1 ;;
    *) ;;                # could not confirm: the gate's own verdicts stand
  esac
  [ -f "$artifacts/confirmation.md" ] && cat "$artifacts/confirmation.md" >> "$artifacts/gate.md"
fi
# Regressions tracked until fixed (docs/regressions.md): every night, so that a returned level closes
# one; what the confirmation confirmed (its ab's gate), else the gate's own verdicts where it could
# not confirm (or there was nothing to confirm). New ones are announced once (regressions.json `new`).
if [ -f "$artifacts/gate.json" ] && [ "$gate_status" != 2 ]; then
  tracked="$artifacts/gate.json"
  if [ "$confirm_status" = 0 ] || [ "$confirm_status" = 1 ]; then
    [ -f "$artifacts/confirm.json" ] && tracked="$artifacts/confirm.json"
  fi
  "$pb" regressions record --gate "$tracked" --json "$artifacts/regressions.json" "${db[@]}" \
    || echo "ci/nightly.sh: pairbench regressions record failed (above); the night's verdict stands" >&2
fi
# Keep this build's bench binaries for the nights whose baseline it becomes (by git sha).
/usr/bin/python3 ci/nightly_steps.py keep-build "$run" "${BUILD_DIR:-build}/bin" "${BUILDS_DIR:-results/builds}" \
  "${KEEP_BUILDS:-3}" "$artifacts/gate.json" || echo "ci/nightly.sh: could not keep this build's binaries" >&2
"$pb" history --last 60 "${db[@]}" > "$artifacts/history.txt" 2>&1 || true
if [ -f plots/report.py ]; then
  if [ ${#db[@]} = 0 ]; then db_or_default=(--history results/history.sqlite); else db_or_default=("${db[@]}"); fi
  # This night's gate (written after the run file; an older gate.json in a reused folder is not it):
  # the report shows each regression's function diff.
  gate_for_report=()
  if [ "$artifacts/gate.json" -nt "$run" ]; then gate_for_report=(--gate "$artifacts/gate.json"); fi
  if [ ${#gate_for_report[@]} != 0 ] && [ -f "$artifacts/confirmed.json" ]; then
    gate_for_report+=(--confirmation "$artifacts/confirmed.json")
  fi
  "$pb" report --run "$run" "${db_or_default[@]}" "${gate_for_report[@]}" -o "$artifacts/report" \
    || echo "ci/nightly.sh: report failed" >&2
fi
# Fuzzing tier after the measurements, which it would disturb, where FUZZ_SECONDS asks for it (the
# workflow runs ci/fuzz.sh as its own job instead, outside the nightly's 15 minutes). Inputs that
# crashed are kept in $artifacts/fuzz/.
fuzz_status=0
if [ "${FUZZ_SECONDS:-0}" != 0 ]; then
  ARTIFACTS_DIR="$artifacts" ./ci/fuzz.sh "$FUZZ_SECONDS" >"$artifacts/fuzz.txt" 2>&1 || fuzz_status=$?
  grep '^ci/fuzz.sh' "$artifacts/fuzz.txt"
fi
if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$artifacts/gate.md" ]; then
  cat "$artifacts/gate.md" >> "$GITHUB_STEP_SUMMARY"
fi
echo "artifacts: $artifacts"
[ -f "$artifacts/gate.json" ] && echo "gate: $(/usr/bin/python3 ci/nightly_steps.py headline "$artifacts/gate.json")"
# A failed database write comes first (3): the run is not in the history that the fleet's gate and
# the next nights read, so nothing is settled until it is replayed; a regression the gate found is
# named beside it. Then a regression (1); then a crashed benchmark (3); then an undecided gate.
if [ -n "$db_failure" ]; then
  if [ "$gate_status" = 1 ]; then
    echo "ci/nightly.sh: the gate also found a regression ($artifacts/gate.md); it stands once the run is replayed" >&2
  fi
  echo "$db_failure_line" >&2
  exit 3
fi
if [ "$gate_status" = 1 ]; then exit 1; fi
if [ "$run_status" != 0 ]; then exit "$run_status"; fi
if [ "$fuzz_status" != 0 ]; then echo "ci/nightly.sh: the fuzz tier failed: $artifacts/fuzz.txt" >&2; exit 1; fi
exit "$gate_status"
