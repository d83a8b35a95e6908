"""Figures above their machine limit: a measurement defect, flagged in the run-file reader, the
points table and the rendered report, never shown as a plain percentage (the limits claim's DEFECT:
tests/harness/claims_test.cpp)."""
import os
import re
import unittest

from helpers import HERE, parse_page, run_report, tmpdir
from pairbench_report import page
from pairbench_report.runfile import RunFile, load_run

# The reference quick run's copy.stores and limits.memory_bandwidth, written before a limit was
# the best of several candidates: plain 113 % and nontemporal 142 % of one core's memcpy.
ABOVE_MEMCPY = os.path.join(HERE, "data", "run_limit_above_memcpy.json")
LIMIT = "limits.bw/memcpy/threads:1"


def arm(name, median, percent=None, defect=None):
    a = {
        "arm": name,
        "role": "treatment",
        "benchmark": f"demo.exp/{name}/n:1",
        "verification": "passed",
        "median": median,
        "samples": 3,
    }
    if percent is not None:
        a["percent_of_limit"] = percent
        a["limit"] = {"benchmark": LIMIT, "median": 40e9}
    if defect:
        a["limit_defect"] = defect
    return a


def run_with(arms):
    exp = {
        "name": "demo.exp",
        "claim": "",
        "kind": "comparison",
        "metric": "bytes_per_second",
        "unit": "B/s",
        "better": "higher",
        "points": [{"params": {"n": "1"}, "arms": arms, "ratios": []}],
    }
    limit = {
        "name": "limits.bw",
        "claim": "",
        "kind": "limit",
        "metric": "bytes_per_second",
        "unit": "B/s",
        "better": "higher",
        "points": [
            {
                "params": {"threads": "1"},
                "ratios": [],
                "arms": [
                    {
                        "arm": "memcpy",
                        "role": "limit",
                        "benchmark": LIMIT,
                        "verification": "passed",
                        "median": 40e9,
                        "samples": 3,
                    }
                ],
            }
        ],
    }
    return RunFile("test.json", {"benchmarks": [], "pairbench": {"environment": {}, "experiments": [exp, limit]}})


class Reader(unittest.TestCase):
    def test_defect_text_from_the_harness_or_judged_from_an_old_file(self):
        harness_text = f"measured 122 % of {LIMIT}: a limit must be the best this machine can do"
        run = run_with(
            [
                arm("flagged", 48.8e9, 122.0, harness_text),
                arm("old_file", 48.8e9, 122.0),  # written before limit_defect existed
                arm("within_margin", 41.6e9, 104.0),
                arm("no_limit", 10e9),
            ]
        )
        arms = {a["arm"]: a for a in run.experiments[0]["points"][0]["arms"]}
        self.assertEqual(arms["flagged"]["limit_defect"], harness_text)
        self.assertEqual(arms["old_file"]["limit_defect"], harness_text)  # the same words either way
        self.assertEqual(arms["within_margin"]["limit_defect"], "")
        self.assertEqual(arms["no_limit"]["limit_defect"], "")


class Shown(unittest.TestCase):
    def points_html(self, run):
        p = page.Page(tmpdir(self))
        page.points_table(p, run.experiments[0], run)
        return "".join(p.parts)

    def test_points_table_shows_defect_not_a_plain_percentage(self):
        html = self.points_html(run_with([arm("over", 48.8e9, 122.0), arm("under", 36e9, 90.0)]))
        self.assertIn("DEFECT 122 % of limit", html)
        self.assertIn("a limit must be the best this machine can do", html)
        self.assertNotRegex(html, r'<td class="num">122 %')
        self.assertRegex(html, r'<td class="num">90 %')

    def test_reference_run_figures_above_one_core_memcpy_are_flagged_in_the_report(self):
        run = load_run(ABOVE_MEMCPY)
        stores = run.experiment_by_name["copy.stores"]
        flagged = {
            a["arm"]: round(a["percent_of_limit"]) for p in stores["points"] for a in p["arms"] if a["limit_defect"]
        }
        self.assertEqual(flagged, {"plain": 113, "nontemporal": 142})
        out = tmpdir(self)
        rc, _, stderr = run_report("--run", ABOVE_MEMCPY, "-o", out)
        self.assertEqual(rc, 0, stderr)
        text, _ = parse_page(os.path.join(out, "index.html"))
        self.assertIn("DEFECT 113 % of limit", text)
        self.assertIn("DEFECT 142 % of limit", text)
        self.assertIsNone(re.search(r'<td class="num">1(13|42) %', text))
        # The bandwidth figure names the defect in its legend (SVG text), not an "up to 142 %".
        svg = next(name for name in os.listdir(out) if "copy.stores-metric" in name and name.endswith(".svg"))
        with open(os.path.join(out, svg), encoding="utf-8") as f:
            figure = f.read()
        self.assertIn("DEFECT", figure)
        self.assertNotIn("up to 142", figure)


if __name__ == "__main__":
    unittest.main()
