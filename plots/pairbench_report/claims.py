"""The claims catalogue (harness/claims.json) and the verdicts it gives on one run file.

The rules are stated in claims.json itself (`verdict_rules`); this module implements exactly those:
per point, `better` (CI above the threshold) or `same` (CI inside a tolerance band); over points,
any 'did not hold' wins, then all 'held', else inconclusive; nothing measured: not run here, or not
testable here when every arm that could have decided it needs a CUDA device this machine lacks.
A verdict comes only from experiments the claim lists as testing it; a CPU analogue of a GPU claim
is labelled as one, with its argument.
"""
import fnmatch
import json
import math

from .errors import BadInput

HELD = "held"
NOT_HELD = "did not hold"
INCONCLUSIVE = "inconclusive"
NOT_RUN = "not run here"
RECORDED = "recorded"
NOT_TESTABLE = "not testable here"

# Reasons an arm could not run that mean "this machine has no GPU" (bench/common/devices.h).
_NO_GPU_REASONS = ("no CUDA device", "not compiled with CUDA")

_GLOB_CHARS = set("*?[")


def load_claims(path):
    try:
        with open(path, "r", encoding="utf-8") as f:
            doc = json.load(f)
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file (the claims catalogue)") from None
    except OSError as e:
        raise BadInput(f"{path}: cannot read: {e.strerror}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BadInput(f"{path}: not valid JSON: {e}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("claims"), list):
        raise BadInput(f"{path}: field claims: expected a list")
    for i, c in enumerate(doc["claims"]):
        if not isinstance(c, dict) or not isinstance(c.get("id"), str) or not isinstance(c.get("claim"), str):
            raise BadInput(f"{path}: field claims[{i}]: expected an object with string 'id' and 'claim'")
        verdict = c.get("verdict", {"kind": "ratio", "checks": []})
        if not isinstance(verdict, dict):
            raise BadInput(f"{path}: field claims[{i}].verdict: expected an object")
        for j, x in enumerate(c.get("experiments", [])):
            if not isinstance(x, dict) or not isinstance(x.get("name"), str):
                raise BadInput(f"{path}: field claims[{i}].experiments[{j}].name: expected a string")
            if "analogue" in x and not (isinstance(x["analogue"], str) and x["analogue"]):
                raise BadInput(f"{path}: field claims[{i}].experiments[{j}].analogue: expected a non-empty string "
                               f"(why the CPU experiment stands in for the GPU claim)")
        for j, chk in enumerate(verdict.get("checks", [])):
            if isinstance(chk, dict) and "analogue" in chk and not (isinstance(chk["analogue"], str) and chk["analogue"]):
                raise BadInput(f"{path}: field claims[{i}].verdict.checks[{j}].analogue: expected a non-empty string")
            if not isinstance(chk, dict) or not isinstance(chk.get("experiment"), str):
                raise BadInput(f"{path}: field claims[{i}].verdict.checks[{j}].experiment: expected a string")
            if chk.get("test", "better") not in ("better", "same", "plateau"):
                raise BadInput(f"{path}: field claims[{i}].verdict.checks[{j}].test: expected 'better', 'same' "
                               f"or 'plateau'")
            if chk.get("test") == "plateau" and len(chk.get("treatments") or []) < 2:
                raise BadInput(f"{path}: field claims[{i}].verdict.checks[{j}].treatments: 'plateau' needs "
                               f"at least two treatments, in order")
    return doc


def point_label(params, axes):
    keys = [a for a in axes if a in params] + [k for k in params if k not in axes]
    return " ".join(f"{k}:{params[k]}" for k in keys) or "(single point)"


def _matches(params, spec, default):
    if not spec:
        return default
    for axis, wanted in spec.items():
        values = wanted if isinstance(wanted, list) else [wanted]
        if params.get(axis) not in [str(v) for v in values]:
            return False
    return True


