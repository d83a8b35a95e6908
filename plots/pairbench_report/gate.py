"""The gate's decisions as the harness wrote them (`pairbench gate|compare|ab --json FILE`): the one
Python reader of that file (the report). The
headline, every row's verdict, change and suspicion (read_rows), and for every regression and
improvement the functions that added (removed) the most instructions per iteration, or why there
is no such diff (load_gate). Nothing is decided here; a field of the wrong type is refused with one
line naming it."""
import json
import math

from .errors import BadInput
from .runfile import read_bytes

CHANGED = ("regression", "improvement")
MAX_BYTES = 1 << 30  # as a run file's


def _want(path, where, value, kinds, what):
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):  # JSON true is no number
        raise BadInput(f"{path}: {where}: expected {what}, is {json.dumps(value)[:60]}")
    if isinstance(value, float) and not math.isfinite(value):
        raise BadInput(f"{path}: {where}: expected a finite number, is {value}")
    return value


def _optional_number(path, where, value):
    if value is None:
        return None
    return _want(path, where, value, (int, float), "a number or null")


def _read_doc(path):
    try:
        doc = json.loads(read_bytes(path, MAX_BYTES, "the gate's JSON").decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise BadInput(f"{path}: not the gate's JSON (pairbench gate --json): {err}") from None
    return _want(path, "(top level)", doc, dict, "an object")


def read_rows(path):
    """Every row of the gate's JSON, checked: name, instrument, experiment, verdict, note, suspect,
    change with its interval and p-values (None where absent or null), and the two builds."""
    doc = _read_doc(path)
    out = {
        "headline": _want(path, "headline", doc.get("headline", ""), str, "a string"),
        "baseline_build": _want(path, "baseline_build", doc.get("baseline_build") or "", str, "a string"),
        "current_build": _want(path, "current_build", doc.get("current_build") or "", str, "a string"),
        "exit_status": _want(path, "exit_status", doc.get("exit_status", 0), int, "an integer"),
        "rows": [],
    }
    for i, row in enumerate(_want(path, "benchmarks", doc.get("benchmarks"), list, "an array")):
        at = f"benchmarks[{i}]"
        _want(path, at, row, dict, "an object")
        out["rows"].append(
            {
                "name": _want(path, at + ".name", row.get("name"), str, "a string"),
                "instrument": _want(path, at + ".instrument", row.get("instrument", "time"), str, "a string"),
                "experiment": _want(path, at + ".experiment", row.get("experiment", ""), str, "a string"),
                "verdict": _want(path, at + ".verdict", row.get("verdict"), str, "a string"),
                "note": _want(path, at + ".note", row.get("note", ""), str, "a string"),
                "suspect": _want(path, at + ".suspect", row.get("suspect", False), bool, "true or false"),
                **{
                    k: _optional_number(path, f"{at}.{k}", row.get(k))
                    for k in ("slowdown", "slowdown_low", "slowdown_high", "p_value", "p_adjusted")
                },
            }
        )
    return out


def load_confirmation(path):
    """`pairbench confirm classify`'s confirmed.json: every suspect as confirmed, cleared or unresolved, and why."""
    try:
        doc = json.loads(read_bytes(path, MAX_BYTES, "a confirmation").decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise BadInput(f"{path}: not pairbench confirm's confirmed.json: {err}") from None
    _want(path, "(top level)", doc, dict, "an object")
    out = {
        "seconds": _optional_number(path, "seconds", doc.get("seconds")),
        "baseline_build": _want(path, "baseline_build", doc.get("baseline_build", ""), str, "a string"),
    }
    for kind in ("regressions", "cleared", "unresolved"):
        out[kind] = []
        for i, r in enumerate(_want(path, kind, doc.get(kind, []), list, "an array")):
            at = f"{kind}[{i}]"
            _want(path, at, r, dict, "an object")
            out[kind].append(
                {
                    "benchmark": _want(path, at + ".benchmark", r.get("benchmark"), str, "a string"),
                    "instrument": _want(path, at + ".instrument", r.get("instrument", "time"), str, "a string"),
                    "why": _want(path, at + ".why", r.get("why", ""), str, "a string"),
                }
            )
    return out


def load_gate(path, confirmation=None):
    """The gate JSON's headline, outcome, its regression and improvement rows, what each time row was
    gated at (gates written before issue 24 have no `gated_at`), and the confirmation where given."""
    doc = _read_doc(path)
    gate = {
        "path": path,
        "headline": _want(path, "headline", doc.get("headline"), str, "a string"),
        "outcome": _want(path, "outcome", doc.get("outcome"), str, "a string"),
        "baseline": _want(path, "baseline", doc.get("baseline", ""), str, "a string"),
        "current": _want(path, "current", doc.get("current", ""), str, "a string"),
        "rows": [],
        "gated": [],
        "confirmation": load_confirmation(confirmation) if confirmation else None,
    }
    for i, row in enumerate(_want(path, "benchmarks", doc.get("benchmarks"), list, "an array")):
        at = f"benchmarks[{i}]"
        _want(path, at, row, dict, "an object")
        verdict = _want(path, at + ".verdict", row.get("verdict"), str, "a string")
        gated_at = _optional_number(path, at + ".gated_at", row.get("gated_at"))
        if gated_at and row.get("instrument") == "time":
            gate["gated"].append(
                {
                    "name": _want(path, at + ".name", row.get("name"), str, "a string"),
                    "verdict": verdict,
                    "gated_at": gated_at,
                    "threshold": _optional_number(path, at + ".threshold", row.get("threshold")) or 0.0,
                    **{
                        k: _optional_number(path, f"{at}.{k}", row.get(k))
                        for k in ("slowdown", "slowdown_low", "slowdown_high")
                    },
                    "suspect": _want(path, at + ".suspect", row.get("suspect", False), bool, "true or false"),
                }
            )
        if verdict not in CHANGED:
            continue
        out = {
            "name": _want(path, at + ".name", row.get("name"), str, "a string"),
            "instrument": _want(path, at + ".instrument", row.get("instrument"), str, "a string"),
            "verdict": verdict,
            "slowdown": row.get("slowdown"),
            "note": _want(path, at + ".function_diff_note", row.get("function_diff_note", ""), str, "a string"),
            "total": _want(
                path,
                at + ".function_diff_total_change",
                row.get("function_diff_total_change", 0),
                (int, float),
                "a number",
            ),
            "functions": [],
        }
        if out["slowdown"] is not None:
            _want(path, at + ".slowdown", out["slowdown"], (int, float), "a number or null")
        for j, f in enumerate(_want(path, at + ".function_diff", row.get("function_diff", []), list, "an array")):
            fat = f"{at}.function_diff[{j}]"
            _want(path, fat, f, dict, "an object")
            out["functions"].append(
                {
                    "function": _want(path, fat + ".function", f.get("function"), str, "a string"),
                    **{
                        k: _want(path, f"{fat}.{k}", f.get(k), (int, float), "a number")
                        for k in ("baseline", "current", "change")
                    },
                    **{
                        k: _want(path, f"{fat}.{k}", f.get(k, False), bool, "true or false")
                        for k in ("baseline_bound", "current_bound")
                    },
                }
            )
        gate["rows"].append(out)
    return gate


def _count(x, sign=False, bound=False):
    text = (
        f"{x:+,.0f}"
        if sign and abs(x) >= 1000
        else f"{x:+.1f}"
        if sign
        else f"{x:,.0f}"
        if abs(x) >= 1000
        else f"{x:.1f}"
    )
    return ("≤" if bound else "") + text


def _pct(x):
    return "" if x is None else f"{100 * x:+.1f} %"


def gated_table(page, gate, e):
    """What each time benchmark was gated at: the threshold, or its resolution where that is wider."""
    rows = gate["gated"]
    if not rows:
        return
    at_threshold = sum(1 for r in rows if r["gated_at"] <= r["threshold"] * (1 + 1e-9))
    wider = sorted(r["gated_at"] for r in rows if r["gated_at"] > r["threshold"] * (1 + 1e-9))
    median = f"; median of those ±{100 * wider[len(wider) // 2]:.1f} %" if wider else ""
    page.add(
        f"<h3>What each benchmark was gated at</h3><p>{at_threshold} of {len(rows)} time benchmarks were gated "
        f"at their threshold; {len(wider)} at their resolution, the smallest change the gate could tell from "
        f"their noise (docs/gate.md, Resolution){median}. A suspect (unchanged only at a resolution wider than "
        "its threshold, yet slower than it) is measured again on the same runner.</p>"
    )
    page.add(
        '<details><summary>Every time benchmark</summary><div class="table-wrap"><table><thead><tr>'
        "<th>benchmark</th><th>verdict</th><th>change [90 % interval]</th><th>gated at</th><th>suspect</th>"
        "</tr></thead><tbody>"
    )
    for r in sorted(rows, key=lambda r: (-r["gated_at"], r["name"])):
        change = (
            f"{_pct(r['slowdown'])} [{_pct(r['slowdown_low'])}, {_pct(r['slowdown_high'])}]"
            if r["slowdown"] is not None
            else ""
        )
        page.add(
            f"<tr><td class='mono'>{e(r['name'])}</td><td>{e(r['verdict'])}</td><td class='num'>{e(change)}</td>"
            f"<td class='num'>±{100 * r['gated_at']:.1f} %</td><td>{'yes' if r['suspect'] else ''}</td></tr>"
        )
    page.add("</tbody></table></div></details>")


def confirmation_list(page, confirmation, e):
    if confirmation is None:
        return
    n = {k: len(confirmation[k]) for k in ("regressions", "cleared", "unresolved")}
    seconds = f" in {confirmation['seconds']:.0f} s" if confirmation["seconds"] is not None else ""
    page.add(
        f"<h3>Same-runner confirmation</h3><p>The gate's suspects measured again in one <code>pairbench ab</code>"
        f" of the baseline's build (<code>{e(confirmation['baseline_build'])}</code>) against this build{seconds}: "
        f"<b>{n['regressions']} confirmed</b>, {n['cleared']} cleared, {n['unresolved']} unresolved. Only a "
        "confirmed regression fails the night.</p>"
    )
    items = [r for k in ("regressions", "cleared", "unresolved") for r in confirmation[k]]
    if items:
        page.add(
            "<ul>"
            + "".join(f"<li><code>{e(r['benchmark'])}</code> [{e(r['instrument'])}]: {e(r['why'])}</li>" for r in items)
            + "</ul>"
        )


def gate_section(page, gate, e):
    """The gate's headline; what each benchmark was gated at; the confirmation; per regression and
    improvement, where its instructions went."""
    page.add('<section id="gate"><h2>Gate: where it got slower</h2>')
    page.add(
        f"<p><b>{e(gate['headline'])}</b> (outcome {e(gate['outcome'])}; baseline <code>{e(gate['baseline'])}"
        f"</code>, current <code>{e(gate['current'])}</code>). Per function: self instructions per iteration "
        "(callgrind's Ir, callees not included; inlined code counts in its caller), the median over each "
        "side's counting processes; ≤: not among that side's 20 recorded functions, at most the value "
        "shown.</p>"
    )
    gated_table(page, gate, e)
    confirmation_list(page, gate["confirmation"], e)
    if not gate["rows"]:
        page.add("<p>No regression or improvement.</p></section>")
        return
    for row in gate["rows"]:
        label = row["name"] + (" [instructions]" if row["instrument"] == "instructions" else "")
        change = f" {100 * row['slowdown']:+.1f} %" if isinstance(row["slowdown"], (int, float)) else ""
        page.add(f'<h3 class="mono">{e(label)}</h3><p>{e(row["verdict"])}{e(change)}')
        if not row["functions"]:
            page.add(f": <span class='why'>{e(row['note'] or 'no function diff')}</span></p>")
            continue
        shown = sum(f["change"] for f in row["functions"])
        page.add(
            f"; the functions that {'removed' if row['verdict'] == 'improvement' else 'added'} the most "
            f"instructions per iteration: {e(_count(shown, True))} of the benchmark's {e(_count(row['total'], True))}</p>"
        )
        page.add(
            '<div class="table-wrap"><table><thead><tr><th>function</th><th>baseline</th><th>current</th>'
            "<th>change</th></tr></thead><tbody>"
        )
        for f in row["functions"]:
            page.add(
                f"<tr><td class='mono'>{e(f['function'])}</td>"
                f"<td class='num'>{e(_count(f['baseline'], bound=f['baseline_bound']))}</td>"
                f"<td class='num'>{e(_count(f['current'], bound=f['current_bound']))}</td>"
                f"<td class='num'>{e(_count(f['change'], True))}</td></tr>"
            )
        page.add("</tbody></table></div>")
    page.add("</section>")
