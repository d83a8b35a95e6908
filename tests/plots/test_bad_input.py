"""Bad input: exit status 2 and one line on stderr naming the file and the field; nothing else."""
import json
import os
import sqlite3
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
        self.assert_bad(["--run", path, "-o", self.out], path,
                        "pairbench.experiments[0].points[1].arms[0].median: expected a number")

    def test_missing_benchmarks(self):
        path = self.run_file(lambda d: d.pop("benchmarks"))
        self.assert_bad(["--run", path, "-o", self.out], path, "benchmarks: missing")

    def test_bad_better(self):
        path = self.run_file(lambda d: d["pairbench"]["experiments"][0].__setitem__("better", "faster"))
        self.assert_bad(["--run", path, "-o", self.out], path, "pairbench.experiments[0].better: expected one of")

    def test_history_missing(self):
        db = os.path.join(self.work, "nope.sqlite")
        self.assert_bad(["--run", CPU_RUN_SKIPPED, "--history", db, "-o", self.out], db, "no such file")
        self.assertFalse(os.path.exists(db), "a missing history database was created")

    def test_history_not_sqlite(self):
        db = self.write("history.sqlite", "this is not a database\n" * 100)
        self.assert_bad(["--run", CPU_RUN_SKIPPED, "--history", db, "-o", self.out], db, "history database")

    def test_history_missing_table(self):
        db = os.path.join(self.work, "partial.sqlite")
        con = sqlite3.connect(db)
        con.execute("CREATE TABLE runs(id INTEGER PRIMARY KEY, started_at TEXT, git_sha TEXT, machine_key TEXT, "
                    "profile TEXT, fingerprint TEXT, run_file TEXT)")
        con.commit()
        con.close()
        self.assert_bad(["--run", CPU_RUN_SKIPPED, "--history", db, "-o", self.out], db, "table samples", "missing")

    def test_history_bad_time(self):
        db = os.path.join(self.work, "badtime.sqlite")
        import make_history
        make_history.build(db, machine="m")
        con = sqlite3.connect(db)
        con.execute("UPDATE runs SET started_at = 'yesterday' WHERE id = 3")
        con.commit()
        con.close()
        self.assert_bad(["--run", CPU_RUN_SKIPPED, "--history", db, "-o", self.out], db, "runs.started_at")

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
