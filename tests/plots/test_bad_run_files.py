"""The report's run-file reader against the table of malformed run files it shares with the harness
(tests/fixtures/bad_run_files/expected.tsv; tests/harness/run_file_test.cpp reads the same table):
every bad file refused with its field path, every good fixture accepted; and inputs that are not
files at all (/dev/urandom, a FIFO, a 2 GiB sparse file) refused in one line, fast, with no traceback."""
import glob
import json
import os
import subprocess
import sys
import time
import unittest

from helpers import FIXTURES, HERE, REPORT, run_report, tmpdir
from pairbench_report.errors import BadInput
from pairbench_report.runfile import SCHEMA_PATH, load_run, parse_run_file

BAD = os.path.join(FIXTURES, "bad_run_files")
GOOD = sorted(glob.glob(os.path.join(FIXTURES, "run_*.json"))) + sorted(glob.glob(os.path.join(HERE, "data", "*.json")))


def bad_cases():
    """(file, field path or '-', piece of the error) per line of expected.tsv."""
    with open(os.path.join(BAD, "expected.tsv"), encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f if line.strip() and not line.startswith("#")]
    return [(os.path.join(BAD, r[0]), r[1], r[2]) for r in rows]


class SharedTable(unittest.TestCase):
    def test_every_bad_file_is_listed_once(self):
        listed = [path for path, _, _ in bad_cases()]
        self.assertEqual(len(listed), len(set(listed)))
        self.assertEqual(sorted(listed), sorted(glob.glob(os.path.join(BAD, "*.json"))))
        self.assertGreaterEqual(len(listed), 15)

    def test_every_bad_file_is_refused_naming_its_field(self):
        for path, field, piece in bad_cases():
            with self.subTest(os.path.basename(path)):
                with self.assertRaises(BadInput) as caught:
                    load_run(path)
                message = str(caught.exception)
                self.assertNotIn("\n", message)
                prefix = f"{path}: " if field == "-" else f"{path}: {field}: "
                self.assertTrue(message.startswith(prefix), f"{message!r} does not start with {prefix!r}")
                self.assertIn(piece, message)

    def test_good_fixtures_are_accepted(self):
        self.assertGreaterEqual(len(GOOD), 4)
        for path in GOOD:
            with self.subTest(os.path.basename(path)):
                self.assertEqual(load_run(path).schema_version, 1)

    def test_the_schema_is_valid_draft_2020_12(self):
        import jsonschema

        with open(SCHEMA_PATH, encoding="utf-8") as f:
            schema = json.load(f)
        jsonschema.Draft202012Validator.check_schema(schema)
        self.assertEqual(schema["x-pairbench-limits"], {"max_bytes": 1 << 30, "max_depth": 64})


class Limits(unittest.TestCase):
    def test_nesting_at_the_limit_is_accepted_and_one_more_level_refused(self):
        with open(os.path.join(FIXTURES, "run_small.json"), encoding="utf-8") as f:
            doc = json.load(f)

        def with_depth(levels):
            # The environment object is level 3; its member adds `levels` - 3 more.
            value = []
            for _ in range(levels - 4):
                value = [value]
            doc["pairbench"]["environment"]["nested"] = value
            return json.dumps(doc).encode()

        parse_run_file(with_depth(64), "at-limit.json")
        with self.assertRaises(BadInput) as caught:
            parse_run_file(with_depth(65), "past-limit.json")
        self.assertIn("nested at most 64 levels", str(caught.exception))

    def test_deep_nesting_past_python_recursion_is_bad_input(self):
        with self.assertRaises(BadInput) as caught:
            parse_run_file(b"[" * 300000, "deep.json")
        self.assertIn("nested at most 64 levels", str(caught.exception))


class NotAFile(unittest.TestCase):
    """Through report.py as a user runs it: one line on stderr, exit 2, no traceback, within seconds."""

    def setUp(self):
        self.work = tmpdir(self)
        self.out = os.path.join(self.work, "out")

    def assert_refused(self, path, *pieces):
        started = time.monotonic()
        rc, stdout, stderr = run_report("--run", path, "-o", self.out, timeout=30)
        self.assertLess(time.monotonic() - started, 30)
        self.assertEqual(rc, 2, f"stdout={stdout!r} stderr={stderr!r}")
        self.assertNotIn("Traceback", stderr)
        self.assertEqual(stderr.count("\n"), 1, stderr)
        for piece in (path,) + pieces:
            self.assertIn(piece, stderr)
        self.assertFalse(os.path.exists(self.out), "output written for bad input")

    def test_dev_urandom(self):
        self.assert_refused("/dev/urandom", "expected a regular file", "character device")

    def test_fifo(self):
        fifo = os.path.join(self.work, "run.fifo")
        os.mkfifo(fifo)
        self.assert_refused(fifo, "FIFO")

    def test_sparse_file_of_2_gib(self):
        sparse = os.path.join(self.work, "huge.json")
        with open(sparse, "wb") as f:
            f.truncate(2 << 30)  # sparse: no data blocks, so cheap on any filesystem that has holes
        self.assert_refused(sparse, "at most 1073741824 bytes", str(2 << 30))

    def test_directory(self):
        self.assert_refused(self.work, "a directory")


class ThroughTheCli(unittest.TestCase):
    def test_a_bad_table_file_is_one_line_through_report_py(self):
        path = os.path.join(BAD, "metric_value_zero.json")
        proc = subprocess.run(
            [sys.executable, REPORT, "--run", path, "-o", os.path.join(tmpdir(self), "out")],
            capture_output=True,
            text=True,
            timeout=60,
        )
        self.assertEqual(proc.returncode, 2)
        self.assertEqual(
            proc.stderr,
            f"report: {path}: benchmarks[0].metric_value: expected a number > 0, "
            'is the number 0 (benchmark "copy.wrap_vs_copy/wrap/bytes:4096")\n',
        )


if __name__ == "__main__":
    unittest.main()
