"""fleet.html: the cross-machine page, drawn from `pairbench history export` (format
pairbench-history-export/1): the same benchmark's trend on every machine, each claim's verdict per
machine kind, and the machines themselves.

The export is checked before anything is drawn, in the run file's style: a regular file of at most
1 GiB, UTF-8 JSON without NaN/Infinity, then every field the page reads, with its path:
`FILE: series[3].points[0].median: expected a finite number > 0, is the string "x"`. The fields
added later to the same format are optional, so older exports still read: `db`, each machine's
`baseline_run_id`, each series' `experiment` and each point's `values` (history.py draws this
run's page's trend figures from them), and `regressions` (the index page's table of regressions
tracked until fixed; None where the export predates them).

Which benchmarks get a figure: a fleet of machines times hundreds of benchmarks is too many to
draw, so the page draws those that decide something (every benchmark with a change point on some
machine, then those whose latest medians differ between machines by at least MIN_SPREAD, most
first) up to MAX_FIGURES, and lists the rest in a table with the same two numbers.
"""
import datetime
import json
import math
import os

from . import units
from .claims import HELD, INCONCLUSIVE, NOT_HELD, NOT_RUN, NOT_TESTABLE, RECORDED
from .errors import BadInput
from .history import parse_time
from .runfile import describe, element_path, member_path, read_bytes

FORMAT = "pairbench-history-export/1"
MAX_BYTES = 1 << 30  # the run file's limit; an export of 60 runs x 400 benchmarks x 10 machines is ~30 MB
MAX_FIGURES = 10
# Latest medians 10 % apart between machines: more than the run-to-run noise of a benchmark on one
# machine (median 4 % on the reference VM, docs/gate.md), so the figure shows machines, not noise.
MIN_SPREAD = 1.10
VERDICTS = (HELD, NOT_HELD, INCONCLUSIVE, NOT_RUN, NOT_TESTABLE, RECORDED)
BETTER = ("lower", "higher")


# ---- reading and checking -----------------------------------------------------------------------


def _refuse_constant(name):
    raise ValueError(f"{name} is not a JSON number; expected a finite number")


def _is_text(v):
    return isinstance(v, str)


def _is_name(v):
    return isinstance(v, str) and v != ""


def _is_count(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _is_positive(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


def _is_time(v):
    if not isinstance(v, str):
        return False
    try:
        parse_time(v)
    except ValueError:
        return False
    return True


NAME = (_is_name, "a non-empty string")
TEXT = (_is_text, "a string")
COUNT = (_is_count, "an integer >= 0")
POSITIVE = (_is_positive, "a finite number > 0")
TIME = (_is_time, "an ISO 8601 UTC time string")
BOOL = (lambda v: isinstance(v, bool), "true or false")
ARRAY = (lambda v: isinstance(v, list), "an array")
OBJECT = (lambda v: isinstance(v, dict), "an object")
NAME_OR_NULL = (lambda v: v is None or _is_name(v), "a non-empty string or null")
NONNEGATIVE_OR_NULL = (
    lambda v: v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0),
    "a finite number >= 0 or null",
)
TEXT_OR_NULL = (lambda v: v is None or _is_text(v), "a string or null")
TIME_OR_NULL = (lambda v: v is None or _is_time(v), "an ISO 8601 UTC time string or null")
POSITIVE_OR_NULL = (lambda v: v is None or _is_positive(v), "a finite number > 0 or null")
NUMBER_OR_NULL = (
    lambda v: v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)),
    "a finite number or null",
)
REGRESSION_STATES = ("open", "acknowledged", "fixed")
INSTRUMENTS = ("time", "instructions")


def one_of(values):
    return (lambda v: v in values, "one of " + ", ".join(json.dumps(v) for v in values))


