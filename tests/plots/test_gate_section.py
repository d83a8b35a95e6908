"""The report's gate section (`report.py --gate FILE`, the gate's JSON as `pairbench gate --json`
writes it): each regression's function diff as a small table, a regression without one says why,
strings stay inert, and a malformed gate file is one line naming the field, exit 2."""
import json
import os
import unittest

from helpers import CPU_RUN_SKIPPED, judged, parse_page, run_report, tmpdir

GATE = {
    "headline": "1 regression, 0 undecided, 3 unchanged (+ 0 improvements, 0 broken, 0 new, 0 missing)",
    "outcome": "regression",
    "exit_status": 1,
    "baseline": "a.json",
    "current": "b.json",
    "benchmarks": [
        {
            "name": "timing.work/steps/work:1000",
            "instrument": "instructions",
            "verdict": "regression",
            "slowdown": 1.62,
            "function_diff_total_change": 10012.0,
            "function_diff_note": "",
            "function_diff": [
                {
                    "function": "pairbench::bench::injected_work_loop(unsigned long)",
                    "baseline": 0.0,
                    "current": 10000.0,
                    "change": 10000.0,
                    "baseline_bound": True,
                    "current_bound": False,
                },
                {
                    "function": "<script>alert(1)</script>",
                    "baseline": 12.0,
                    "current": 24.0,
                    "change": 12.0,
                    "baseline_bound": False,
                    "current_bound": False,
                },
            ],
        },
        {
            "name": "timing.work/steps/work:1000",
            "instrument": "time",
            "verdict": "regression",
            "slowdown": 1.5,
            "function_diff": [],
            "function_diff_note": "function diff: under its [instructions] row",
        },
        {
            "name": "dispatch.sync_vs_async/async/ops:10",
            "instrument": "time",
            "verdict": "regression",
            "slowdown": 0.2,
            "function_diff": [],
            "function_diff_note": "no function diff: no instruction counts: its experiment declares them not meaningful (time only)",
        },
        {
            "name": "same",
            "instrument": "time",
            "verdict": "unchanged",
            "slowdown": 0.0,
            "function_diff": [],
            "function_diff_note": "",
        },
    ],
}


class GateSection(unittest.TestCase):
    def write(self, doc):
        path = os.path.join(tmpdir(self), "gate.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        return path

    def test_regressions_show_their_function_diff_or_why_not(self):
        out = tmpdir(self)
        rc, _, stderr = run_report("--run", judged(self, CPU_RUN_SKIPPED), "--gate", self.write(GATE), "-o", out)
        self.assertEqual(rc, 0, stderr)
        text, page = parse_page(os.path.join(out, "index.html"))
        self.assertIn('<section id="gate">', text)
        self.assertIn(GATE["headline"], text)
        self.assertIn("pairbench::bench::injected_work_loop(unsigned long)", text)
        self.assertIn("≤0.0", text)
        self.assertIn("+10,000", text)
        self.assertIn("its experiment declares them not meaningful (time only)", text)
        self.assertNotIn("<script>", text)  # escaped
        self.assertNotIn("script", page.tags)
        self.assertNotIn("same</h3>", text)  # unchanged rows are not listed
        self.assertLess(text.index("injected_work_loop"), text.index("&lt;script&gt;"))  # the gate's order

    def test_what_each_benchmark_was_gated_at_and_the_confirmation(self):
        gate = json.loads(json.dumps(GATE))
        gate["benchmarks"][3].update(
            {"gated_at": 0.123, "threshold": 0.05, "slowdown_low": -0.05, "slowdown_high": 0.06, "suspect": False}
        )
        gate["benchmarks"][1].update(
            {"gated_at": 0.05, "threshold": 0.05, "slowdown_low": 1.2, "slowdown_high": 1.8, "suspect": True}
        )
        confirmation = {
            "seconds": 42.0,
            "baseline_build": "abc123",
            "regressions": [
                {
                    "benchmark": "timing.work/steps/work:1000",
                    "instrument": "time",
                    "why": "confirmed: regression +50.0% in one run of both builds",
                }
            ],
            "cleared": [{"benchmark": "<b>x</b>", "instrument": "time", "why": "cleared: unchanged"}],
            "unresolved": [],
        }
        path = os.path.join(tmpdir(self), "confirmed.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(confirmation, f)
        out = tmpdir(self)
        rc, _, stderr = run_report(
            "--run", judged(self, CPU_RUN_SKIPPED), "--gate", self.write(gate), "--confirmation", path, "-o", out
        )
        self.assertEqual(rc, 0, stderr)
        text, _ = parse_page(os.path.join(out, "index.html"))
        self.assertIn("1 of 2 time benchmarks were gated at their threshold; 1 at their resolution", text)
        self.assertIn("±12.3 %", text)
        self.assertIn("<b>1 confirmed</b>, 1 cleared, 0 unresolved", text)
        self.assertIn("confirmed: regression +50.0% in one run of both builds", text)
        self.assertNotIn("<b>x</b>", text)  # escaped
        # A confirmation without its gate, or of the wrong shape: one line, exit 2.
        rc, _, stderr = run_report("--run", judged(self, CPU_RUN_SKIPPED), "--confirmation", path, "-o", tmpdir(self))
        self.assertEqual(rc, 2, stderr)
        self.assertIn("--confirmation: needs --gate", stderr)
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"regressions": [{"benchmark": 3}]}, f)
        rc, _, stderr = run_report(
            "--run",
            judged(self, CPU_RUN_SKIPPED),
            "--gate",
            self.write(gate),
            "--confirmation",
            path,
            "-o",
            tmpdir(self),
        )
        self.assertEqual(rc, 2, stderr)
        self.assertIn("regressions[0].benchmark: expected a string", stderr)

    def test_without_a_gate_there_is_no_gate_section(self):
        out = tmpdir(self)
        rc, _, stderr = run_report("--run", judged(self, CPU_RUN_SKIPPED), "-o", out)
        self.assertEqual(rc, 0, stderr)
        text, _ = parse_page(os.path.join(out, "index.html"))
        self.assertNotIn('id="gate"', text)

    def test_a_malformed_gate_file_is_one_line_naming_the_field(self):
        bad = json.loads(json.dumps(GATE))
        bad["benchmarks"][0]["function_diff"][1]["change"] = "twelve"
        path = self.write(bad)
        rc, _, stderr = run_report("--run", CPU_RUN_SKIPPED, "--gate", path, "-o", tmpdir(self))
        self.assertEqual(rc, 2)
        self.assertEqual(
            stderr.strip(), f"report: {path}: benchmarks[0].function_diff[1].change: expected a number, " 'is "twelve"'
        )
        rc, _, stderr = run_report("--run", CPU_RUN_SKIPPED, "--gate", self.write([1]), "-o", tmpdir(self))
        self.assertEqual(rc, 2)
        self.assertIn("(top level): expected an object", stderr)


if __name__ == "__main__":
    unittest.main()
