"""Every string from a run file is escaped in the HTML and drawn as plain text in the figures:
benchmark, arm and experiment names with <script>, quotes, `$` (mathtext) and path separators."""
import json
import os
import unittest
from xml.etree import ElementTree

from helpers import CPU_RUN_SKIPPED, parse_page, run_report, tmpdir

PAYLOAD = '<script>alert("pb")</script>'
ATTR_BREAK = '"><img src=x onerror=alert(1)>'


def hostile_run(path):
    """run_cpu_a.json with hostile strings in every field the report shows."""
    with open(CPU_RUN_SKIPPED, encoding="utf-8") as f:
        doc = json.load(f)
    pb = doc["pairbench"]
    doc["fixture_note"] = f"note {PAYLOAD}"
    pb["environment"]["cpu_model"] = f"CPU {ATTR_BREAK}"
    pb["environment"]["warnings"].append(f"warning {PAYLOAD} & 'quotes'")
    pb["environment"]["machine_key"] = f"key{ATTR_BREAK}"
    exp = pb["experiments"][0]
    old_name = exp["name"]
    exp["name"] = f"dispatch.{PAYLOAD}/../../x"
    exp["question"] = f"Costs $5 and $x^2$ {ATTR_BREAK} {PAYLOAD}?"
    exp["claim"] = f"C3{ATTR_BREAK}"
    for p in exp["points"]:
        p["params"] = {k: f"{v}{PAYLOAD}" for k, v in p["params"].items()}
        for a in p["arms"]:
            a["arm"] = f"{a['arm']}{ATTR_BREAK}" if a["role"] == "baseline" else f"_{a['arm']}'\"$"
            a["benchmark"] = a["benchmark"].replace(old_name, exp["name"]) + f"/x:{PAYLOAD}"
            if "reason" in a:
                a["reason"] = f"{a['reason']} {PAYLOAD}"
        for r in p["ratios"]:
            r["treatment"] = next(a["arm"] for a in p["arms"] if a["role"] == "treatment")
        for t in p["targets"]:
            t["text"] = f"target {PAYLOAD}"
    for n in pb["not_run"]:
        n["name"] = n["name"] + PAYLOAD
        n["reason"] = f"{n['reason']} {ATTR_BREAK}"
    # The harness's verdicts as the run file stores them: every string drawn from them too.
    pb["claims"] = [
        {
            "id": f"C3{ATTR_BREAK}",
            "claim": f"claim {PAYLOAD}",
            "verdict": "held",
            "detail": f"why {ATTR_BREAK}",
            "analogue": True,
            "experiments": [exp["name"]],
            "rows": [
                {
                    "experiment": exp["name"],
                    "point": f"n:{PAYLOAD}",
                    "treatment": ATTR_BREAK,
                    "baseline": "b",
                    "ratio": 2.0,
                    "ci_low": 1.5,
                    "ci_high": 2.5,
                    "confidence": 0.95,
                    "verdict": "held",
                    "why": PAYLOAD,
                    "test": "better",
                    "analogue": f"argument {PAYLOAD}",
                }
            ],
            "not_run": [],
            "absent": [f"absent {PAYLOAD}"],
            "excluded": [f"excluded {ATTR_BREAK}"],
            "recorded": [f"recorded {PAYLOAD}"],
            "details": [],
        }
    ]
    for b in doc["benchmarks"]:
        if b.get("experiment") == old_name:
            b["experiment"] = exp["name"]
            b["name"] = b["name"].replace(old_name, exp["name"], 1)  # a name starts with its experiment
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return path


class Escaping(unittest.TestCase):
    def test_hostile_strings_render_inert(self):
        work = tmpdir(self)
        run = hostile_run(os.path.join(work, "hostile.json"))
        out = os.path.join(work, "report")
        rc, _, stderr = run_report("--run", run, "-o", out)
        self.assertEqual(rc, 0, stderr)
        text, page = parse_page(os.path.join(out, "index.html"))
        # No markup from the run file made it into the page.
        self.assertNotIn("script", page.tags)
        self.assertNotIn("iframe", page.tags)
        for tag, attr, value in page.attributes:
            self.assertFalse(attr.startswith("on"), f"event handler attribute on <{tag}>: {attr}={value}")
        for src in page.images:
            self.assertRegex(src, r"^fig\d\d-[A-Za-z0-9._-]+\.png$")
        self.assertNotIn(PAYLOAD, text)
        self.assertNotIn(ATTR_BREAK, text)
        # ... but the strings are shown, escaped, as text.
        self.assertIn("&lt;script&gt;alert(&quot;pb&quot;)&lt;/script&gt;", text)
        visible = "".join(page.text)
        self.assertIn(PAYLOAD, visible)
        self.assertIn("Costs $5 and $x^2$", visible)
        # Figure files stay inside the output folder, with safe names.
        for name in os.listdir(out):
            self.assertRegex(name, r"^(index\.html|fig\d\d-[A-Za-z0-9._-]+\.(png|svg))$")
        self.assertEqual(sorted(os.listdir(work)), ["hostile.json", "report"])
        # SVG text is escaped XML: the payload is text there too, never an element or an attribute.
        for name in os.listdir(out):
            if name.endswith(".svg"):
                root = ElementTree.parse(os.path.join(out, name)).getroot()
                for el in root.iter():
                    tag = el.tag.rsplit("}", 1)[-1]
                    self.assertNotIn(tag, ("script", "img", "foreignObject", "iframe"), name)
                    for attr in el.attrib:
                        self.assertFalse(attr.rsplit("}", 1)[-1].startswith("on"), f"{name}: {attr}")


if __name__ == "__main__":
    unittest.main()