def _judge_point(ratio, check):
    low, high = ratio["ci_low"], ratio["ci_high"]
    if low is None or high is None:
        return INCONCLUSIVE, "no interval"
    if check.get("test", "better") == "same":
        tol = float(check.get("tolerance", 1.1))
        if 1.0 / tol <= low and high <= tol:
            return HELD, f"interval inside [{1 / tol:.3g}, {tol:.3g}]"
        if low > tol or high < 1.0 / tol:
            return NOT_HELD, f"interval outside [{1 / tol:.3g}, {tol:.3g}]"
        return INCONCLUSIVE, f"interval overlaps the edge of [{1 / tol:.3g}, {tol:.3g}]"
    threshold = float(check.get("threshold", 1.0))
    eq = float(check.get("equivalence", 1.02))
    if low > threshold:
        return HELD, f"interval above {threshold:g}"
    if high < threshold:
        return NOT_HELD, f"interval below {threshold:g}: the treatment is worse"
    if 1.0 / eq <= low and high <= eq:
        return NOT_HELD, f"interval inside [{1 / eq:.3g}, {eq:.3g}]: no meaningful difference"
    return INCONCLUSIVE, f"interval spans {threshold:g}"


def _judge_plateau(rows, eq):
    """rows: the ordered treatments' ratios at one point. Does the last stop beating an earlier one?
    last/earlier is bounded by [low_last / high_k, high_last / low_k] (both intervals at once)."""
    last = rows[-1]
    if any(r["ci_low"] is None or r["ci_high"] is None or r["ci_low"] <= 0 for r in rows):
        return INCONCLUSIVE, "no interval"
    for k in rows[:-1]:
        if last["ci_high"] / k["ci_low"] <= eq:
            return HELD, (f"{last['treatment']} is at most {eq:g}x {k['treatment']}: more stopped helping "
                          f"by {k['treatment']}")
    if all(last["ci_low"] / k["ci_high"] > 1.0 for k in rows[:-1]):
        return NOT_HELD, f"{last['treatment']} beats every earlier treatment: still helping"
    return INCONCLUSIVE, "the intervals are too wide to tell whether more stopped helping"


def _plateau_rows(check, exps):
    measured, missing = [], []
    order = list(check["treatments"])
    eq = float(check.get("equivalence", 1.05))
    for exp in exps:
        for p in exp["points"]:
            if not _matches(p["params"], check.get("where"), True):
                continue
            if check.get("exclude") and _matches(p["params"], check["exclude"], False):
                continue
            label = point_label(p["params"], exp["axes"])
            ratios = {r["treatment"]: r for r in p["ratios"]}
            arms = {a["arm"]: a for a in p["arms"]}
            absent = [t for t in order if t not in ratios]
            if absent:
                missing.append({"experiment": exp["name"], "point": label, "treatment": absent[0],
                                "reason": _arm_reason(arms.get(absent[0]))})
                continue
            rows = [ratios[t] for t in order]
            verdict, why = _judge_plateau(rows, eq)
            last = rows[-1]
            baseline = next((a["arm"] for a in p["arms"] if a["role"] == "baseline"), "")
            measured.append({"experiment": exp["name"], "point": label, "treatment": last["treatment"],
                             "baseline": baseline, "ratio": last["ratio"], "ci_low": last["ci_low"],
                             "ci_high": last["ci_high"], "confidence": last["confidence"], "verdict": verdict,
                             "why": why, "test": "plateau"})
    return measured, missing


def _select(pattern, claim_id, run):
    """The run's experiments a check names that test this claim: their `claim` is this claim (an
    experiment of another claim or of none, a limit included, never decides it)."""
    if not (set(pattern) & _GLOB_CHARS):
        e = run.experiment_by_name.get(pattern)
        return [e] if e and e["claim"] == claim_id and e["kind"] != "limit" else []
    return [e for e in run.experiments
            if fnmatch.fnmatchcase(e["name"], pattern) and e["claim"] == claim_id and e["kind"] != "limit"]


def _listed(claim):
    """claims.json's experiments of the claim: name -> entry (its `analogue` argument, `planned`)."""
    return {x["name"]: x for x in claim.get("experiments", []) if isinstance(x, dict) and "name" in x}


def _not_selected_why(pattern, claim_id, run, claim):
    e = run.experiment_by_name.get(pattern) if not (set(pattern) & _GLOB_CHARS) else None
    if e is not None and e["claim"] != claim_id:
        return f"tests {e['claim'] or 'no claim'}, not {claim_id}: not counted"
    return "planned, not implemented yet" if _planned(claim, pattern) else "not in this run"


def _gpu_only(reason):
    return any(r in reason for r in _NO_GPU_REASONS)


def _arm_reason(arm):
    if arm is None:
        return "not run"
    if arm["reason"]:
        return arm["reason"] if arm["verification"] in ("not_supported", "not_run", "") else \
            f"{arm['verification']}: {arm['reason']}"
    if arm["verification"] != "passed":
        return arm["verification"]
    return "no ratio"


