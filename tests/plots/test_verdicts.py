"""The report draws the harness's claim verdicts (`pairbench.claims`) and never decides one: the
claims catalogue it reads for seeds and quoted figures (the one pairbench embeds, `pairbench list
--format claims-json`, passed as --claims; report.py has no default path into the source tree), a
stored verdict shown as stored even where the data would say otherwise, a run file without
verdicts shown as not judged, and `pairbench report` judging such a file first. The rules
themselves are tested in tests/harness/claims_test.cpp."""
import json
import os
import re
import unittest

from helpers import CPU_RUN_SKIPPED, REPO, pairbench, parse_page, run_report, tmpdir
from pairbench_report import claims
from pairbench_report.errors import BadInput

CATALOGUE = os.path.join(REPO, "harness", "analysis", "claims.json")


def c3_row(doc):
    """C3's stored verdict in a run file judged by the harness."""
    return next(c for c in doc["pairbench"]["claims"] if c["id"] == "C3")


class Catalogue(unittest.TestCase):
    def test_every_claim_is_there_with_its_fields(self):
        doc = claims.load_claims(CATALOGUE)
        ids = [c["id"] for c in doc["claims"]]
        self.assertEqual(ids, [f"C{n}" for n in range(1, 21)])
        for c in doc["claims"]:
            for field in (
                "claim",
                "seed",
                "section",
                "baseline_vs_treatment",
                "cpu",
                "gpu",
                "quoted_figures",
                "experiments",
                "verdict",
            ):
                self.assertIn(field, c, f"{c['id']} lacks {field}")
            self.assertIn(c["verdict"]["kind"], ("ratio", "environment", "limits"))
            # The rules are the experiments' own (bench/*/*.cpp `verdict`): never stated twice.
            self.assertNotIn("checks", c["verdict"], c["id"])
            for q in c["quoted_figures"]:
                self.assertIsInstance(q["text"], str)

    def test_quoted_figures_are_attached(self):
        doc = {c["id"]: c for c in claims.load_claims(CATALOGUE)["claims"]}
        text = {k: " ".join(q["text"] for q in c["quoted_figures"]) for k, c in doc.items()}
        for cid, figure in (
            ("C3", "1.4076"),
            ("C3", "1.1700"),
            ("C2", "0.0155"),
            ("C2", "0.0727"),
            ("C19", "2.2001"),
            ("C19", "0.0039"),
            ("C10", "16×"),
            ("C10", "3–8×"),
            ("C15", "4–6×"),
            ("C18", "80 %"),
        ):
            self.assertIn(figure, text[cid])

    def test_current_experiments_are_named(self):
        doc = {c["id"]: c for c in claims.load_claims(CATALOGUE)["claims"]}
        for cid, name in (
            ("C1", "dispatch.enqueue_vs_complete"),
            ("C2", "dispatch.barriers"),
            ("C3", "dispatch.sync_vs_async"),
            ("C7", "dispatch.readback_in_loop"),
        ):
            self.assertIn(name, [e["name"] for e in doc[cid]["experiments"]])

    def test_bad_catalogue_is_bad_input(self):
        path = os.path.join(tmpdir(self), "claims.json")
        with open(path, "w") as f:
            json.dump({"claims": [{"id": "C1", "claim": "x", "experiments": [{"title": "a"}]}]}, f)
        with self.assertRaises(BadInput) as ctx:
            claims.load_claims(path)
        self.assertIn("claims[0].experiments[0].name", str(ctx.exception))


class DrawsTheHarnesssVerdict(unittest.TestCase):
    def judged_copy(self, verdict, detail):
        """run_cpu_a.json judged by the harness, then C3's stored verdict overwritten."""
        work = tmpdir(self)
        path = os.path.join(work, "judged.json")
        rc, _, stderr = pairbench("summarise", "--run", CPU_RUN_SKIPPED, "--out", path)
        self.assertEqual(rc, 0, stderr)
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
        c3 = c3_row(doc)
        computed = c3["verdict"]
        c3["verdict"], c3["detail"] = verdict, detail
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        return path, computed

    def catalogue(self):
        """The catalogue pairbench embeds, as `pairbench report` hands it to report.py."""
        rc, stdout, stderr = pairbench("list", "--format", "claims-json")
        self.assertEqual(rc, 0, stderr)
        path = os.path.join(tmpdir(self), "claims.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(stdout)
        return path

    def render(self, path, *extra):
        out = tmpdir(self)
        rc, _, stderr = run_report("--run", path, *extra, "-o", out)
        self.assertEqual(rc, 0, stderr)
        text, _ = parse_page(os.path.join(out, "index.html"))
        return text

    def test_a_stored_verdict_is_shown_even_where_the_data_says_otherwise(self):
        path, computed = self.judged_copy("did not hold", "STORED BY THE HARNESS")
        self.assertNotEqual(computed, "did not hold")  # what the rules give on this file
        text = self.render(path)
        row = re.search(r'<tr id="claim-C3">.*?</tr>', text, re.S).group(0)
        self.assertIn('<span class="verdict v-did-not-hold">did not hold</span>', row)
        self.assertIn("STORED BY THE HARNESS", row)
        self.assertNotIn(f">{computed}</span>", row)

    def test_a_run_file_without_verdicts_is_drawn_not_judged(self):
        text = self.render(CPU_RUN_SKIPPED, "--claims", self.catalogue())
        for n in range(1, 21):
            row = re.search(rf'<tr id="claim-C{n}">.*?</tr>', text, re.S).group(0)
            self.assertIn(">not judged</span>", row)
            self.assertIn("pairbench report", row)
        # Without a catalogue there is nothing to list: the page says so and how to get one.
        text = self.render(CPU_RUN_SKIPPED)
        self.assertNotIn('<tr id="claim-C', text)
        self.assertIn("No claims to show", text)

    def test_without_a_catalogue_the_run_files_claims_stand_alone(self):
        path, _ = self.judged_copy("did not hold", "STORED BY THE HARNESS")
        text = self.render(path)
        row = re.search(r'<tr id="claim-C3">.*?</tr>', text, re.S).group(0)
        self.assertIn("STORED BY THE HARNESS", row)
        self.assertIn("not in the claims catalogue given", row)  # no seed or quoted figures to show
        with_catalogue = re.search(
            r'<tr id="claim-C3">.*?</tr>', self.render(path, "--claims", self.catalogue()), re.S
        ).group(0)
        self.assertIn("1.4076", with_catalogue)  # C3's quoted figure
        self.assertIn("seed ", with_catalogue)

    def test_the_catalogue_pairbench_embeds_is_harness_claims_json(self):
        with open(self.catalogue(), encoding="utf-8") as f:
            embedded = json.load(f)
        with open(CATALOGUE, encoding="utf-8") as f:
            self.assertEqual(embedded, json.load(f))

    def test_pairbench_report_judges_an_old_run_file_before_drawing(self):
        out = tmpdir(self)
        rc, stdout, stderr = pairbench("report", "--run", CPU_RUN_SKIPPED, "-o", out, timeout=300)
        self.assertEqual(rc, 0, stderr)
        text, _ = parse_page(os.path.join(out, "index.html"))
        self.assertNotIn(">not judged</span>", text)
        self.assertRegex(text, r'id="claim-C17".*?not testable here.*?no CUDA device')
        # The judged copy it handed to report.py is gone; the run file itself is untouched.
        with open(CPU_RUN_SKIPPED, encoding="utf-8") as f:
            self.assertNotIn("claims", json.load(f)["pairbench"])


if __name__ == "__main__":
    unittest.main()
