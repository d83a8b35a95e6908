"""index.html: one self-contained page (inline CSS, no script, relative image paths). Every
string that comes from a run file, the claims catalogue or the history export goes through
`e()` (html.escape with quotes)."""
import datetime
import html
import os
import re
import struct

from . import units
from .claims import HELD, INCONCLUSIVE, NOT_HELD, NOT_JUDGED, NOT_RUN, NOT_TESTABLE, RECORDED, point_label

CSS = """
:root { --fg:#1b1b1b; --muted:#5a5a5a; --line:#d8d8d8; --bg:#ffffff; --soft:#f5f6f8; }
* { box-sizing: border-box; }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
       color: var(--fg); background: var(--bg); margin: 0 auto; max-width: 1200px; padding: 0 1.2rem 3rem; }
h1 { font-size: 1.6rem; margin: 1.2rem 0 .2rem; }
h2 { font-size: 1.3rem; margin-top: 2.2rem; border-bottom: 2px solid var(--line); padding-bottom: .2rem; }
h3 { font-size: 1.1rem; margin: 1.8rem 0 .3rem; }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", monospace; font-size: .88em; overflow-wrap: anywhere; }
td.mono { overflow-wrap: normal; }
td.arm { white-space: nowrap; }
.meta { color: var(--muted); margin: 0 0 .8rem; }
.banner { border: 1px solid #c9a400; background: #fff8d6; padding: .6rem .9rem; border-radius: 6px; margin: .8rem 0; }
.banner.fixture { border-color: #b04040; background: #fdecec; }
.banner ul { margin: .3rem 0 0 1.1rem; padding: 0; }
nav ul { columns: 2; margin: .4rem 0; padding-left: 1.2rem; }
.table-wrap { overflow-x: auto; margin: .5rem 0 1rem; }
table { border-collapse: collapse; width: 100%; font-size: .9rem; }
th, td { border-bottom: 1px solid var(--line); padding: .3rem .5rem; text-align: left; vertical-align: top; }
th { background: var(--soft); position: sticky; top: 0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
tr.group td { border-top: 2px solid var(--line); }
.verdict { display: inline-block; padding: .05rem .45rem; border-radius: 4px; font-weight: 600; white-space: nowrap; }
.v-held { background: #dcf3e1; color: #11612a; }
.v-did-not-hold { background: #fbdede; color: #8f1b1b; }
.v-inconclusive { background: #fff0c2; color: #6b5200; }
.v-not-run-here { background: #ececec; color: #4a4a4a; }
.v-recorded { background: #ddeaf9; color: #1d4f8a; }
.r-open { background: #fbdede; color: #8f1b1b; }
.r-acknowledged { background: #fff0c2; color: #6b5200; }
.r-fixed { background: #dcf3e1; color: #11612a; }
.why { color: var(--muted); font-size: .85rem; }
ul.rows { margin: 0; padding-left: 1rem; }
ul.rows li { margin: .1rem 0; }
figure { margin: 1rem 0 1.4rem; }
figure img { max-width: 100%; height: auto; border: 1px solid var(--line); border-radius: 4px; background: #fff; }
figcaption { color: var(--muted); font-size: .88rem; margin-top: .3rem; }
.ok { color: #11612a; font-weight: 600; }
.bad { color: #8f1b1b; font-weight: 600; }
details > summary { cursor: pointer; color: var(--muted); }
table.claims th:nth-child(1) { width: 30%; } table.claims th:nth-child(2) { width: 22%; }
table.claims th:nth-child(3) { width: 32%; } table.claims th:nth-child(4) { width: 16%; }
footer { margin-top: 3rem; color: var(--muted); font-size: .85rem; border-top: 1px solid var(--line); padding-top: .6rem; }
"""

VERDICT_CLASS = {
    HELD: "v-held",
    NOT_HELD: "v-did-not-hold",
    INCONCLUSIVE: "v-inconclusive",
    NOT_RUN: "v-not-run-here",
    NOT_TESTABLE: "v-not-run-here",
    RECORDED: "v-recorded",
    NOT_JUDGED: "v-inconclusive",
}


def e(value):
    return html.escape("" if value is None else str(value), quote=True)


