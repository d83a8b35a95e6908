#!/usr/bin/env bash
# Names the commit between GOOD and BAD that made the benchmarks matching REGEX slower:
# `pairbench bisect` (docs/bisect.md) on this machine, with this checkout's pairbench. Works from a
# clean clone: installs missing Debian packages and builds pairbench as ci/build.sh does
# (SKIP_BUILD=1: use the one already in BUILD_DIR), fetches the history a shallow clone lacks;
# bisect then builds each commit it tests (only the bench binaries REGEX needs) in
# .pairbench-bisect/ (kept: a later bisection's builds are incremental).
#
#   ci/bisect.sh GOOD BAD REGEX [pairbench bisect options, e.g. --budget 3600]
#   ci/bisect.sh --confirmed ARTIFACTS_DIR [options]   the nightly's confirmed regressions
#
# --confirmed: GOOD, BAD and REGEX from a night's artifacts (`pairbench confirm bisect-args`): REGEX
# matches exactly the benchmarks of confirmed.json's `regressions` array; GOOD and BAD are its
# `baseline_git_sha` and `current_git_sha`, else the git shas of the two runs gate.json compared.
# Exits 0 without bisecting when there is no confirmed regression.
# Environment: PROFILE (quick; the nightly's regressions are named by the nightly grid: nightly),
# ARTIFACTS_DIR (where bisect.json and bisect.txt go; default results/artifacts/bisect-<time>).
# Exit: pairbench bisect's: 0 the first bad commit named (re-checked against its parent); 2 bad
# input; 3 good or bad does not build or its benchmarks fail; 4 inconclusive (bisect.txt says why).
set -uo pipefail
cd "$(dirname "$0")/.."

confirmed_from=
if [ "${1:-}" = --confirmed ]; then
  [ $# -ge 2 ] || { echo "ci/bisect.sh: --confirmed needs the artifacts directory" >&2; exit 2; }
  confirmed_from="$2"
  shift 2
else
  [ $# -ge 3 ] || { echo "usage: ci/bisect.sh GOOD BAD REGEX [bisect options] | --confirmed ARTIFACTS_DIR" >&2; exit 2; }
  good="$1" bad="$2" regex="$3"
  shift 3
fi

pb="${BUILD_DIR:-build}/bin/pairbench"
# --confirmed: GOOD BAD REGEX from the confirmation's own command (confirmed.json, and the gate's
# runs for their shas); "none" ends here. Asked before fetching and building where a pairbench is
# already built, so that a night with nothing confirmed costs neither.
confirmed_args() {
  local gate_arg=()
  [ -f "$confirmed_from/gate.json" ] && gate_arg=(--gate "$confirmed_from/gate.json")
  args=$("$pb" confirm bisect-args --confirmed "$confirmed_from/confirmed.json" "${gate_arg[@]}" 2>&1) ||
    { echo "ci/bisect.sh: ${args#pairbench: }" >&2; exit 2; }
  if [ "$args" = none ]; then echo "ci/bisect.sh: $confirmed_from/confirmed.json: no confirmed regression, nothing to bisect"; exit 0; fi
  read -r good bad regex <<<"$args"
}
[ -n "$confirmed_from" ] && [ -x "$pb" ] && confirmed_args

if [ "$(git rev-parse --is-shallow-repository)" = true ]; then
  git fetch --quiet --unshallow || { echo "ci/bisect.sh: could not fetch the history of this shallow clone" >&2; exit 3; }
fi
if [ "${SKIP_BUILD:-0}" != 1 ]; then BUILD_TYPE=Release ./ci/build.sh || exit 3; fi
[ -n "$confirmed_from" ] && confirmed_args  # again with this build: the one that bisects
artifacts="${ARTIFACTS_DIR:-results/artifacts/bisect-$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$artifacts"
"$pb" bisect --good "$good" --bad "$bad" --benchmarks "$regex" --profile "${PROFILE:-quick}" \
  --json "$artifacts/bisect.json" "$@" 2>&1 | tee "$artifacts/bisect.txt"
status=${PIPESTATUS[0]}
if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  { echo "### pairbench bisect"; echo; echo '```'; grep -v '^ab: \|^pairbench: ' "$artifacts/bisect.txt"; echo '```'; } \
    >> "$GITHUB_STEP_SUMMARY"
fi
exit "$status"
