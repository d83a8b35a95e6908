"""ci/nightly.sh against a database (PAIRBENCH_DB), scheduler-free: the upload step every CI
matrix job and Slurm array task runs. One small real experiment on the quick profile, a SQLite
history in a temporary folder, a pairbench that records the command lines it is given.
- every command that takes --db is given PAIRBENCH_DB, and the run arrives in it;
- when the database write fails (the database held locked past the retry budget), the run file is
  kept as an artifact, the job ends 3 and its last line names the file and the import that
  replays it;
- with BUDGET (on the simulated bench, whose unchanged nights cannot decide a change whatever the
  machine's load), the first night (no baseline yet) runs as without it and stores the baseline; the
  next samples until decided against it in `run` itself (--baseline history --budget), which
  writes the gate's outputs, and no separate `gate` runs."""
import json
import os
import shutil
import subprocess
import sys
import unittest

from ci_helpers import (
    PAIRBENCH,
    SIM_EXPERIMENT,
    SMALL_EXPERIMENT,
    calls,
    recording_build_dir,
    run_script,
    scratch_checkout,
    stored_runs,
)

COMMANDS_WITH_DB = (["run"], ["gate"], ["baseline", "update"], ["history"], ["report"])


class NightlyWithDatabase(unittest.TestCase):
    def setUp(self):
        self.assertTrue(os.access(PAIRBENCH, os.X_OK), f"{PAIRBENCH}: build pairbench and bench_dispatch first")
        self.root = scratch_checkout(self)
        self.build, self.log = recording_build_dir(self, self.root)
        self.db = os.path.join(self.root, "shared-history.sqlite")

    def nightly(self, experiment=SMALL_EXPERIMENT, build=None, **env):
        return run_script(
            [os.path.join(self.root, "ci", "nightly.sh"), "--experiments", experiment],
            env={
                "PAIRBENCH_DB": self.db,
                "PROFILE": "quick",
                "FUZZ_SECONDS": "0",
                "SKIP_BUILD": "1",
                "BUILD_DIR": build or self.build,
                "ARTIFACTS_DIR": "results/artifacts-test",
                "UNDECIDED": "pass",
                **env,
            },
            timeout=180,
        )

    def test_every_command_is_given_the_database_and_the_run_arrives(self):
        rc, out, err = self.nightly()
        self.assertEqual(rc, 0, out[-2000:] + err[-2000:])
        self.assertEqual(len(stored_runs(self.db)), 1)
        recorded = calls(self.log)
        for command in COMMANDS_WITH_DB:
            with self.subTest(command=" ".join(command)):
                matching = [c for c in recorded if c[: len(command)] == command]
                self.assertTrue(matching, f"ci/nightly.sh never ran pairbench {' '.join(command)}: {recorded}")
                for c in matching:
                    pairs = list(zip(c, c[1:]))
                    self.assertIn(("--db", self.db), pairs, c)
        artifacts = os.path.join(self.root, "results", "artifacts-test")
        self.assertTrue(any(n.startswith("run-") for n in os.listdir(artifacts)))
        self.assertTrue(os.path.exists(os.path.join(artifacts, "report", "index.html")))
        self.assertNotIn("database write failed", err)

    def test_budget_samples_against_the_stored_baseline_in_run(self):
        shutil.rmtree(os.path.dirname(self.log))
        build, log = recording_build_dir(self, self.root, simulated=True)

        def night():
            return self.nightly(SIM_EXPERIMENT, build, BUDGET="20", MAX_REPETITIONS="6")

        rc, out, err = night()
        self.assertEqual(rc, 0, out[-2000:] + err[-2000:])
        self.assertIn("running without sampling", err)  # no baseline yet: the plain night stores one
        first = calls(log)
        self.assertTrue(any(c[:2] == ["baseline", "update"] for c in first), first)
        rc, out, err = night()
        self.assertEqual(rc, 0, out[-2000:] + err[-2000:])
        second = calls(log)[len(first) :]
        runs = [c for c in second if c[:1] == ["run"]]
        self.assertEqual(len(runs), 1, second)
        pairs = list(zip(runs[0], runs[0][1:]))
        for pair in (("--baseline", "history"), ("--budget", "20"), ("--max-repetitions", "6"), ("--db", self.db)):
            self.assertIn(pair, pairs, runs[0])
        self.assertFalse([c for c in second if c[:1] == ["gate"]], second)
        self.assertIn("sampled until decided", out)
        artifacts = os.path.join(self.root, "results", "artifacts-test")
        with open(os.path.join(artifacts, "gate.json"), encoding="utf-8") as f:
            self.assertIn("headline", json.load(f))
        self.assertEqual(len(stored_runs(self.db)), 2)

    def test_a_failed_database_write_keeps_the_run_file_and_names_it(self):
        # A history that exists (so it is pairbench's), then held locked by another writer until
        # `pairbench run` is over (ci/nightly.sh copies the run file into its artifacts after it),
        # so that only the run's own write meets the lock.
        rc, out, err = run_script(
            [
                PAIRBENCH,
                "run",
                "--profile",
                "quick",
                "--experiments",
                SMALL_EXPERIMENT,
                "--history",
                self.db,
                "--out",
                os.path.join(self.root, "first.json"),
            ],
            cwd=self.root,
            timeout=120,
        )
        self.assertEqual(rc, 0, err[-2000:])
        artifacts = os.path.join(self.root, "results", "artifacts-test")
        locker = subprocess.Popen(
            [
                sys.executable,
                "-c",
                (
                    "import glob, sqlite3, sys, time\n"
                    f"con = sqlite3.connect({self.db!r}, isolation_level=None)\n"
                    "con.execute('BEGIN EXCLUSIVE')\n"
                    "print('locked', flush=True)\n"
                    "deadline = time.monotonic() + 120\n"
                    f"while not glob.glob({artifacts!r} + '/run-*.json') and time.monotonic() < deadline:\n"
                    "    time.sleep(0.05)\n"
                ),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        self.addCleanup(locker.wait, 130)
        self.addCleanup(locker.stdout.close)
        self.assertEqual(locker.stdout.readline().strip(), "locked")

        rc, out, err = self.nightly(PAIRBENCH_HISTORY_RETRY_S="1")
        self.assertEqual(rc, 3, out[-2000:] + err[-2000:])
        last = err.strip().splitlines()[-1]
        self.assertRegex(
            last,
            r"^ci/nightly\.sh: the database write failed \(.*database is locked.*\); the run file is "
            r"kept as an artifact: results/artifacts-test/run-\d{8}T\d{6}Z-quick\.json "
            r"\(replay it with: pairbench history import --db <PAIRBENCH_DB> ",
        )
        kept = os.path.join(self.root, last.split("kept as an artifact: ")[1].split(" ")[0])
        with open(kept, encoding="utf-8") as f:
            doc = json.load(f)
        self.assertEqual(doc["pairbench"]["history_write"]["status"], "failed")
        self.assertTrue(any(b.get("name", "").startswith(SMALL_EXPERIMENT) for b in doc["benchmarks"]))
        # The replay the line names stores it (once, however often it is imported).
        replay = last.split("(replay it with: ")[1].rstrip(")").replace("<PAIRBENCH_DB>", self.db).split()
        self.assertEqual(replay[:4], ["pairbench", "history", "import", "--db"])
        rc, out, err = run_script([PAIRBENCH] + replay[1:], cwd=self.root, timeout=60)
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(stored_runs(self.db)), 2, "the first run and the replayed one")


if __name__ == "__main__":
    unittest.main()
