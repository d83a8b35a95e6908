"""ci/layout-selftest.sh's line for one ab of a layout-only build: its time rows by verdict, each
decided change on stderr; exit 1 when any was decided (a layout-only change must decide nothing).
The gate's JSON is read through the report package's one reader (plots/pairbench_report/gate.py).

    layout_selftest_count.py GATE_JSON PERTURBATION LAYOUT SECONDS"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "plots"))
from pairbench_report.errors import BadInput  # noqa: E402
from pairbench_report.gate import read_rows  # noqa: E402


def pct(v):
    return "?" if v is None else "%+.1f" % (100 * v)


def main(path, name, layout, secs):
    try:
        rows = [r for r in read_rows(path)["rows"] if r["instrument"] == "time"]
    except BadInput as err:
        print(f"ci/layout_selftest_count.py: {err}", file=sys.stderr)
        return 2
    count = {}
    for r in rows:
        count[r["verdict"]] = count.get(r["verdict"], 0) + 1
    decided = [r for r in rows if r["verdict"] in ("regression", "improvement")]
    for r in decided:
        print(
            "  %s %s %s %% [%s, %s] (slower +)"
            % (r["verdict"], r["name"], pct(r["slowdown"]), pct(r["slowdown_low"]), pct(r["slowdown_high"])),
            file=sys.stderr,
        )
    print(
        "%s --layout %s: %d decided (%d regressions, %d improvements), %d unchanged, %d undecided of %d; %s s"
        % (
            name,
            layout,
            len(decided),
            count.get("regression", 0),
            count.get("improvement", 0),
            count.get("unchanged", 0),
            count.get("undecided", 0),
            len(rows),
            secs,
        )
    )
    return 1 if decided else 0


if __name__ == "__main__":
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
