"""The index page's table of regressions tracked until fixed (`pairbench regressions`), from the
history export: open and acknowledged ones (with the reason), the recently fixed (with why), text
from the export escaped; an export from before regressions were tracked still renders, and a
malformed regression is refused naming its field."""
import json
import os
import re
import unittest

from helpers import CPU_RUN_DISPATCH, judged, parse_page, run_report, tmpdir
import make_history_export

MACHINE = "343b40c11781b539"


class RegressionsTable(unittest.TestCase):
    def render(self, doc):
        work = tmpdir(self)
        export = os.path.join(work, "export.json")
        with open(export, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        out = os.path.join(work, "report")
        rc, stdout, stderr = run_report("--run", judged(self, CPU_RUN_DISPATCH), "--history-export", export, "-o", out)
        return rc, stderr, (parse_page(os.path.join(out, "index.html"))[0] if rc == 0 else "")

    def section(self, text):
        match = re.search(r'<section id="regressions">(.*?)</section>', text, re.S)
        self.assertIsNotNone(match, "no regressions section")
        return match.group(1)

    def test_open_acknowledged_and_recently_fixed(self):
        rc, stderr, text = self.render(make_history_export.build(MACHINE))
        self.assertEqual(rc, 0, stderr)
        self.assertIn('href="#regressions"', text)
        s = self.section(text)
        self.assertIn("Open and acknowledged: 2", s)
        active, fixed = s.split("Recently fixed")
        # Open first, then acknowledged; the reason shown, escaped.
        self.assertLess(active.index("r-open"), active.index("r-acknowledged"))
        self.assertIn("dispatch.sync_vs_async/sync/device:cpu/ops:10000", active)
        self.assertIn("+18.0 %", active)
        self.assertIn("01aaaaaaaa</code>..<code>01bbbbbbbb", active)  # the commit range, short
        self.assertIn("culprit <code>c0ffee0000</code>", active)  # or the culprit a bisection named
        self.assertIn("&lt;b&gt;expected&lt;/b&gt;: the new kernel trades latency for safety", active)
        self.assertNotIn("<b>expected</b>", s)
        self.assertIn("(6×)", active)
        self.assertIn("the latest 1 of 1", fixed)
        self.assertIn("dispatch.readback_in_loop/readback_every_step/device:cpu/steps:1000", fixed)
        self.assertIn("fixed 2026-11-12", fixed)
        self.assertIn("level returned", fixed)

    def test_none_open(self):
        doc = make_history_export.build(MACHINE)
        doc["regressions"] = [r for r in doc["regressions"] if r["state"] == "fixed"]
        rc, stderr, text = self.render(doc)
        self.assertEqual(rc, 0, stderr)
        self.assertIn("No open or acknowledged regressions", self.section(text))

    def test_export_from_before_regressions_were_tracked(self):
        doc = make_history_export.build(MACHINE)
        del doc["regressions"]
        rc, stderr, text = self.render(doc)
        self.assertEqual(rc, 0, stderr)
        self.assertIn("written before regressions were tracked", self.section(text))

    def test_malformed_regression_is_refused_naming_the_field(self):
        for key, value, expected in (
            ("state", "closed", "regressions[1].state: expected one of"),
            ("change", "big", "regressions[1].change: expected a finite number or null"),
            ("first_seen_at", "yesterday", "regressions[1].first_seen_at: expected an ISO 8601"),
        ):
            doc = make_history_export.build(MACHINE)
            doc["regressions"][1][key] = value
            rc, stderr, _ = self.render(doc)
            self.assertEqual(rc, 2, stderr)
            self.assertIn(expected, stderr)
            self.assertEqual(len(stderr.strip().splitlines()), 1, stderr)


if __name__ == "__main__":
    unittest.main()