def anchor(prefix, name):
    return prefix + "-" + (re.sub(r"[^A-Za-z0-9_-]+", "-", str(name)).strip("-") or "x")


def png_size(path):
    try:
        with open(path, "rb") as f:
            head = f.read(24)
        if head[:8] == b"\x89PNG\r\n\x1a\n":
            return struct.unpack(">II", head[16:24])
    except OSError:
        pass
    return None


def verdict_badge(verdict):
    return f'<span class="verdict {VERDICT_CLASS.get(verdict, "v-not-run-here")}">{e(verdict)}</span>'


class Page:
    def __init__(self, outdir):
        self.outdir = outdir
        self.parts = []

    def add(self, text):
        self.parts.append(text)

    def figure(self, files, alt, caption):
        if not files:
            return
        size = png_size(os.path.join(self.outdir, files["png"]))
        dims = f' width="{size[0]}" height="{size[1]}"' if size else ""
        self.add(
            f'<figure><a href="{e(files["svg"])}"><img src="{e(files["png"])}" alt="{e(alt)}"{dims}></a>'
            f'<figcaption>{caption} <a href="{e(files["svg"])}">SVG</a></figcaption></figure>'
        )


def _ratio_text(row):
    text = units.format_ratio(row["ratio"], row["ci_low"], row["ci_high"])
    if row.get("confidence"):
        text += f" ({row['confidence'] * 100:.0f} %)"
    return text


def claims_section(page, results, run):
    page.add('<section id="claims"><h2>Claims: did they hold on this machine?</h2>')
    page.add(
        "<p>Each claim of the seed documents, the figure the seed quotes, what this run measured "
        "(treatment vs baseline, &gt; 1 means the treatment is better, with its interval and the "
        'confidence reached) and the verdict. <span class="verdict v-held">held</span>: every interval '
        'clears the claim\'s threshold; <span class="verdict v-did-not-hold">did not hold</span>: at some '
        "grid point the interval lies on the wrong side (or shows no meaningful difference); "
        '<span class="verdict v-inconclusive">inconclusive</span>: intervals too wide to decide; '
        '<span class="verdict v-not-run-here">not run here</span>: nothing measured, with the reason; '
        '<span class="verdict v-not-run-here">not testable here</span>: every experiment of the claim needs '
        "a CUDA device this machine lacks; a row marked <b>CPU analogue</b> comes from a CPU experiment "
        "standing in for a GPU claim, for the reason given beside it; "
        '<span class="verdict v-recorded">recorded</span>: the claim is about the environment or limits '
        "and has no ratio. The verdicts are the harness's, as the run file records them (<code>pairbench.claims</code>; "
        "the rules: <code>docs/claims.md</code>).</p>"
    )
    counts = {}
    for r in results:
        counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
    page.add("<p>" + ", ".join(f"{verdict_badge(v)} {n}" for v, n in sorted(counts.items())) + "</p>")
    if not results:
        page.add(
            "<p>No claims to show: this run file has no verdicts (<code>pairbench.claims</code>) and no claims "
            "catalogue was given (<code>pairbench report</code> judges the run and passes both).</p></section>"
        )
        return
    page.add(
        '<div class="table-wrap"><table class="claims"><thead><tr><th>claim</th><th>what the seed quotes</th>'
        "<th>measured on this machine</th><th>verdict</th></tr></thead><tbody>"
    )
    for r in results:
        c = r["claim"]
        seed = f"seed {c.get('seed', '')}" + (f" {c.get('section')}" if c.get("section") else "")
        quoted = "".join(
            f"<li>{e(q.get('text', ''))}"
            + (
                f" <span class='why'>(implied ratio ≈ {e(q['implied_ratio'])}×: "
                f"{e(q.get('implied_ratio_meaning', ''))})</span>"
                if q.get("implied_ratio") is not None
                else ""
            )
            + "</li>"
            for q in c.get("quoted_figures", [])
            if isinstance(q, dict)
        )
        quoted = f'<ul class="rows">{quoted}</ul>' if quoted else '<span class="why">no figure quoted</span>'
        if c.get("uncatalogued"):  # the run file's claim, not in the catalogue given (or none given)
            quoted = '<span class="why">not in the claims catalogue given</span>'
        rows = []
        # Each CPU stand-in for a GPU claim once, with its argument; its rows below are marked.
        for exp, argument in dict.fromkeys(
            (m["experiment"], m["analogue"]) for m in r["measured"] if m.get("analogue")
        ):
            rows.append(f"<li class='why'><b>CPU analogue</b> {e(exp)}: {e(argument)}</li>")
        for m in r["measured"]:
            mark = {HELD: "✓", NOT_HELD: "✗"}.get(m["verdict"], "?")
            link = f'<a href="#{anchor("exp", m["experiment"])}">{e(m["experiment"])}</a>'
            analogue = " <span class='why'>(<b>CPU analogue</b>)</span>" if m.get("analogue") else ""
            rows.append(
                f"<li>{e(mark)} {link} <span class='mono'>{e(m['treatment'])} · {e(m['point'])}</span>: "
                f"<b>{e(_ratio_text(m))}</b>{analogue}</li>"
            )
        for text in r.get("recorded", [])[:8]:
            rows.append(f"<li>{e(text)}</li>")
        if len(r.get("recorded", [])) > 8:
            rows.append(f"<li>… and {len(r['recorded']) - 8} more</li>")
        for text in r.get("excluded", []):  # declared for the claim but not testing it: named, never counted
            rows.append(f"<li class='why'>not counted: {e(text)}</li>")
        if rows:
            shown, rest = rows[:6], rows[6:]
            measured = f'<ul class="rows">{"".join(shown)}</ul>'
            if rest:
                measured += (
                    f'<details><summary>{len(rest)} more</summary><ul class="rows">{"".join(rest)}</ul></details>'
                )
        else:
            measured = '<span class="why">nothing measured</span>'
        about = "; ".join(x for x in (seed if c.get("seed") else "", c.get("baseline_vs_treatment", "")) if x)
        page.add(
            f'<tr id="{anchor("claim", c["id"])}"><td><b>{e(c["id"])}</b> {e(c["claim"])}'
            + (f'<div class="why">{e(about)}</div>' if about else "")
            + "</td>"
            f"<td>{quoted}</td><td>{measured}</td>"
            f'<td>{verdict_badge(r["verdict"])}<div class="why">{e(r["why"])}</div></td></tr>'
        )
    page.add("</tbody></table></div></section>")


