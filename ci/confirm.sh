#!/usr/bin/env bash
# Same-runner confirmation of a night's suspects (docs/gate.md, "Confirmation"): the benchmarks the
# gate against the history called a regression or undecided, or unchanged only at a resolution wider
# than their threshold while slower than it (gate.json's `suspect`), measured again in one `pairbench
# ab` of the baseline's build against this build on this machine, sampling until decided. Two runs on
# two days differ by their days; one ab does not, so only what it confirms is a regression.
#
#   ci/confirm.sh ARTIFACTS_DIR [PROFILE]
#
# Reads ARTIFACTS_DIR/gate.json (its `baseline_build`: the baseline's git sha, "-dirty" where its
# tree had uncommitted changes). The baseline's bench binaries come from BUILDS_DIR/<that>/bin
# (default results/builds; ci/nightly.sh keeps every night's there, the newest KEEP_BUILDS), else are
# built from a git worktree of that commit (not possible for a dirty tree: then nothing is
# confirmed and this says so). The candidate is BUILD_DIR (build).
# Writes to ARTIFACTS_DIR: confirm/ (ab's two run files), confirm.json / confirm.md (ab's gate),
# confirmed.json ({"regressions": [...], "cleared": [...], "unresolved": [...], "baseline_git_sha",
# "current_git_sha"}: what ci/bisect.sh --confirmed and `pairbench regressions record` read) and
# confirmation.md (the job summary's paragraph).
# CONFIRM_BUDGET: seconds for the ab's sampling (default 240); CONFIRM_REPETITIONS: its planned
# processes per side before sampling (default 4); CONFIRM_MAX_SUSPECTS: at most this many benchmarks
# (default 40): regressions and undecided rows first, then suspects by their p-value.
# Exit: 0 no suspect, or none confirmed; 1 a confirmed regression; 3 could not confirm (no baseline
# build, ab failed): the gate's own verdicts stand.
set -uo pipefail
cd "$(dirname "$0")/.."
artifacts="${1:?usage: ci/confirm.sh ARTIFACTS_DIR [PROFILE]}"
profile="${2:-${PROFILE:-nightly}}"
pb="${BUILD_DIR:-build}/bin/pairbench"
builds="${BUILDS_DIR:-results/builds}"
summary="$artifacts/confirmation.md"

# The policy (which suspects, what the ab's verdicts make of them) is pairbench's own, tested on its
# own: `pairbench confirm` (harness/sampling/confirmation.h).
# Suspects, the baseline's build and tonight's, and an anchored expression naming the suspects.
read -r count base_build cur_build regex < <("$pb" confirm select --gate "$artifacts/gate.json" \
  --max-suspects "${CONFIRM_MAX_SUSPECTS:-40}") || { echo "ci/confirm.sh: $artifacts/gate.json: unreadable" >&2; exit 3; }
[ -n "${count:-}" ] || { echo "ci/confirm.sh: $artifacts/gate.json: unreadable" >&2; exit 3; }

if [ "$count" = 0 ]; then
  echo "### Same-runner confirmation" > "$summary"
  echo "No suspect: nothing to confirm." >> "$summary"
  "$pb" confirm none --gate "$artifacts/gate.json" --out "$artifacts/confirmed.json"
  echo "ci/confirm.sh: no suspect in the gate; nothing to confirm"
  exit 0
fi

cannot() {
  { echo "### Same-runner confirmation"; echo "Not done: $1. The gate's verdicts stand."; } > "$summary"
  echo "ci/confirm.sh: $count suspect(s) not confirmed: $1" >&2
  exit 3
}
[ "$base_build" != - ] || cannot "the baseline run file names no git commit"
base_dir="$builds/$base_build"
if [ ! -x "$base_dir/bin/pairbench" ]; then
  case "$base_build" in
    *-dirty) cannot "the baseline's build ($base_build) is not kept in $builds and was built from uncommitted changes, so it cannot be rebuilt" ;;
  esac
  echo "ci/confirm.sh: the baseline's build $base_build is not in $builds: building it from a git worktree" >&2
  src=$(mktemp -d "${TMPDIR:-/tmp}/pairbench-baseline-XXXXXX")
  if git worktree add --quiet --detach "$src/src" "$base_build" &&
     (cd "$src/src" && BUILD_DIR="$src/build" BUILD_TYPE=Release ./ci/build.sh >"$src/build.log" 2>&1); then
    mkdir -p "$base_dir.tmp/bin" && cp -a "$src/build/bin/." "$base_dir.tmp/bin/" && mv "$base_dir.tmp" "$base_dir"
  fi
  git worktree remove --force "$src/src" 2>/dev/null
  [ -x "$base_dir/bin/pairbench" ] || { tail -5 "$src/build.log" >&2 2>/dev/null; rm -rf "$src"; cannot "the baseline's commit $base_build did not build"; }
  rm -rf "$src"
fi

echo "ci/confirm.sh: $count suspect(s): ab of the baseline's build ($base_build) against this build ($cur_build)"
start=$(date +%s)
"$pb" ab --baseline-build "$base_dir" --candidate-build "${BUILD_DIR:-build}" --profile "$profile" \
  --benchmarks "$regex" --repetitions "${CONFIRM_REPETITIONS:-4}" --budget "${CONFIRM_BUDGET:-240}" \
  --out-dir "$artifacts/confirm" --json "$artifacts/confirm.json" --markdown "$artifacts/confirm.md" \
  --undecided pass > "$artifacts/confirm.txt" 2>&1
ab_status=$?
wall=$(( $(date +%s) - start ))
tail -3 "$artifacts/confirm.txt"
if [ "$ab_status" = 2 ] || [ ! -f "$artifacts/confirm.json" ]; then
  tail -5 "$artifacts/confirm.txt" >&2
  cannot "pairbench ab did not compare them (exit $ab_status; $artifacts/confirm.txt)"
fi

"$pb" confirm classify --gate "$artifacts/gate.json" --ab "$artifacts/confirm.json" --out "$artifacts/confirmed.json" \
  --summary "$summary" --count "$count" --seconds "$wall"
status=$?
[ "$status" -le 1 ] || { echo "ci/confirm.sh: the ab's verdicts could not be read (exit $status)" >&2; exit 3; }
exit "$status"