class _Checker:
    def __init__(self, source):
        self.source = source

    def fail(self, path, problem):
        raise BadInput(f"{self.source}: {path or '(top level)'}: {problem}")

    def field(self, parent, path, key, expect, optional=False):
        at = member_path(path, key)
        if key not in parent:
            if optional:
                return None
            self.fail(at, "missing")
        test, expected = expect
        if not test(parent[key]):
            self.fail(at, f"expected {expected}, is {describe(parent[key])}")
        return parent[key]

    def objects(self, parent, path, key):
        """parent[key] as a list of (path, object)."""
        items = self.field(parent, path, key, ARRAY)
        at = member_path(path, key)
        out = []
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                self.fail(element_path(at, i), f"expected an object, is {describe(item)}")
            out.append((element_path(at, i), item))
        return out


def parse_export(data, source):
    """Checks export bytes; returns a Fleet."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise BadInput(f"{source}: not valid JSON: not UTF-8 text at byte {err.start}") from None
    if not text.strip():
        raise BadInput(f"{source}: not valid JSON: the file is empty")
    try:
        doc = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as err:
        why = "the text ends early (truncated?)" if err.pos >= len(text) else err.msg
        raise BadInput(
            f"{source}: not valid JSON at line {err.lineno}, column {err.colno} (byte {err.pos}): " f"{why}"
        ) from None
    except ValueError as err:
        raise BadInput(f"{source}: not valid JSON: {str(err).split(';')[0]}") from None
    except RecursionError:
        raise BadInput(f"{source}: not valid JSON: nested too deeply (a history export needs 6 levels)") from None
    c = _Checker(source)
    if not isinstance(doc, dict):
        c.fail("", f"expected an object (a pairbench history export), is {describe(doc)}")
    c.field(doc, "", "format", one_of((FORMAT,)))
    generated_at = c.field(doc, "", "generated_at", TIME)
    db = c.field(doc, "", "db", TEXT, optional=True) or ""

    machines = {}
    for at, m in c.objects(doc, "", "machines"):
        key = c.field(m, at, "machine_key", NAME)
        if key in machines:
            c.fail(member_path(at, "machine_key"), f"expected a key no other machine has, is {describe(key)}")
        last = c.field(m, at, "last_run", (lambda v: v is None or isinstance(v, dict), "an object or null"))
        last_run = None
        if last is not None:
            last_at = member_path(at, "last_run")
            last_run = {
                "run_id": c.field(last, last_at, "run_id", NAME),
                "started_at": parse_time(c.field(last, last_at, "started_at", TIME)),
                "git_sha": c.field(last, last_at, "git_sha", TEXT),
            }
        machines[key] = {
            "machine_key": key,
            "machine_kind": c.field(m, at, "machine_kind", TEXT),
            "runs": c.field(m, at, "runs", COUNT),
            "last_run": last_run,
            "baseline_run_id": c.field(m, at, "baseline_run_id", NAME_OR_NULL, optional=True),
        }

    def known_machine(obj, at):
        key = c.field(obj, at, "machine_key", NAME)
        if key not in machines:
            c.fail(member_path(at, "machine_key"), f"expected one of machines[].machine_key, is {describe(key)}")
        return key

    series = []
    for at, s in c.objects(doc, "", "series"):
        entry = {
            "machine_key": known_machine(s, at),
            "benchmark": c.field(s, at, "benchmark", NAME),
            "metric": c.field(s, at, "metric", TEXT),
            "unit": c.field(s, at, "unit", TEXT),
            "better": c.field(s, at, "better", one_of(BETTER)),
            "experiment": c.field(s, at, "experiment", NAME, optional=True) or "",
            "points": [],
        }
        for pat, p in c.objects(s, at, "points"):
            values = c.field(p, pat, "values", ARRAY, optional=True) or []
            if not all(map(_is_positive, values)):
                i = next(i for i, v in enumerate(values) if not _is_positive(v))
                c.fail(element_path(member_path(pat, "values"), i), f"expected {POSITIVE[1]}, is {describe(values[i])}")
            resolution = c.field(p, pat, "resolution", NONNEGATIVE_OR_NULL, optional=True)
            entry["points"].append(
                {
                    "resolution": None if resolution is None else float(resolution),
                    "run_id": c.field(p, pat, "run_id", NAME),
                    "started_at": parse_time(c.field(p, pat, "started_at", TIME)),
                    "git_sha": c.field(p, pat, "git_sha", TEXT),
                    "median": float(c.field(p, pat, "median", POSITIVE)),
                    "samples": c.field(p, pat, "samples", COUNT),
                    "values": [float(v) for v in values],
                }
            )
        entry["points"].sort(key=lambda p: p["started_at"])
        series.append(entry)

    claims = []
    for at, r in c.objects(doc, "", "claims"):
        entry = {
            "machine_key": known_machine(r, at),
            "machine_kind": c.field(r, at, "machine_kind", TEXT),
            "run_id": c.field(r, at, "run_id", NAME),
            "git_sha": c.field(r, at, "git_sha", TEXT),
            "claims": [],
        }
        for cat, v in c.objects(r, at, "claims"):
            experiments = c.field(v, cat, "experiments", ARRAY, optional=True) or []
            for i, name in enumerate(experiments):
                if not isinstance(name, str):
                    c.fail(element_path(member_path(cat, "experiments"), i), f"expected a string, is {describe(name)}")
            entry["claims"].append(
                {
                    "id": c.field(v, cat, "id", NAME),
                    "claim": c.field(v, cat, "claim", TEXT),
                    "verdict": c.field(v, cat, "verdict", one_of(VERDICTS)),
                    "detail": c.field(v, cat, "detail", TEXT, optional=True) or "",
                    "analogue": bool(c.field(v, cat, "analogue", BOOL, optional=True)),
                    "experiments": experiments,
                }
            )
        claims.append(entry)

    change_points = []
    for at, p in c.objects(doc, "", "change_points"):
        change_points.append(
            {
                "machine_key": known_machine(p, at),
                "benchmark": c.field(p, at, "benchmark", NAME),
                "run_id": c.field(p, at, "run_id", NAME),
                "before": float(c.field(p, at, "before", POSITIVE)),
                "after": float(c.field(p, at, "after", POSITIVE)),
            }
        )
    regressions = None  # exports from before regressions were tracked have none
    if "regressions" in doc:
        regressions = [_regression(c, at, g) for at, g in c.objects(doc, "", "regressions")]
    return Fleet(source, parse_time(generated_at), machines, series, claims, change_points, db, regressions)


def _regression(c, at, g):
    """One regression tracked until fixed (`pairbench regressions`), checked; times parsed."""

    def time_or_none(key):
        v = c.field(g, at, key, TIME_OR_NULL)
        return None if v is None else parse_time(v)

    return {
        "id": c.field(g, at, "id", COUNT),
        "machine_key": c.field(g, at, "machine_key", NAME),
        "benchmark": c.field(g, at, "benchmark", NAME),
        "instrument": c.field(g, at, "instrument", one_of(INSTRUMENTS)),
        "metric": c.field(g, at, "metric", TEXT),
        "unit": c.field(g, at, "unit", TEXT),
        "better": c.field(g, at, "better", one_of(BETTER)),
        "state": c.field(g, at, "state", one_of(REGRESSION_STATES)),
        "last_good_sha": c.field(g, at, "last_good_sha", TEXT),
        "first_bad_sha": c.field(g, at, "first_bad_sha", TEXT),
        "culprit_sha": c.field(g, at, "culprit_sha", NAME_OR_NULL),
        "change": c.field(g, at, "change", NUMBER_OR_NULL),
        "change_low": c.field(g, at, "change_low", NUMBER_OR_NULL),
        "change_high": c.field(g, at, "change_high", NUMBER_OR_NULL),
        "threshold": c.field(g, at, "threshold", POSITIVE),
        "level_before": c.field(g, at, "level_before", POSITIVE_OR_NULL),
        "level_after": c.field(g, at, "level_after", POSITIVE_OR_NULL),
        "first_seen_at": parse_time(c.field(g, at, "first_seen_at", TIME)),
        "last_seen_at": parse_time(c.field(g, at, "last_seen_at", TIME)),
        "times_seen": c.field(g, at, "times_seen", COUNT),
        "acknowledged_at": time_or_none("acknowledged_at"),
        "ack_reason": c.field(g, at, "ack_reason", TEXT_OR_NULL),
        "fixed_at": time_or_none("fixed_at"),
        "fixed_run_id": c.field(g, at, "fixed_run_id", NAME_OR_NULL),
        "fixed_reason": c.field(g, at, "fixed_reason", TEXT_OR_NULL),
    }


def load_export(path):
    return parse_export(read_bytes(path, MAX_BYTES, "a history export"), path)


# ---- what the page shows ------------------------------------------------------------------------


class Fleet:
    def __init__(self, path, generated_at, machines, series, claims, change_points, db="", regressions=None):
        self.path, self.generated_at, self.db = path, generated_at, db
        self.machines, self.series, self.claims, self.change_points = machines, series, claims, change_points
        self.regressions = regressions  # None: an export from before regressions were tracked

    def machine_order(self):
        """Machine keys by kind, then key: the column and colour order everywhere on the page."""
        return sorted(self.machines, key=lambda k: (self.machines[k]["machine_kind"], k))

    def kinds(self):
        return list(dict.fromkeys(self.machines[k]["machine_kind"] for k in self.machine_order()))

    def run_time(self, machine_key, run_id):
        for s in self.series:
            if s["machine_key"] == machine_key:
                for p in s["points"]:
                    if p["run_id"] == run_id:
                        return p["started_at"]
        return None


class BenchmarkGroup:
    """One benchmark (and metric, unit) across machines: the unit of a figure."""

    def __init__(self, benchmark, metric, unit, better):
        self.benchmark, self.metric, self.unit, self.better = benchmark, metric, unit, better
        self.by_machine = {}  # machine_key -> points in time order
        self.change_points = []  # (machine_key, run_id, before, after)

    def latest(self):
        return {m: pts[-1]["median"] for m, pts in self.by_machine.items() if pts}

    def spread(self):
        """Largest latest median over the smallest, across machines (1.0 with fewer than two)."""
        values = list(self.latest().values())
        return max(values) / min(values) if len(values) > 1 else 1.0

    def largest_change(self):
        return max((abs(math.log(after / before)) for _, _, before, after in self.change_points), default=0.0)


def benchmark_groups(fleet):
    groups = {}
    for s in fleet.series:
        key = (s["benchmark"], s["metric"], s["unit"])
        g = groups.get(key)
        if g is None:
            g = groups[key] = BenchmarkGroup(s["benchmark"], s["metric"], s["unit"], s["better"])
        g.by_machine.setdefault(s["machine_key"], []).extend(s["points"])
    for g in groups.values():
        for pts in g.by_machine.values():
            pts.sort(key=lambda p: p["started_at"])
    for cp in fleet.change_points:
        for g in groups.values():
            if g.benchmark == cp["benchmark"] and cp["machine_key"] in g.by_machine:
                g.change_points.append((cp["machine_key"], cp["run_id"], cp["before"], cp["after"]))
    return list(groups.values())


def select(groups, limit=MAX_FIGURES, min_spread=MIN_SPREAD):
    """(drawn, listed): benchmarks with a change point first (largest change first), then those whose
    latest medians differ between machines by min_spread or more (most first); up to `limit` are
    drawn, the rest listed in name order."""
    ranked = sorted(groups, key=lambda g: (not g.change_points, -g.largest_change(), -g.spread(), g.benchmark))
    deciding = [g for g in ranked if g.change_points or g.spread() >= min_spread][:limit]
    return deciding, sorted((g for g in ranked if g not in deciding), key=lambda g: g.benchmark)


def normalised(points):
    """(times, median / the first run's median): each machine's trend on one shared scale, whatever
    its speed; a +20 % step reads as 1.0 -> 1.2 on every machine."""
    if not points:
        return [], []
    first = points[0]["median"]
    return [p["started_at"] for p in points], [p["median"] / first for p in points]


def claim_matrix(fleet):
    """(claim rows, kinds): rows in the order the runs list their claims; each row
    {"id", "claim", "cells": {kind: [(machine_key, verdict entry, run entry)]}, "differs": bool}."""
    rows = {}
    order = fleet.machine_order()
    latest = sorted(fleet.claims, key=lambda r: order.index(r["machine_key"]))
    for run in latest:
        for v in run["claims"]:
            row = rows.setdefault(v["id"], {"id": v["id"], "claim": v["claim"], "cells": {}})
            row["claim"] = row["claim"] or v["claim"]
            row["cells"].setdefault(run["machine_kind"], []).append((run["machine_key"], v, run))
    for row in rows.values():
        verdicts = {v["verdict"] for cell in row["cells"].values() for _, v, _ in cell}
        row["differs"] = len(verdicts) > 1
    kinds = list(dict.fromkeys([r["machine_kind"] for r in latest] + fleet.kinds()))
    return list(rows.values()), kinds


# ---- figures ------------------------------------------------------------------------------------


def trend_figure(group, fleet, colours, writer):
    """Left: each machine's median per run in the benchmark's unit (log scale when machines differ
    more than 4x); right: the same relative to each machine's first run, with change points."""
    from .figures import PALETTE, label, mdates, plain_log_axis, plt, wrap  # matplotlib only once inputs are good

    fig, (ax_abs, ax_rel) = plt.subplots(1, 2, figsize=(11, 3.6), layout="constrained")
    values = [p["median"] for pts in group.by_machine.values() for p in pts]
    divisor, shown = units.scale_for(group.unit, values)
    for m in fleet.machine_order():
        pts = group.by_machine.get(m)
        if not pts:
            continue
        colour = colours.get(m, PALETTE[0])
        kind = fleet.machines[m]["machine_kind"]
        times = [p["started_at"] for p in pts]
        ax_abs.plot(
            times,
            [p["median"] / divisor for p in pts],
            color=colour,
            marker="o",
            ms=3,
            lw=1.3,
            label=label(f"{m} ({kind})" if kind else m),
        )
        t, rel = normalised(pts)
        ax_rel.plot(t, rel, color=colour, marker="o", ms=3, lw=1.3)
        for cm, rid, before, after in group.change_points:
            when = fleet.run_time(cm, rid) if cm == m else None
            if when is not None:
                ax_rel.axvline(when, color=colour, ls="--", lw=1.0)
                ax_rel.annotate(
                    f"{(after / before - 1) * 100:+.0f} %",
                    xy=(when, 1),
                    xycoords=("data", "axes fraction"),
                    xytext=(3, -10),
                    textcoords="offset points",
                    color=colour,
                    fontsize=7.5,
                )
    if values and max(values) / min(values) > 4:
        ax_abs.set_yscale("log")
        plain_log_axis(ax_abs.yaxis, min(values) / divisor, max(values) / divisor)
    # At least +-8 % around 1: ordinary run-to-run noise must not look like a step.
    rel = [p["median"] / pts[0]["median"] for pts in group.by_machine.values() if pts for p in pts]
    if rel:
        lo, hi = min(min(rel), 0.92), max(max(rel), 1.08)
        pad = (hi - lo) * 0.06
        ax_rel.set_ylim(lo - pad, hi + pad)
    metric = units.metric_label(group.metric, group.unit)
    better = f"; {group.better} is better" if group.better in BETTER else ""
    ax_abs.set_ylabel(f"{metric} ({shown}){better}")
    ax_abs.set_title("median per run")
    ax_rel.set_ylabel("relative to the machine's first run")
    ax_rel.set_title("trend per machine (dashed: change point)")
    ax_rel.axhline(1.0, color="#808080", lw=0.8)
    for ax in (ax_abs, ax_rel):
        loc = mdates.AutoDateLocator(maxticks=6)
        ax.xaxis.set_major_locator(loc)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(loc))
    ax_abs.legend(loc="best", frameon=False)
    fig.suptitle(wrap(group.benchmark, 110), fontweight="bold")
    return writer.save(fig, "fleet-" + group.benchmark)


