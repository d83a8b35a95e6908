"""The steps of ci/nightly.sh that read JSON, as one tested Python file rather than code embedded in
the shell script. The gate's JSON is read through the report package's one reader
(plots/pairbench_report/gate.py).

    nightly_steps.py db-failure RUN_FILE      the failed history write, password hidden ("" if none)
    nightly_steps.py gate-status GATE_JSON    the gate's own exit status
    nightly_steps.py headline GATE_JSON       the gate's first line (its counts of verdicts)
    nightly_steps.py has-broken GATE_JSON     exit 0 when a benchmark is broken, else 1
    nightly_steps.py keep-build RUN_FILE BIN_DIR BUILDS_DIR KEEP GATE_JSON
        keep this build's bench binaries under BUILDS_DIR/<git sha>[-dirty] for the nights whose
        baseline it becomes, the newest KEEP (and the baseline's own build, never replaced)

Exit 2 with one line on bad input."""
import glob
import json
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "plots"))
from pairbench_report.errors import BadInput  # noqa: E402
from pairbench_report.gate import read_rows  # noqa: E402


def _run_file(path):
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError) as err:
        raise BadInput(f"{path}: not a run file: {err}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("pairbench", {}), dict):
        raise BadInput(f"{path}: not a run file: no pairbench section")
    return doc.get("pairbench", {})


def db_failure(run):
    write = _run_file(run).get("history_write") or {}
    if write.get("status") != "failed":
        return ""
    # The password of a URL stays out of the log.
    return re.sub(r"(://[^:/@]*):[^@/]*@", r"\1:***@", str(write.get("db", "?"))) + ": " + str(write.get("error", "?"))


def keep_build(run, bin_dir, builds, keep, gate):
    env = _run_file(run).get("environment", {})
    if not env.get("git_sha"):
        return
    key = env["git_sha"] + ("-dirty" if env.get("git_dirty") else "")
    dest = os.path.join(builds, key)
    baseline = read_rows(gate)["baseline_build"] if os.path.isfile(gate) else ""
    # The baseline's own build stays as it is: a night of the same commit with uncommitted changes
    # (or planted work) must not become what later nights are confirmed against.
    if not (key == baseline and os.path.isdir(dest)):
        tmp = dest + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(os.path.join(tmp, "bin"))
        for f in glob.glob(os.path.join(bin_dir, "bench_*")) + [os.path.join(bin_dir, "pairbench")]:
            shutil.copy2(f, os.path.join(tmp, "bin"))
        shutil.rmtree(dest, ignore_errors=True)
        os.replace(tmp, dest)
    kept = sorted(
        (d for d in glob.glob(os.path.join(builds, "*")) if os.path.isdir(d) and not d.endswith(".tmp")),
        key=os.path.getmtime,
        reverse=True,
    )
    for d in kept[keep:]:
        if os.path.basename(d) not in (baseline, key):
            shutil.rmtree(d, ignore_errors=True)


def main(argv):
    try:
        if argv[:1] == ["db-failure"] and len(argv) == 2:
            print(db_failure(argv[1]))
            return 0
        if argv[:1] == ["gate-status"] and len(argv) == 2:
            print(read_rows(argv[1])["exit_status"])
            return 0
        if argv[:1] == ["headline"] and len(argv) == 2:
            print(read_rows(argv[1])["headline"])
            return 0
        if argv[:1] == ["has-broken"] and len(argv) == 2:
            return 0 if any(r["verdict"] == "broken" for r in read_rows(argv[1])["rows"]) else 1
        if argv[:1] == ["keep-build"] and len(argv) == 6:
            keep_build(argv[1], argv[2], argv[3], int(argv[4]), argv[5])
            return 0
    except BadInput as err:
        print(f"ci/nightly_steps.py: {err}", file=sys.stderr)
        return 2
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