def points_table(page, exp, run):
    vals = [v for p in exp["points"] for a in p["arms"] for v in (a["median"], a["min"], a["max"]) if v is not None]
    divisor, shown = units.scale_for(exp["unit"], vals)

    def num(v):
        return "–" if v is None else f"{v / divisor:.4g}"

    page.add(
        '<div class="table-wrap"><table><thead><tr><th>grid point</th><th>arm</th><th>role</th>'
        f"<th>median ({e(shown)})</th><th>min – max ({e(shown)})</th><th>cv</th><th>n</th><th>verification</th>"
        "<th>vs baseline [interval]</th><th>% of limit</th></tr></thead><tbody>"
    )
    for p in exp["points"]:
        label = point_label(p["params"], exp["axes"])
        sizes = [
            units.format_size_tick(float(v))
            for k, v in p["params"].items()
            if (k == "bytes" or k.endswith("_bytes")) and v.isdigit() and int(v) >= 1024
        ]
        if sizes:
            label += f" ({', '.join(sizes)})"
        ratios = {r["treatment"]: r for r in p["ratios"]}
        for i, a in enumerate(p["arms"]):
            r = ratios.get(a["arm"])
            ratio = e(_ratio_text(r)) if r else ""
            ver = e(a["verification"]) + (f'<div class="why">{e(a["reason"])}</div>' if a["reason"] else "")
            if a["synthetic"]:
                ver += '<div class="bad">synthetic test data</div>'
            pct = ""
            if a["percent_of_limit"] is not None:
                pct = f"{a['percent_of_limit']:.0f} %"
                if a["limit_defect"]:  # above its limit: a measurement defect, never a plain figure
                    pct = (
                        f'<span class="bad">DEFECT {a["percent_of_limit"]:.0f} % of limit</span>'
                        f'<div class="why">{e(a["limit_defect"])}</div>'
                    )
                elif a["limit"]:
                    of = f'{a["limit"]["counter"]} of ' if a["limit"].get("counter") else "of "
                    pct += f'<div class="why">{e(of)}{e(a["limit"]["benchmark"])}</div>'
            cv = "–" if a["cv"] is None else f"{a['cv'] * 100:.1f} %"
            span = "–" if a["min"] is None else num(a["min"]) + " – " + num(a["max"])
            page.add(
                f'<tr class="{"group" if i == 0 else ""}"><td class="mono">{e(label) if i == 0 else ""}</td>'
                f'<td class="mono arm">{e(a["arm"])}</td><td>{e(a["role"])}</td>'
                f'<td class="num">{num(a["median"])}</td>'
                f'<td class="num">{span}</td><td class="num">{cv}</td>'
                f'<td class="num">{int(a["samples"])}</td><td>{ver}</td><td class="num">{ratio}</td>'
                f'<td class="num">{pct}</td></tr>'
            )
    page.add("</tbody></table></div>")
    targets = [(point_label(p["params"], exp["axes"]), t) for p in exp["points"] for t in p["targets"]]
    if targets:
        page.add('<p><b>Targets</b> (reported, not asserted):</p><ul class="rows">')
        for label, t in targets:
            state = (
                '<span class="ok">met</span>'
                if t["met"]
                else ('<span class="bad">missed</span>' if t["met"] is False else "not measured")
            )
            page.add(
                f"<li>{state}: {e(t['text'])} <span class='mono'>({e(label)}; median "
                f"{e(units.format_value(t['median'], exp['unit']))}, bound "
                f"{e(units.format_value(t['bound'], exp['unit']))})</span></li>"
            )
        page.add("</ul>")