def _check_rows(check, exps, claim):
    """Per selected point and treatment: a measured row, or a not-run row with its reason."""
    measured, missing = [], []
    wanted = check.get("treatments")
    for exp in exps:
        for p in exp["points"]:
            if not _matches(p["params"], check.get("where"), True):
                continue
            if check.get("exclude") and _matches(p["params"], check["exclude"], False):
                continue
            arms = {a["arm"]: a for a in p["arms"]}
            baseline = next((a for a in p["arms"] if a["role"] == "baseline"), None)
            treatments = [a["arm"] for a in p["arms"] if a["role"] == "treatment"]
            if wanted:
                treatments = [t for t in treatments if t in wanted]
            label = point_label(p["params"], exp["axes"])
            for t in treatments:
                r = next((r for r in p["ratios"] if r["treatment"] == t), None)
                if r is None:
                    arm = arms.get(t)
                    reason = _arm_reason(arm)
                    if arm is not None and arm["verification"] == "passed" and baseline is not None:
                        reason = f"baseline {baseline['arm']}: {_arm_reason(baseline)}"
                    missing.append({"experiment": exp["name"], "point": label, "treatment": t, "reason": reason})
                    continue
                verdict, why = _judge_point(r, check)
                measured.append({"experiment": exp["name"], "point": label, "treatment": t,
                                 "baseline": baseline["arm"] if baseline else "",
                                 "ratio": r["ratio"], "ci_low": r["ci_low"], "ci_high": r["ci_high"],
                                 "confidence": r["confidence"], "verdict": verdict, "why": why,
                                 "test": check.get("test", "better")})
    return measured, missing


def _planned(claim, pattern):
    for e in claim.get("experiments", []):
        if isinstance(e, dict) and e.get("name") == pattern:
            return bool(e.get("planned"))
    return False


def _judge_ratio_claim(claim, run):
    checks = [dict(c) for c in claim.get("verdict", {}).get("checks", [])]
    listed = _listed(claim)
    selected = set()
    per_check = []
    for chk in checks:
        exps = _select(chk["experiment"], claim["id"], run)
        selected.update(e["name"] for e in exps)
        per_check.append((chk, exps))
    # Experiments the claim lists that no check names: the default rule. One that only declares the
    # claim (its `claim` field) without being listed is named and not counted: claims.json says
    # what tests a claim (copy.stores once declared C6 and decided it on store types).
    excluded = []
    for e in run.experiments:
        if e["claim"] == claim["id"] and e["name"] not in selected and e["kind"] != "limit":
            if e["name"] in listed:
                per_check.append(({"experiment": e["name"], "test": "better", "threshold": 1.0}, [e]))
                selected.add(e["name"])
            else:
                excluded.append(f"{e['name']}: declares {claim['id']} but claims.json does not list it as "
                                f"testing it: not counted")
    measured, missing, absent = [], [], []
    for chk, exps in per_check:
        if not exps:
            why = _not_selected_why(chk["experiment"], claim["id"], run, claim)
            (excluded if why.endswith("not counted") else absent).append(f"{chk['experiment']}: {why}")
            continue
        m, n = _plateau_rows(chk, exps) if chk.get("test") == "plateau" else _check_rows(chk, exps, claim)
        for row in m:  # a CPU stand-in for a GPU claim says so, with its argument
            row["analogue"] = chk.get("analogue") or listed.get(row["experiment"], {}).get("analogue", "")
        measured += m
        missing += n
    result = {"measured": measured, "missing": missing, "absent": absent, "excluded": excluded}
    if not measured:
        reasons = sorted({f"{x['experiment']} {x['point']}: {x['reason']}" for x in missing})
        short = sorted({x["reason"] for x in missing})
        if short and all(_gpu_only(r) for r in short):
            needs = ", ".join(sorted({x["experiment"] for x in missing}))
            result.update(verdict=NOT_TESTABLE, why=f"{'; '.join(short)} ({needs} need{'s' if ', ' not in needs else ''} "
                                                     f"one)", details=reasons)
            return result
        if short:
            why = "; ".join(short)
        elif absent:
            why = "no experiment ran: " + "; ".join(absent)
        else:
            why = "no experiment tests this claim yet"
        result.update(verdict=NOT_RUN, why=why, details=reasons)
        return result
    held = sum(1 for m in measured if m["verdict"] == HELD)
    failed = [m for m in measured if m["verdict"] == NOT_HELD]
    if failed:
        verdict = NOT_HELD
        why = f"held at {held} of {len(measured)} points; not at " + \
              "; ".join(f"{m['point']} ({m['treatment']})" for m in failed[:4])
        if len(failed) > 4:
            why += f" and {len(failed) - 4} more"
    elif held == len(measured):
        verdict = HELD
        why = f"held at all {len(measured)} points measured"
    else:
        verdict = INCONCLUSIVE
        if held:
            why = f"held at {held} of {len(measured)} points; the other intervals are too wide to decide"
        else:
            why = f"the intervals are too wide to decide at {'the' if len(measured) == 1 else 'all'} " \
                  f"{len(measured)} point{'s' if len(measured) != 1 else ''} measured"
    if missing:
        reasons = sorted({x["reason"] for x in missing})
        why += f"; {len(missing)} not run here ({'; '.join(reasons)})"
    analogues = sorted({m["analogue"] for m in measured if m["analogue"]})
    result["analogue_only"] = len(analogues) > 0 and all(m["analogue"] for m in measured)
    if result["analogue_only"]:
        why = "from a CPU analogue only (" + "; ".join(analogues) + "): " + why
    result.update(verdict=verdict, why=why, details=[])
    return result


