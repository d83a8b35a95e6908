"""The claims of one run file, for drawing: the verdicts the harness judged (`pairbench.claims`,
written by harness/analysis/claims.cpp, with each claim's text) beside the claims catalogue's seeds and
quoted figures (harness/analysis/claims.json, compiled into pairbench: `pairbench report` passes it as
--claims, `pairbench list --format claims-json` prints it). Nothing here decides a verdict; a run
file written before the harness judged claims shows each claim of the catalogue as not judged, and
`pairbench report` (which judges it first) draws it whole.
"""
import json

from .errors import BadInput

HELD = "held"
NOT_HELD = "did not hold"
INCONCLUSIVE = "inconclusive"
NOT_RUN = "not run here"
RECORDED = "recorded"
NOT_TESTABLE = "not testable here"
NOT_JUDGED = "not judged"

NOT_JUDGED_WHY = (
    "this run file has no verdicts (written before the harness judged claims): `pairbench report "
    "--run FILE` judges it before drawing, `pairbench summarise --run FILE --out FILE` stores them"
)


def load_claims(path):
    """claims.json: each claim's text, seed and quoted figures (the rules are the experiments')."""
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
        if not isinstance(c.get("quoted_figures", []), list):
            raise BadInput(f"{path}: field claims[{i}].quoted_figures: expected a list")
        for j, x in enumerate(c.get("experiments", [])):
            if not isinstance(x, dict) or not isinstance(x.get("name"), str):
                raise BadInput(f"{path}: field claims[{i}].experiments[{j}].name: expected a string")
    return doc


def point_label(params, axes):
    keys = [a for a in axes if a in params] + [k for k in params if k not in axes]
    return " ".join(f"{k}:{params[k]}" for k in keys) or "(single point)"


def _strings(value):
    return [str(x) for x in value] if isinstance(value, list) else []


def _row(raw):
    row = {
        k: raw.get(k)
        for k in (
            "experiment",
            "point",
            "treatment",
            "baseline",
            "ratio",
            "ci_low",
            "ci_high",
            "confidence",
            "verdict",
            "why",
            "test",
        )
    }
    row["analogue"] = raw.get("analogue") or ""
    return row


def stored_results(catalogue, run):
    """One entry per claim, as the page draws it: the catalogue entry (`claim`) and the harness's
    verdict, its one-line why, measured rows, rows not run here, and what was recorded or excluded.
    Without a catalogue (None) the run file's claims stand alone: their id and text, no seed or figures."""
    by_id = {c["id"]: c for c in catalogue["claims"]} if catalogue else {}
    if run.claims is None:
        if not catalogue:
            return []
        return [
            {
                "claim": c,
                "verdict": NOT_JUDGED,
                "why": NOT_JUDGED_WHY,
                "measured": [],
                "missing": [],
                "absent": [],
                "excluded": [],
                "recorded": [],
                "details": [],
                "analogue_only": False,
            }
            for c in catalogue["claims"]
        ]
    out = []
    for stored in run.claims:
        entry = by_id.get(stored["id"]) or {"id": stored["id"], "claim": stored.get("claim", ""), "uncatalogued": True}
        out.append(
            {
                "claim": entry,
                "verdict": stored["verdict"],
                "why": stored.get("detail", ""),
                "measured": [_row(r) for r in stored.get("rows", []) if isinstance(r, dict)],
                "missing": [r for r in stored.get("not_run", []) if isinstance(r, dict)],
                "absent": _strings(stored.get("absent")),
                "excluded": _strings(stored.get("excluded")),
                "recorded": _strings(stored.get("recorded")),
                "details": _strings(stored.get("details")),
                "analogue_only": bool(stored.get("analogue", False)),
            }
        )
    return out