def not_run_notes(exp):
    notes = {}
    for p in exp["points"]:
        for a in p["arms"]:
            if a["median"] is None:
                notes.setdefault(a["reason"] or a["verification"], []).append(
                    f"{a['arm']} at {point_label(p['params'], exp['axes'])}"
                )
    return notes


def environment_section(page, run):
    env = run.environment
    page.add('<section id="environment"><h2>Environment</h2>')
    if env.get("warnings"):
        page.add('<div class="banner"><b>Warnings</b> (the environment may be sabotaging these results):<ul>')
        page.add("".join(f"<li>{e(w)}</li>" for w in env["warnings"]))
        page.add("</ul></div>")
    else:
        page.add("<p>No environment warnings.</p>")
    page.add('<div class="table-wrap"><table><thead><tr><th>field</th><th>value</th></tr></thead><tbody>')
    for key in sorted(env):
        if key == "warnings":
            continue
        value = env[key]
        if isinstance(value, list):
            text = ", ".join(str(v) for v in value)
        elif isinstance(value, dict):
            text = ", ".join(f"{k}={v}" for k, v in value.items())
        elif isinstance(value, bool):
            text = "yes" if value else "no"
        elif isinstance(value, float) and key.endswith("_bytes"):
            text = f"{value:.0f} ({units.format_value(value, 'bytes')})"
        else:
            text = str(value)
        page.add(f'<tr><td class="mono">{e(key)}</td><td class="mono">{e(text)}</td></tr>')
    page.add("</tbody></table></div></section>")


def not_run_section(page, run):
    page.add('<section id="not-run"><h2>What did not run here, and why</h2>')
    if not run.not_run:
        page.add("<p>Every selected benchmark ran.</p></section>")
        return
    groups = {}
    for n in run.not_run:
        groups.setdefault((n["verification"], n["reason"]), []).append(n)
    page.add(
        '<div class="table-wrap"><table><thead><tr><th>status</th><th>reason</th><th>benchmarks</th></tr>'
        "</thead><tbody>"
    )
    for (ver, reason), items in sorted(groups.items()):
        names = sorted({n["name"] for n in items})
        listing = "".join(f"<li class='mono'>{e(name)}</li>" for name in names[:10])
        more = (
            (
                f"<details><summary>{len(names) - 10} more</summary><ul class='rows'>"
                + "".join(f"<li class='mono'>{e(name)}</li>" for name in names[10:])
                + "</ul></details>"
            )
            if len(names) > 10
            else ""
        )
        page.add(f"<tr><td>{e(ver)}</td><td>{e(reason)}</td><td><ul class='rows'>{listing}</ul>{more}</td></tr>")
    page.add("</tbody></table></div></section>")