def _judge_environment(claim, run):
    v = claim["verdict"]
    value = run.environment.get(v.get("field", ""), "")
    if value in ("", None, 0):
        reason = str(run.environment.get(v.get("absent_reason_field", ""), "") or "no GPU in this run")
        return {"verdict": NOT_TESTABLE if _gpu_only(reason) else NOT_RUN, "why": reason, "measured": [], "missing": [], "absent": [], "details": [],
                "recorded": []}
    text = f"{v.get('field')}: {value}"
    try:
        major = float(str(value).split(".")[0])
        text += " (has tensor cores)" if major >= 7 else " (no tensor cores)"
    except ValueError:
        pass
    gpu = run.environment.get("gpu_name", "")
    if gpu:
        text = f"{gpu}, {text}"
    return {"verdict": RECORDED, "why": "environment capture only; " + text, "measured": [], "missing": [],
            "absent": [], "details": [], "recorded": [text]}


def _judge_limits(claim, run):
    limits = [e for e in run.experiments if e["kind"] == "limit"
              and any(a["median"] is not None for p in e["points"] for a in p["arms"])]
    placed = []
    for e in run.experiments:
        for p in e["points"]:
            for a in p["arms"]:
                if a["percent_of_limit"] is not None and a["limit"]:
                    counter = f"{a['limit']['counter']} " if a["limit"].get("counter") else ""
                    flag = "DEFECT " if a.get("limit_defect") else ""  # above its limit: never a plain figure
                    placed.append(f"{a['benchmark'] or e['name']}: {flag}{counter}{a['percent_of_limit']:.0f} % of "
                                  f"{a['limit']['benchmark']}")
    # Comparisons that say they test this claim (e.g. the BLAS kernel choice) are shown beside it.
    measured, missing = [], []
    for e in run.experiments:
        if e["claim"] == claim["id"] and e["kind"] != "limit":
            m, n = _check_rows({"experiment": e["name"], "test": "better", "threshold": 1.0}, [e], claim)
            measured += m
            missing += n
    if not limits:
        return {"verdict": NOT_RUN, "why": "no machine limit was measured in this run", "measured": measured,
                "missing": missing, "absent": [], "details": [], "recorded": []}
    why = (f"{len(limits)} limit experiment(s) measured ({', '.join(e['name'] for e in limits)}); "
           f"{len(placed)} result(s) placed against them")
    return {"verdict": RECORDED, "why": why, "measured": measured, "missing": missing, "absent": [], "details": [],
            "recorded": placed}


def judge_all(claims_doc, run):
    """One result per claim: the catalogue entry plus verdict, why, measured rows, not-run rows."""
    out = []
    for claim in claims_doc["claims"]:
        kind = claim.get("verdict", {}).get("kind", "ratio")
        if kind == "environment":
            res = _judge_environment(claim, run)
        elif kind == "limits":
            res = _judge_limits(claim, run)
        else:
            res = _judge_ratio_claim(claim, run)
        res.setdefault("recorded", [])
        res.setdefault("excluded", [])
        res.setdefault("analogue_only", False)
        for m in res["measured"]:
            m.setdefault("analogue", "")
        res["claim"] = claim
        out.append(res)
    return out


def finite(x):
    return x is not None and math.isfinite(x)
