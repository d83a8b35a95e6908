"""The nightly's same-runner confirmation policy (ci/confirm.sh runs it; docs/gate.md,
"Confirmation on the same runner"): which of a night's suspects one `pairbench ab` of the
baseline's build against tonight's measures again, and what its verdicts make of each: confirmed
(a regression, or broken), cleared (unchanged or improved), unresolved (anything else, or not
measured). Only a confirmed regression fails the night. It writes confirmed.json (what
ci/bisect.sh --confirmed and `pairbench report --confirmation` read) and confirmation.md.

    python3 -m pairbench_report.confirm select GATE_JSON CAP
        -> one line: COUNT BASELINE_BUILD CURRENT_BUILD REGEX ("-" for an empty field)
    python3 -m pairbench_report.confirm none GATE_JSON CONFIRMED_JSON
        -> confirmed.json with nothing in it (no suspect)
    python3 -m pairbench_report.confirm classify ARTIFACTS_DIR COUNT SECONDS
        -> ARTIFACTS_DIR/confirmed.json and confirmation.md from gate.json and confirm.json; exit 1
           when a regression is confirmed, else 0
    python3 -m pairbench_report.confirm bisect-args ARTIFACTS_DIR
        -> "GOOD BAD REGEX" for ci/bisect.sh --confirmed (the baseline's and the night's git sha,
           the confirmed regressions), or "none" when nothing was confirmed

Exit 2 with one line on bad input (a gate JSON that is not one)."""
import glob
import json
import os
import re
import sys

from .errors import BadInput
from .gate import read_rows

CONFIRMED = ("regression", "broken")
CLEARED = ("unchanged", "improvement")


def select_suspects(gate, cap):
    """The suspects' names, at most `cap`: regressions and undecided rows first, then the other
    suspects by their one-sided p (the strongest evidence of a slowdown first); sorted by name."""
    rows = [r for r in gate["rows"] if r["suspect"]]
    rows.sort(key=lambda r: (r["verdict"] not in ("regression", "undecided"),
                             r["p_value"] if r["p_value"] is not None else 1.0))
    names = []
    for r in rows:
        if r["name"] not in names and len(names) < cap:
            names.append(r["name"])
    return sorted(names)


def anchored(names):
    """An ECMAScript expression matching exactly these benchmark names (ab --benchmarks)."""
    return "^(?:" + "|".join(re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", n) for n in names) + ")$"


def _pct(x):
    return "?" if x is None else f"{100 * x:+.1f}%"


def _row(r, why):
    return {"benchmark": r["name"], "instrument": r["instrument"], "experiment": r["experiment"],
            "verdict": r["verdict"], "change": r["slowdown"], "low": r["slowdown_low"], "high": r["slowdown_high"],
            "p_adjusted": r["p_adjusted"], "why": why}


def classify(gate, ab, seconds):
    """confirmed.json's content: each suspect of the night (`gate`) as the ab (`ab`) left it."""
    base, cur = gate["baseline_build"], gate["current_build"]
    suspects = {(r["name"], r["instrument"]): r for r in gate["rows"] if r["suspect"]}
    names = {n for n, _ in suspects}
    out = {"regressions": [], "cleared": [], "unresolved": [], "baseline_git_sha": base.removesuffix("-dirty"),
           "current_git_sha": cur.removesuffix("-dirty"), "baseline_build": base, "current_build": cur,
           "seconds": float(seconds)}
    seen = set()
    for r in ab["rows"]:
        if r["name"] not in names:
            continue
        seen.add(r["name"])
        night = suspects.get((r["name"], r["instrument"]))
        was = (f"night: {night['verdict']} {_pct(night['slowdown'])}" if night
               else "night: not a suspect on this instrument")
        change = f"{_pct(r['slowdown'])} [{_pct(r['slowdown_low'])}, {_pct(r['slowdown_high'])}]"
        if r["verdict"] in CONFIRMED:
            out["regressions"].append(_row(r, f"confirmed: {r['verdict']} {change} in one run of both builds ({was})"))
        elif r["verdict"] in CLEARED:
            out["cleared"].append(_row(r, f"cleared: {r['verdict']} {change} in one run of both builds ({was})"))
        else:
            out["unresolved"].append(_row(r, f"unresolved: {r['verdict']} {change} within the budget ({was}); {r['note']}"))
    for (name, _), r in suspects.items():
        if name not in seen:
            out["unresolved"].append(_row(r, f"not measured by the ab ({r['verdict']} in the night)"))
    return out


