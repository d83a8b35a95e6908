"""Bad input: exit status 2 and one line on stderr naming the file and the field; nothing else."""
import json
import os
import unittest

from helpers import CPU_RUN_SKIPPED, run_report, tmpdir


class BadInput(unittest.TestCase):
    def setUp(self):
        self.work = tmpdir(self)
        self.out = os.path.join(self.work, "out")

    def write(self, name, text):
        path = os.path.join(self.work, name)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def run_file(self, mutate):
        with open(CPU_RUN_SKIPPED, encoding="utf-8") as f:
            doc = json.load(f)
        mutate(doc)
        return self.write("mutated.json", json.dumps(doc))

    def assert_bad(self, args, *expected):
        rc, stdout, stderr = run_report(*args)
        self.assertEqual(rc, 2, f"stdout={stdout!r} stderr={stderr!r}")
        line = stderr.strip()
        self.assertNotIn("\n", line, "more than one line on stderr")
        self.assertNotIn("Traceback", stderr)
        self.assertTrue(line.startswith("report: "), line)
        for piece in expected:
            self.assertIn(piece, line)
        self.assertEqual(stdout, "")
        return line

    def test_missing_run_file(self):
        path = os.path.join(self.work, "nope.json")
        self.assert_bad(["--run", path, "-o", self.out], path, "cannot open: No such file")
        self.assertFalse(os.path.exists(self.out), "output written for bad input")

    def test_truncated_json(self):
        with open(CPU_RUN_SKIPPED, encoding="utf-8") as f:
            path = self.write("truncated.json", f.read()[:700])
        self.assert_bad(["--run", path, "-o", self.out], path, "not valid JSON", "line")

    def test_missing_pairbench_section(self):
        path = self.write("gbench.json", json.dumps({"context": {}, "benchmarks": []}))
        self.assert_bad(["--run", path, "-o", self.out], path, "pairbench: missing")

    def test_not_an_object(self):
        path = self.write("list.json", "[1, 2, 3]")
        self.assert_bad(["--run", path, "-o", self.out], path, "expected an object")

    def test_wrong_type_experiments(self):
        path = self.run_file(lambda d: d["pairbench"].__setitem__("experiments", "dispatch"))
        self.assert_bad(["--run", path, "-o", self.out], path, "pairbench.experiments: expected an array")

    def test_wrong_type_deep_field(self):
        def mutate(d):
            d["pairbench"]["experiments"][0]["points"][1]["arms"][0]["median"] = "fast"

        path = self.run_file(mutate)
        self.assert_bad(
            ["--run", path, "-o", self.out],
            path,
            "pairbench.experiments[0].points[1].arms[0].median: expected a number",
        )

    def test_missing_benchmarks(self):
        path = self.run_file(lambda d: d.pop("benchmarks"))
        self.assert_bad(["--run", path, "-o", self.out], path, "benchmarks: missing")

    def test_bad_better(self):
        path = self.run_file(lambda d: d["pairbench"]["experiments"][0].__setitem__("better", "faster"))
        self.assert_bad(["--run", path, "-o", self.out], path, "pairbench.experiments[0].better: expected one of")

    def export(self, mutate=None):
        import make_history_export

        doc = make_history_export.build("m")
        if mutate:
            mutate(doc)
        return self.write("export.json", json.dumps(doc))

    def test_history_database_refused(self):
        db = self.write("history.sqlite", "SQLite format 3\0")
        self.assert_bad(
            ["--run", CPU_RUN_SKIPPED, "--history", db, "-o", self.out],
            "--history",
            "no longer reads a history database",
            "pairbench report --run FILE --db DB",
        )

    def test_history_export_missing(self):
        path = os.path.join(self.work, "nope.json")
        self.assert_bad(["--run", CPU_RUN_SKIPPED, "--history-export", path, "-o", self.out], path, "cannot open")

    def test_history_export_not_json(self):
        path = self.write("history.sqlite", "this is not a database\n" * 100)
        self.assert_bad(["--run", CPU_RUN_SKIPPED, "--history-export", path, "-o", self.out], path, "not valid JSON")

    def test_history_export_bad_time(self):
        path = self.export(lambda d: d["series"][2]["points"][3].__setitem__("started_at", "yesterday"))
        self.assert_bad(
            ["--run", CPU_RUN_SKIPPED, "--history-export", path, "-o", self.out],
            path,
            "series[2].points[3].started_at: expected an ISO 8601 UTC time string",
        )

    def test_history_export_bad_value(self):
        path = self.export(lambda d: d["series"][0]["points"][1]["values"].__setitem__(2, -1.5))
        self.assert_bad(
            ["--run", CPU_RUN_SKIPPED, "--history-export", path, "-o", self.out],
            path,
            "series[0].points[1].values[2]: expected a finite number > 0, is the number -1.5",
        )

    def test_history_export_bad_baseline(self):
        path = self.export(lambda d: d["machines"][0].__setitem__("baseline_run_id", 5))
        self.assert_bad(
            ["--run", CPU_RUN_SKIPPED, "--history-export", path, "-o", self.out],
            path,
            "machines[0].baseline_run_id: expected a non-empty string or null",
        )

    def test_claims_catalogue_missing(self):
        claims = os.path.join(self.work, "claims.json")
        self.assert_bad(["--run", CPU_RUN_SKIPPED, "--claims", claims, "-o", self.out], claims, "no such file")

    def test_output_is_a_file(self):
        path = self.write("not_a_dir", "x")
        self.assert_bad(["--run", CPU_RUN_SKIPPED, "-o", path], path, "output folder")

    def test_usage(self):
        self.assert_bad(["-o", self.out], "usage", "--run")
        self.assert_bad(["--run", CPU_RUN_SKIPPED, "-o", self.out, "--colour", "red"], "usage", "--colour")


if __name__ == "__main__":
    unittest.main()