def history_section(page, history, figures, this_machine, db_label, resolution_fig=None):
    page.add('<section id="history"><h2>History: is it getting worse?</h2>')
    if history is None:
        page.add("<p>No history was given (<code>pairbench report --db DB</code> exports it).</p></section>")
        return
    page.add(
        f"<p>From <code>{e(db_label)}</code>: {history.run_count} run(s) on {len(history.machines())} "
        f"machine(s). Each panel shows one benchmark's median per run (dots: the process samples), "
        f"change points that <code>pairbench</code> found over the exported runs as red dashed lines with "
        f"the change of the median, and each machine's baseline run as a star. This run's machine: "
        f"<code>{e(this_machine or 'unknown')}</code>.</p>"
    )
    if not history.runs:
        page.add("<p>The history has no runs yet.</p></section>")
        return
    if resolution_fig:
        page.figure(
            resolution_fig,
            "each benchmark's resolution over time",
            "Each benchmark's resolution over time (grey; bold: the median over benchmarks): the smallest "
            "change a gate between two runs could decide from this machine's history at that run, at its "
            "sample size, run-to-run noise included (docs/gate.md, Resolution). A benchmark is gated at 5 % "
            "only where its resolution is below the dashed line; elsewhere at its resolution.",
        )
    for f in figures:
        page.figure(
            f["files"], f"history of {f['experiment']}", f"{e(f['experiment'])}: {e(', '.join(f['benchmarks']))}."
        )
    cps = [
        (b, m, rid, before, after)
        for (b, m), lst in sorted(history.change_points.items())
        for rid, before, after in lst
    ]
    if cps:
        page.add(
            '<h3>Change points</h3><div class="table-wrap"><table><thead><tr><th>benchmark</th><th>machine</th>'
            "<th>run (time, git)</th><th>before</th><th>after</th><th>change</th></tr></thead><tbody>"
        )
        for b, m, rid, before, after in cps:
            run = history.runs[rid]
            unit = next((s.unit for (bb, mm), s in history.series.items() if bb == b and mm == m), "")
            change = f"{(after / before - 1) * 100:+.1f} %" if before else "n/a"
            page.add(
                f'<tr><td class="mono">{e(b)}</td><td class="mono">{e(m)}</td>'
                f'<td class="mono">{e(run["started_at"].strftime("%Y-%m-%d %H:%M"))} {e(run["git_sha"][:10])}</td>'
                f'<td class="num">{e(units.format_value(before, unit))}</td>'
                f'<td class="num">{e(units.format_value(after, unit))}</td><td class="num">{e(change)}</td></tr>'
            )
        page.add("</tbody></table></div>")
    else:
        page.add("<p>No change points found.</p>")
    if history.baselines:

        def baseline(rid):
            run = history.runs.get(rid)
            if run is None:
                return f"run {e(rid)} (older than the exported runs)"
            return f"run {e(rid)} ({e(run['started_at'].strftime('%Y-%m-%d %H:%M'))}, git {e(run['git_sha'][:10])})"

        page.add(
            "<p>Baselines: "
            + "; ".join(f"<code>{e(m)}</code>: {baseline(rid)}" for m, rid in sorted(history.baselines.items()))
            + "</p>"
        )
    page.add("</section>")


RECENTLY_FIXED = 10  # the regressions table shows this many of the latest fixed ones


def _percent(x):
    return "?" if x is None else f"{x * 100:+.1f} %"