# ---- the page -----------------------------------------------------------------------------------

FLEET_CSS = """
td.cell { white-space: nowrap; }
tr.differs td:first-child { border-left: 4px solid #c9a400; }
.key { color: var(--muted); font-size: .8rem; margin-left: .2rem; }
"""


def _fmt_time(t):
    return t.astimezone(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M") if t else "–"


def render(outdir, fleet, drawn, listed, figures, index_href="index.html"):
    from . import page as pg

    e = pg.e
    p = pg.Page(outdir)
    order = fleet.machine_order()
    p.add(
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>pairbench across machines</title><style>{pg.CSS}{FLEET_CSS}</style></head><body>"
    )
    p.add("<header><h1>pairbench across machines</h1>")
    p.add(
        f'<p class="meta">History export <code>{e(os.path.basename(fleet.path))}</code> · generated '
        f"{e(_fmt_time(fleet.generated_at))} UTC · {len(fleet.machines)} machine(s) of {len(fleet.kinds())} kind(s) · "
        f'<a href="{e(index_href)}">this run\'s report</a></p></header>'
    )
    p.add(
        '<nav><b>Contents</b><ul><li><a href="#machines">Machines</a></li><li><a href="#fleet-claims">Claims per '
        'machine kind</a></li><li><a href="#trends">Trends per machine</a></li>'
        '<li><a href="#change-points">Change points</a></li></ul></nav>'
    )

    p.add(
        '<section id="machines"><h2>Machines</h2><div class="table-wrap"><table><thead><tr><th>machine key</th>'
        "<th>kind</th><th>runs</th><th>last run</th><th>commit</th></tr></thead><tbody>"
    )
    for m in order:
        info = fleet.machines[m]
        last = info["last_run"]
        when = f'{e(_fmt_time(last["started_at"]))} <span class="why">run {e(last["run_id"])}</span>' if last else "–"
        sha = f'<code>{e(last["git_sha"][:12])}</code>' if last and last["git_sha"] else "–"
        p.add(
            f'<tr id="{pg.anchor("machine", m)}"><td class="mono">{e(m)}</td><td>{e(info["machine_kind"] or "?")}</td>'
            f'<td class="num">{info["runs"]}</td><td>{when}</td><td>{sha}</td></tr>'
        )
    p.add("</tbody></table></div></section>")

    rows, kinds = claim_matrix(fleet)
    p.add('<section id="fleet-claims"><h2>Claims: the verdict on each kind of machine</h2>')
    if not rows:
        p.add("<p>No run in the export recorded claim verdicts (run files from before verdicts were stored).</p>")
    else:
        differs = sum(1 for r in rows if r["differs"])
        p.add(
            f"<p>Each machine's latest run with verdicts. {differs} of {len(rows)} claim(s) get different "
            "verdicts on different machines (marked at the left edge). Hover a verdict for why; "
            "<b>CPU analogue</b>: a CPU experiment standing in for a GPU claim.</p>"
        )
        p.add(
            '<div class="table-wrap"><table class="fleet-claims"><thead><tr><th>claim</th>'
            + "".join(f"<th>{e(k or '?')}</th>" for k in kinds)
            + "</tr></thead><tbody>"
        )
        for r in rows:
            cells = []
            for k in kinds:
                entries = r["cells"].get(k, [])
                if not entries:
                    cells.append(
                        '<td class="cell"><span class="why" title="no run of this kind recorded '
                        'this claim">–</span></td>'
                    )
                    continue
                parts = []
                for machine, v, run in entries:
                    title = f"{machine}, run {run['run_id']} (git {run['git_sha'][:12]}): {v['detail'] or v['verdict']}"
                    analogue = " <span class='why'>(CPU analogue)</span>" if v["analogue"] else ""
                    key = f'<span class="key mono">{e(machine)}</span>' if len(entries) > 1 else ""
                    parts.append(
                        f'<span class="verdict {pg.VERDICT_CLASS.get(v["verdict"], "v-not-run-here")}" '
                        f'title="{e(title)}">{e(v["verdict"])}</span>{analogue}{key}'
                    )
                cells.append(f'<td class="cell">{"<br>".join(parts)}</td>')
            p.add(
                f'<tr id="{pg.anchor("fleet-claim", r["id"])}" class="{"differs" if r["differs"] else ""}">'
                f'<td><b>{e(r["id"])}</b> {e(r["claim"])}</td>{"".join(cells)}</tr>'
            )
        p.add("</tbody></table></div>")
    p.add("</section>")

    p.add('<section id="trends"><h2>Trends per machine</h2>')
    total = len(drawn) + len(listed)
    p.add(
        f"<p>{total} benchmark(s) in the export. Drawn: {len(drawn)}, those that decide most (at most "
        f"{MAX_FIGURES}): every benchmark with a change point on some machine, then those whose latest medians "
        f"differ between machines by {(MIN_SPREAD - 1) * 100:.0f} % or more, most first. Left: each machine's "
        "median per run in the benchmark's unit; right: relative to that machine's first run, so machines of "
        "different speed share one scale.</p>"
    )
    if not drawn:
        p.add("<p>No benchmark has a change point or differs that much between machines.</p>")
    for g, files in zip(drawn, figures):
        latest = g.latest()
        text = "; ".join(f"{m}: {units.format_value(latest[m], g.unit)}" for m in order if m in latest)
        p.add(f'<div id="{pg.anchor("bench", g.benchmark)}"></div>')
        p.figure(
            files,
            f"trend of {g.benchmark} per machine",
            f"<code>{e(g.benchmark)}</code>: latest {e(text)}; spread {g.spread():.2f}×"
            + (f", {len(g.change_points)} change point(s)" if g.change_points else "")
            + ".",
        )
    if listed:
        p.add(
            f'<h3>The other {len(listed)} benchmark(s)</h3><div class="table-wrap"><table><thead><tr>'
            "<th>benchmark</th><th>machines</th><th>spread of latest medians</th><th>change points</th></tr>"
            "</thead><tbody>"
        )
        for g in listed:
            p.add(
                f'<tr><td class="mono">{e(g.benchmark)}</td><td class="num">{len(g.by_machine)}</td>'
                f'<td class="num">{g.spread():.2f}×</td><td class="num">{len(g.change_points)}</td></tr>'
            )
        p.add("</tbody></table></div>")
    p.add("</section>")

    p.add('<section id="change-points"><h2>Change points</h2>')
    if fleet.change_points:
        p.add(
            '<div class="table-wrap"><table><thead><tr><th>machine</th><th>benchmark</th><th>run (time)</th>'
            "<th>before</th><th>after</th><th>change</th></tr></thead><tbody>"
        )
        units_of = {(s["benchmark"], s["machine_key"]): s["unit"] for s in fleet.series}
        for cp in sorted(fleet.change_points, key=lambda c: (c["machine_key"], c["benchmark"], c["run_id"])):
            unit = units_of.get((cp["benchmark"], cp["machine_key"]), "")
            when = fleet.run_time(cp["machine_key"], cp["run_id"])
            p.add(
                f'<tr><td class="mono">{e(cp["machine_key"])}</td><td class="mono">{e(cp["benchmark"])}</td>'
                f'<td>{e(cp["run_id"])} <span class="why">{e(_fmt_time(when))}</span></td>'
                f'<td class="num">{e(units.format_value(cp["before"], unit))}</td>'
                f'<td class="num">{e(units.format_value(cp["after"], unit))}</td>'
                f'<td class="num">{(cp["after"] / cp["before"] - 1) * 100:+.1f} %</td></tr>'
            )
        p.add("</tbody></table></div>")
    else:
        p.add("<p>No change points in the export.</p>")
    p.add("</section>")
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    p.add(
        f"<footer>Written by <code>plots/report.py --fleet</code> at {e(now)} from "
        f"<code>{e(os.path.basename(fleet.path))}</code>.</footer></body></html>\n"
    )
    return "".join(p.parts)


def write(outdir, fleet, writer):
    """Draws the figures and writes fleet.html atomically; returns its summary for index.html."""
    from .figures import PALETTE

    colours = {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(fleet.machine_order())}
    drawn, listed = select(benchmark_groups(fleet))
    figures = [trend_figure(g, fleet, colours, writer) for g in drawn]
    text = render(outdir, fleet, drawn, listed, figures)
    tmp = os.path.join(outdir, ".fleet.html.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, os.path.join(outdir, "fleet.html"))
    return {"href": "fleet.html", "machines": len(fleet.machines), "kinds": len(fleet.kinds())}
