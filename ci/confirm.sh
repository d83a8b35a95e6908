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

# Suspects, the baseline's build and tonight's, and an anchored expression naming the suspects.
read -r count base_build cur_build regex < <(/usr/bin/python3 - "$artifacts/gate.json" "${CONFIRM_MAX_SUSPECTS:-40}" <<'EOF'
import json, re, sys
gate = json.load(open(sys.argv[1], encoding="utf-8"))
cap = int(sys.argv[2])
# Regressions and undecided rows first, then the suspects by their one-sided p (the strongest
# evidence of a slowdown first), at most CONFIRM_MAX_SUSPECTS benchmarks.
rows = [b for b in gate.get("benchmarks", []) if b.get("suspect")]
rows.sort(key=lambda b: (b.get("verdict") not in ("regression", "undecided"), b.get("p_value", 1.0)))
names = []
for b in rows:
    if b["name"] not in names and len(names) < cap:
        names.append(b["name"])
names.sort()
escape = lambda s: re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", s)
print(len(names), gate.get("baseline_build") or "-", gate.get("current_build") or "-",
      "^(?:" + "|".join(escape(n) for n in names) + ")$" if names else "-")
EOF
) || { echo "ci/confirm.sh: $artifacts/gate.json: unreadable" >&2; exit 3; }

if [ "$count" = 0 ]; then
  echo "### Same-runner confirmation" > "$summary"
  echo "No suspect: nothing to confirm." >> "$summary"
  /usr/bin/python3 -c 'import json, sys; json.dump({"regressions": [], "cleared": [], "unresolved": [], "baseline_git_sha": sys.argv[1], "current_git_sha": sys.argv[2]}, open(sys.argv[3], "w"), indent=2)' \
    "${base_build%-dirty}" "${cur_build%-dirty}" "$artifacts/confirmed.json"
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

/usr/bin/python3 - "$artifacts" "$count" "$wall" "$base_build" "$cur_build" <<'EOF'
import json, os, sys
d, count, wall, base, cur = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
gate = json.load(open(os.path.join(d, "gate.json"), encoding="utf-8"))
ab = json.load(open(os.path.join(d, "confirm.json"), encoding="utf-8"))
suspects = {(b["name"], b["instrument"]): b for b in gate["benchmarks"] if b.get("suspect")}
def pct(x):
    return "?" if x is None else f"{100 * x:+.1f}%"
def row(b, why):
    return {"benchmark": b["name"], "instrument": b["instrument"], "experiment": b.get("experiment", ""),
            "verdict": b["verdict"], "change": b.get("slowdown"), "low": b.get("slowdown_low"),
            "high": b.get("slowdown_high"), "p_adjusted": b.get("p_adjusted"), "why": why}
out = {"regressions": [], "cleared": [], "unresolved": [], "baseline_git_sha": base.removesuffix("-dirty"),
       "current_git_sha": cur.removesuffix("-dirty"), "baseline_build": base, "current_build": cur,
       "seconds": float(wall)}
seen = set()
for b in ab["benchmarks"]:
    key = (b["name"], b["instrument"])
    if b["name"] not in {n for n, _ in suspects}:
        continue
    seen.add(key)
    night = suspects.get(key)
    was = f"night: {night['verdict']} {pct(night.get('slowdown'))}" if night else "night: not a suspect on this instrument"
    change = f"{pct(b.get('slowdown'))} [{pct(b.get('slowdown_low'))}, {pct(b.get('slowdown_high'))}]"
    if b["verdict"] in ("regression", "broken"):
        out["regressions"].append(row(b, f"confirmed: {b['verdict']} {change} in one run of both builds ({was})"))
    elif b["verdict"] in ("unchanged", "improvement"):
        out["cleared"].append(row(b, f"cleared: {b['verdict']} {change} in one run of both builds ({was})"))
    else:
        out["unresolved"].append(row(b, f"unresolved: {b['verdict']} {change} within the budget ({was}); {b.get('note', '')}"))
for (name, instrument), b in suspects.items():
    if not any(n == name for n, _ in seen):
        out["unresolved"].append(row(b, f"not measured by the ab ({b['verdict']} in the night)"))
tmp = os.path.join(d, "confirmed.json.tmp")
json.dump(out, open(tmp, "w", encoding="utf-8"), indent=2)
os.replace(tmp, os.path.join(d, "confirmed.json"))
lines = ["### Same-runner confirmation", "",
         f"{count} suspect(s) of the night measured again in one `pairbench ab` of the baseline's build "
         f"(`{base}`) against this build (`{cur}`), sampling until decided, {wall} s: "
         f"**{len(out['regressions'])} confirmed**, {len(out['cleared'])} cleared, {len(out['unresolved'])} unresolved. "
         "Only a confirmed regression fails the night.", ""]
for kind in ("regressions", "cleared", "unresolved"):
    for r in out[kind]:
        lines.append(f"- `{r['benchmark']}` [{r['instrument']}]: {r['why']}")
open(os.path.join(d, "confirmation.md"), "w", encoding="utf-8").write("\n".join(lines) + "\n")
print("\n".join(lines[2:3]))
sys.exit(1 if out["regressions"] else 0)
EOF