def _regression_row(g, note):
    badge = f'<span class="verdict r-{e(g["state"])}">{e(g["state"])}</span>'
    change = (
        f'{_percent(g["change"])} <span class="why">[{_percent(g["change_low"])}, {_percent(g["change_high"])}]</span>'
    )
    if g["culprit_sha"]:
        commits = f'culprit <code>{e(g["culprit_sha"][:10])}</code>'
    else:
        commits = f'<code>{e(g["last_good_sha"][:10] or "?")}</code>..<code>{e(g["first_bad_sha"][:10] or "?")}</code>'
    levels = ""
    if g["level_before"] is not None and g["level_after"] is not None:
        levels = (
            f'<div class="why">{e(units.format_value(g["level_before"], g["unit"]))} → '
            f'{e(units.format_value(g["level_after"], g["unit"]))}</div>'
        )
    seen = (
        f'{e(g["first_seen_at"].strftime("%Y-%m-%d"))} – {e(g["last_seen_at"].strftime("%Y-%m-%d"))}'
        f' <span class="why">({g["times_seen"]}×)</span>'
    )
    return (
        f'<tr><td class="num">{g["id"]}</td><td>{badge}</td><td class="mono">{e(g["machine_key"])}</td>'
        f'<td class="mono">{e(g["benchmark"])}<div class="why">{e(g["instrument"])}</div></td>'
        f'<td class="num">{change}{levels}</td><td>{commits}</td><td>{seen}</td><td>{note}</td></tr>'
    )


def regressions_section(page, history):
    """Regressions tracked until fixed (`pairbench regressions`), as the history export holds them:
    the open and acknowledged ones, then the latest fixed."""
    page.add('<section id="regressions"><h2>Regressions: tracked until fixed</h2>')
    if history is None:
        page.add(
            "<p>No history was given (<code>pairbench report --db DB</code> exports it with its regressions)."
            "</p></section>"
        )
        return
    if history.regressions is None:
        page.add("<p>The history export holds no regressions (written before regressions were tracked).</p></section>")
        return
    page.add(
        "<p>Each regression the nightly gate confirmed, once per machine and benchmark until it is fixed "
        "(<code>pairbench regressions</code>): <b>open</b> until acknowledged with a reason "
        "(<code>pairbench regressions ack</code>), <b>fixed</b> when a later change point of the history brings "
        "the level back to within the threshold of the level before it. Change: + is worse, with the gate's "
        "interval; commits: the last good .. first bad run's commit, or the culprit a bisection named.</p>"
    )
    head = (
        '<div class="table-wrap"><table><thead><tr><th>#</th><th>state</th><th>machine</th><th>benchmark</th>'
        "<th>change [interval]</th><th>commits</th><th>seen</th><th>note</th></tr></thead><tbody>"
    )
    active = sorted(
        (g for g in history.regressions if g["state"] != "fixed"),
        key=lambda g: (g["state"] != "open", g["machine_key"], g["id"]),
    )
    if active:
        page.add(f"<h3>Open and acknowledged: {len(active)}</h3>" + head)
        for g in active:
            note = ""
            if g["state"] == "acknowledged":
                note = (
                    f'{e(g["ack_reason"] or "")}<div class="why">acknowledged '
                    f'{e(g["acknowledged_at"].strftime("%Y-%m-%d") if g["acknowledged_at"] else "")}</div>'
                )
            page.add(_regression_row(g, note))
        page.add("</tbody></table></div>")
    else:
        page.add('<p class="ok">No open or acknowledged regressions.</p>')
    fixed = sorted(
        (g for g in history.regressions if g["state"] == "fixed"),
        key=lambda g: (g["fixed_at"] is not None, g["fixed_at"], g["id"]),
        reverse=True,
    )
    if fixed:
        shown = fixed[:RECENTLY_FIXED]
        page.add(f"<h3>Recently fixed: the latest {len(shown)} of {len(fixed)}</h3>" + head)
        for g in shown:
            when = g["fixed_at"].strftime("%Y-%m-%d") if g["fixed_at"] else "?"
            page.add(_regression_row(g, f'fixed {e(when)}<div class="why">{e(g["fixed_reason"] or "")}</div>'))
        page.add("</tbody></table></div>")
    page.add("</section>")