def summary_lines(out, count):
    """confirmation.md: the job summary's paragraph."""
    lines = ["### Same-runner confirmation", "",
             f"{count} suspect(s) of the night measured again in one `pairbench ab` of the baseline's build "
             f"(`{out['baseline_build']}`) against this build (`{out['current_build']}`), sampling until decided, "
             f"{out['seconds']:g} s: **{len(out['regressions'])} confirmed**, {len(out['cleared'])} cleared, "
             f"{len(out['unresolved'])} unresolved. Only a confirmed regression fails the night.", ""]
    for kind in ("regressions", "cleared", "unresolved"):
        lines.extend(f"- `{r['benchmark']}` [{r['instrument']}]: {r['why']}" for r in out[kind])
    return lines


def _load(path):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as err:
        raise BadInput(f"{path}: {err}") from None


def bisect_args(d):
    """ci/bisect.sh --confirmed's range and expression from a night's artifacts, or None."""
    def sha_of(run):
        return ((run.get("pairbench") or {}).get("environment") or {}).get("git_sha", "")
    confirmed = _load(os.path.join(d, "confirmed.json"))
    names = sorted({r["benchmark"] for r in confirmed.get("regressions", []) if isinstance(r, dict) and r.get("benchmark")})
    if not names:
        return None
    runs = sorted(glob.glob(os.path.join(d, "run-*.json")))
    bad = confirmed.get("current_git_sha") or (sha_of(_load(runs[-1])) if runs else "")
    good = confirmed.get("baseline_git_sha", "")
    if not good:
        try:
            label = _load(os.path.join(d, "gate.json")).get("baseline", "")
            good = sha_of(_load(label)) if os.path.isfile(label) else ""
        except BadInput:
            good = ""
    if not good or not bad:
        raise BadInput(f"{d}: no git sha for the {'baseline' if not good else 'night'} (baseline_git_sha / "
                       "current_git_sha in confirmed.json, or pairbench.environment.git_sha in the run files)")
    return good, bad, anchored(names)


def _write_json(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=2)
    os.replace(tmp, path)


def main(argv):
    if len(argv) < 1 or argv[0] not in ("select", "none", "classify", "bisect-args"):
        print(__doc__, file=sys.stderr)
        return 2
    try:
        if argv[0] == "select" and len(argv) == 3:
            gate = read_rows(argv[1])
            names = select_suspects(gate, int(argv[2]))
            print(len(names), gate["baseline_build"] or "-", gate["current_build"] or "-",
                  anchored(names) if names else "-")
            return 0
        if argv[0] == "none" and len(argv) == 3:
            gate = read_rows(argv[1])
            _write_json(argv[2], {"regressions": [], "cleared": [], "unresolved": [],
                                  "baseline_git_sha": gate["baseline_build"].removesuffix("-dirty"),
                                  "current_git_sha": gate["current_build"].removesuffix("-dirty")})
            return 0
        if argv[0] == "classify" and len(argv) == 4:
            d = argv[1]
            out = classify(read_rows(os.path.join(d, "gate.json")), read_rows(os.path.join(d, "confirm.json")), argv[3])
            _write_json(os.path.join(d, "confirmed.json"), out)
            lines = summary_lines(out, int(argv[2]))
            with open(os.path.join(d, "confirmation.md"), "w", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")
            print(lines[2])
            return 1 if out["regressions"] else 0
        if argv[0] == "bisect-args" and len(argv) == 2:
            args = bisect_args(argv[1])
            print(" ".join(args) if args else "none")
            return 0
    except BadInput as err:
        print(f"pairbench_report.confirm: {err}", file=sys.stderr)
        return 2
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
