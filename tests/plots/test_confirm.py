"""The nightly's confirmation policy (plots/pairbench_report/confirm.py), on synthetic gate JSON
whose answer is known, both ways: which suspects are measured again (regressions and undecided
first, then by p-value, at most the cap), and what the ab makes of each (confirmed, cleared,
unresolved, not measured); the night fails only on a confirmed regression; bad input is one line
and exit 2."""
import json
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "plots"))
from pairbench_report import confirm  # noqa: E402


def row(name, verdict, suspect=True, slowdown=0.1, p_value=0.5, instrument="time"):
    return {"name": name, "instrument": instrument, "experiment": name.split("/")[0], "verdict": verdict,
            "note": "", "suspect": suspect, "slowdown": slowdown, "slowdown_low": slowdown - 0.05,
            "slowdown_high": slowdown + 0.05, "p_value": p_value, "p_adjusted": p_value}


def gate_doc(rows, base="aaaa", cur="bbbb"):
    return {"headline": "", "exit_status": 0, "baseline_build": base, "current_build": cur, "benchmarks": rows}


class Confirmation(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="pairbench-confirm-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def write(self, name, doc):
        path = os.path.join(self.dir, name)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        return path

    def test_regressions_and_undecided_first_then_by_p_value_up_to_the_cap(self):
        path = self.write("gate.json", gate_doc([
            row("e.x/a", "not_gated", p_value=0.01), row("e.x/b", "undecided", p_value=0.9),
            row("e.x/c", "unchanged", p_value=0.2), row("e.x/d", "unchanged", suspect=False),
            row("e.x/e", "regression", p_value=0.001)]))
        gate = confirm.read_rows(path)
        self.assertEqual(confirm.select_suspects(gate, 10), ["e.x/a", "e.x/b", "e.x/c", "e.x/e"])
        self.assertEqual(confirm.select_suspects(gate, 3), ["e.x/a", "e.x/b", "e.x/e"])  # c has the weakest p
        self.assertEqual(confirm.select_suspects(gate, 0), [])
        self.assertEqual(confirm.anchored(["e.x/a(1)"]), r"^(?:e\.x/a\(1\))$")

    def test_the_ab_confirms_clears_or_leaves_each_suspect_unresolved(self):
        night = confirm.read_rows(self.write("gate.json", gate_doc([
            row("e.x/slow", "not_gated", slowdown=0.4), row("e.x/noise", "undecided"),
            row("e.x/wobbly", "unchanged"), row("e.x/gone", "undecided"), row("e.x/quiet", "unchanged", suspect=False)])))
        ab = confirm.read_rows(self.write("confirm.json", gate_doc([
            row("e.x/slow", "regression", slowdown=0.38), row("e.x/noise", "unchanged", slowdown=0.01),
            row("e.x/wobbly", "undecided"), row("e.x/quiet", "regression")])))
        out = confirm.classify(night, ab, 15)
        self.assertEqual([r["benchmark"] for r in out["regressions"]], ["e.x/slow"])
        self.assertIn("confirmed: regression +38.0%", out["regressions"][0]["why"])
        self.assertIn("night: not_gated +40.0%", out["regressions"][0]["why"])
        self.assertEqual([r["benchmark"] for r in out["cleared"]], ["e.x/noise"])
        self.assertEqual(sorted(r["benchmark"] for r in out["unresolved"]), ["e.x/gone", "e.x/wobbly"])
        self.assertIn("not measured by the ab", next(r for r in out["unresolved"] if r["benchmark"] == "e.x/gone")["why"])
        self.assertEqual(out["baseline_git_sha"], "aaaa")
        # Not a suspect in the night: never confirmed, whatever the ab says of it.
        self.assertNotIn("e.x/quiet", [r["benchmark"] for kind in ("regressions", "cleared", "unresolved") for r in out[kind]])

    def test_the_command_fails_the_night_only_on_a_confirmed_regression(self):
        self.write("gate.json", gate_doc([row("e.x/a", "undecided")], base="aaaa-dirty"))
        self.write("confirm.json", gate_doc([row("e.x/a", "unchanged")]))
        self.assertEqual(confirm.main(["classify", self.dir, "1", "12"]), 0)
        with open(os.path.join(self.dir, "confirmed.json"), encoding="utf-8") as f:
            done = json.load(f)
        self.assertEqual(done["baseline_git_sha"], "aaaa")
        self.assertEqual(len(done["cleared"]), 1)
        with open(os.path.join(self.dir, "confirmation.md"), encoding="utf-8") as f:
            self.assertIn("**0 confirmed**, 1 cleared, 0 unresolved", f.read())
        self.write("confirm.json", gate_doc([row("e.x/a", "regression")]))
        self.assertEqual(confirm.main(["classify", self.dir, "1", "12"]), 1)

    def test_bad_input_is_one_line_and_exit_2(self):
        path = self.write("gate.json", {"benchmarks": [{"name": 3, "verdict": "unchanged"}]})
        self.assertEqual(confirm.main(["select", path, "5"]), 2)
        self.assertEqual(confirm.main(["select", os.path.join(self.dir, "absent.json"), "5"]), 2)
        self.assertEqual(confirm.main(["unknown"]), 2)


if __name__ == "__main__":
    unittest.main()