def render(
    outdir,
    run,
    results,
    experiment_figures,
    history,
    history_figs,
    history_label,
    fleet=None,
    gate=None,
    resolution_fig=None,
):
    page = Page(outdir)
    env = run.environment
    machine = env.get("cpu_model", "") or env.get("hostname", "")
    if env.get("gpu_name"):
        machine += f" + {env['gpu_name']}"
    page.add(
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>pairbench report: {e(machine or 'unknown machine')}</title><style>{CSS}</style></head><body>"
    )
    page.add("<header><h1>pairbench report</h1>")
    page.add(
        f'<p class="meta">Run file <code>{e(os.path.basename(run.path))}</code> · started {e(run.started_at or "?")} · '
        f'profile {e(run.profile or "?")} · machine {e(machine or "?")} (key <code>{e(run.machine_key() or "?")}</code>) · '
        f'git <code>{e(str(env.get("git_sha", ""))[:12] or "?")}</code>'
        f'{" (dirty)" if env.get("git_dirty") else ""} · build {e(env.get("build_type", "?"))}</p></header>'
    )
    if run.fixture_note:
        page.add(f'<div class="banner fixture"><b>Fixture note from the run file:</b> {e(run.fixture_note)}</div>')
    if env.get("warnings"):
        page.add(
            f'<div class="banner"><b>{len(env["warnings"])} environment warning(s)</b>: '
            f'{e(env["warnings"][0])}{" …" if len(env["warnings"]) > 1 else ""} '
            '<a href="#environment">see Environment</a></div>'
        )
    page.add(
        "<nav><b>Contents</b><ul>"
        + ('<li><a href="#gate">Gate: where it got slower</a></li>' if gate else "")
        + '<li><a href="#claims">Claims and verdicts</a></li>'
    )
    for exp in run.experiments:
        page.add(f'<li><a href="#{anchor("exp", exp["name"])}">{e(exp["name"])}</a></li>')
    page.add(
        '<li><a href="#not-run">What did not run</a></li><li><a href="#regressions">Regressions</a></li>'
        '<li><a href="#history">History</a></li>'
        + (f'<li><a href="{e(fleet["href"])}">Across machines</a></li>' if fleet else "")
        + '<li><a href="#environment">Environment</a></li></ul></nav>'
    )
    if fleet:  # the cross-machine page (plots/pairbench_report/fleet.py), beside this one
        page.add(
            f'<p>Across machines: <a href="{e(fleet["href"])}">{fleet["machines"]} machine(s) of {fleet["kinds"]} '
            "kind(s)</a>: each benchmark's trend per machine and each claim's verdict per machine kind.</p>"
        )
    if gate:  # the gate's own decisions (pairbench gate --json), with each regression's function diff
        from .gate import gate_section

        gate_section(page, gate, e)
    claims_section(page, results, run)
    page.add('<section id="experiments"><h2>Experiments</h2>')
    for exp in run.experiments:
        page.add(
            f'<article id="{anchor("exp", exp["name"])}"><h3>{e(exp["name"])}'
            + (f' <a href="#{anchor("claim", exp["claim"])}">({e(exp["claim"])})</a>' if exp["claim"] else "")
            + "</h3>"
        )
        page.add(
            f"<p><b>{e(exp['question'])}</b><br><span class='why'>kind {e(exp['kind'])}; deciding metric "
            f"<code>{e(exp['metric'])}</code> in {e(exp['unit'] or 'no unit')}, {e(exp['better'])} is better; "
            f"timing {e(exp['timing'] or '?')}</span></p>"
        )
        for f in experiment_figures.get(exp["name"], []):
            page.figure(f["files"], f["alt"], f["caption"])
        notes = not_run_notes(exp)
        if notes:
            page.add(
                '<p class="why">Not run here: '
                + "; ".join(
                    f"{e(reason)}: {e(', '.join(items[:6]))}{' …' if len(items) > 6 else ''}"
                    for reason, items in notes.items()
                )
                + "</p>"
            )
        points_table(page, exp, run)
        page.add("</article>")
    if not run.experiments:
        page.add("<p>The run file has no experiments.</p>")
    page.add("</section>")
    not_run_section(page, run)
    regressions_section(page, history)
    history_section(page, history, history_figs, run.machine_key(), history_label, resolution_fig)
    environment_section(page, run)
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    page.add(
        f"<footer>Written by <code>plots/report.py</code> at {e(now)} from <code>{e(os.path.basename(run.path))}</code>"
        + (f" and <code>{e(history_label)}</code>" if history is not None else "")
        + ". Figures: PNG inline, SVG behind each link. Units: times in ns/µs/ms/s, rates with decimal "
        "prefixes (GB/s = 10<sup>9</sup> B/s), sizes with binary prefixes (KiB, MiB, GiB).</footer>"
    )
    page.add("</body></html>\n")
    return "".join(page.parts)
