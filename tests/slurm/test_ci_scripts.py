"""The fleet's CI scripts without a scheduler or a benchmark: the Slurm kinds table, the sbatch
lines ci/slurm/submit.sh makes (--dry-run), one array task run directly with SLURM_ARRAY_TASK_ID
set, ci/bisect.sh --confirmed (the nightly's confirmed regressions turned into one bisect command
line), and the GitHub Actions workflows (they parse, and the fleet and nightly workflows run what
they say)."""
import json
import os
import re
import shlex
import unittest

import yaml

from ci_helpers import PAIRBENCH, REPO, run_script, scratch_checkout

SUBMIT = os.path.join(REPO, "ci", "slurm", "submit.sh")
KINDS = """# kind partition constraint gres time_limit
cpu    batch  -      -          00:30:00
gpu-a  gpu    a100   gpu:a100:1 2:00:00
gpu-h  gpu    h100   gpu:h100:2 1-00:00:00
"""
DB = "postgresql://bench:s3cret@db.example/pairbench"


class KindsAndSubmit(unittest.TestCase):
    def setUp(self):
        self.root = scratch_checkout(self)

    def kinds(self, text):
        path = os.path.join(self.root, "kinds.tsv")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        return path

    def dry_run(self, kinds_text, *extra, env=None):
        kinds = self.kinds(kinds_text)
        return run_script(
            [os.path.join(self.root, "ci", "slurm", "submit.sh"), "--dry-run", "--kinds", kinds, *extra],
            env={"PAIRBENCH_DB": DB, **(env or {})},
            timeout=30,
        )

    def test_one_array_task_per_kind_with_its_resources_then_a_dependent_report_job(self):
        rc, out, err = self.dry_run(KINDS, "--", "--experiments", "dispatch")
        self.assertEqual(rc, 0, err)
        lines = [shlex.split(line) for line in out.splitlines() if line.startswith("sbatch ")]
        self.assertEqual(len(lines), 4, out)
        expected = [
            ("0", "cpu", "batch", None, None, "00:30:00"),
            ("1", "gpu-a", "gpu", "a100", "gpu:a100:1", "2:00:00"),
            ("2", "gpu-h", "gpu", "h100", "gpu:h100:2", "1-00:00:00"),
        ]
        for words, (row, kind, partition, constraint, gres, limit) in zip(lines, expected):
            opts = dict(w[2:].split("=", 1) for w in words if w.startswith("--") and "=" in w)
            self.assertEqual(opts["array"], row)
            self.assertEqual(opts["job-name"], f"pairbench-nightly-{kind}")
            self.assertEqual(opts.get("partition"), partition)
            self.assertEqual(opts.get("constraint"), constraint)
            self.assertEqual(opts.get("gres"), gres)
            self.assertEqual(opts["time"], limit)
            self.assertEqual(opts["chdir"], self.root)
            self.assertRegex(opts["export"], r"^ALL,PAIRBENCH_BATCH=\d{8}T\d{6}Z,PAIRBENCH_KINDS=")
            self.assertEqual(words[-3:], ["ci/slurm/nightly-array.sh", "--experiments", "dispatch"])
        report = dict(w[2:].split("=", 1) for w in lines[3] if w.startswith("--") and "=" in w)
        self.assertEqual(report["dependency"], "afterany:<job:cpu>:<job:gpu-a>:<job:gpu-h>")
        self.assertEqual(report["partition"], "batch")
        self.assertRegex(report["wrap"], r"^\./ci/fleet-report\.sh results/slurm/\d{8}T\d{6}Z$")
        self.assertIn("ARTIFACTS_DIR=results/slurm/", report["export"])
        # The database (a URL with its password) travels in the environment, never on a command line.
        self.assertNotIn("s3cret", out)
        self.assertFalse(os.listdir(os.path.join(self.root, "results")), "a dry run wrote something")

    def test_database_is_required(self):
        kinds = self.kinds(KINDS)
        rc, out, err = run_script(
            [os.path.join(self.root, "ci", "slurm", "submit.sh"), "--dry-run", "--kinds", kinds], timeout=30
        )
        self.assertEqual(rc, 2)
        self.assertEqual(out, "")
        self.assertEqual(len(err.strip().splitlines()), 1, err)
        self.assertIn("PAIRBENCH_DB: expected the database every node uploads to", err)

    def test_bad_kinds_tables_are_refused_with_file_and_line(self):
        cases = [
            ("cpu batch - -\n", ":1: expected 5 columns"),
            ("# c\ncpu batch - - 1:00:00\ncpu gpu a100 gpu:1 1:00:00\n", ":3: kind: expected a kind no other row has"),
            ("../x batch - - 1:00:00\n", ":1: kind: expected 1 to 64 of"),
            (
                "cpu batch - - soon\n",
                ':1: time_limit: expected a Slurm time (minutes, HH:MM:SS or D-HH:MM:SS), is "soon"',
            ),
            ("# only a comment\n", "expected at least one kind"),
            ("cpu batch - - 1:00:00 extra\n", ":1: expected 5 columns"),
        ]
        for text, expected in cases:
            with self.subTest(text=text):
                rc, out, err = self.dry_run(text)
                self.assertEqual(rc, 2, out + err)
                self.assertEqual(out, "")
                self.assertEqual(len(err.strip().splitlines()), 1, err)
                self.assertTrue(err.startswith(os.path.join(self.root, "kinds.tsv")), err)
                self.assertIn(expected, err)

    def test_the_shipped_kinds_table_is_valid(self):
        rc, out, err = run_script([SUBMIT, "--dry-run"], env={"PAIRBENCH_DB": DB}, timeout=30)
        self.assertEqual(rc, 0, err)
        self.assertIn("--gres=gpu:", out)

    def test_help_is_the_header_comment(self):
        rc, out, err = run_script([SUBMIT, "--help"], timeout=30)
        self.assertEqual(rc, 0, err)
        self.assertTrue(out.startswith("Submits a night of pairbench to Slurm"), out)
        self.assertTrue(out.rstrip().endswith("submitted are named)."), out)
        self.assertNotIn("set -uo", out)

    def test_unknown_option(self):
        rc, out, err = self.dry_run(KINDS, "--partition", "x")
        self.assertEqual(rc, 2)
        self.assertIn("--partition: expected --dry-run, --kinds FILE or --", err)


RECORDER = """#!/bin/bash
# Stands in for ci/nightly.sh: records what the array task handed it.
{ echo "ARTIFACTS_DIR=$ARTIFACTS_DIR"; echo "BUILD_DIR=$BUILD_DIR"; echo "RUN_TAG=$RUN_TAG";
  echo "PAIRBENCH_DB=$PAIRBENCH_DB"; echo "PWD=$PWD"; echo "ARGS=$*"; } > results/nightly-call.txt
exit 4
"""


class ArrayTask(unittest.TestCase):
    def setUp(self):
        self.root = scratch_checkout(self, replace={"ci/nightly.sh": RECORDER})
        self.kinds = os.path.join(self.root, "kinds.tsv")
        with open(self.kinds, "w", encoding="utf-8") as f:
            f.write(KINDS)

    def task(self, index, **env):
        base = {
            "PAIRBENCH_DB": DB,
            "PAIRBENCH_KINDS": self.kinds,
            "SLURM_SUBMIT_DIR": self.root,
            "PAIRBENCH_BATCH": "20261125T020000Z",
        }
        if index is not None:
            base["SLURM_ARRAY_TASK_ID"] = str(index)
        base.update(env)
        # Run from elsewhere, as sbatch runs its spooled copy: the checkout comes from SLURM_SUBMIT_DIR.
        return run_script(
            [os.path.join(self.root, "ci", "slurm", "nightly-array.sh"), "--experiments", "dispatch"],
            env=base,
            cwd="/",
            timeout=30,
        )

    def test_task_runs_nightly_for_its_row_of_the_kinds_table(self):
        rc, out, err = self.task(1)
        self.assertEqual(rc, 4, "the task must end with ci/nightly.sh's status: " + err)
        with open(os.path.join(self.root, "results", "nightly-call.txt"), encoding="utf-8") as f:
            got = dict(line.rstrip("\n").split("=", 1) for line in f)
        self.assertEqual(got["ARTIFACTS_DIR"], "results/slurm/20261125T020000Z/gpu-a")
        self.assertEqual(got["BUILD_DIR"], "build-gpu-a")
        self.assertEqual(got["RUN_TAG"], "gpu-a")
        self.assertEqual(got["PAIRBENCH_DB"], DB)
        self.assertEqual(os.path.realpath(got["PWD"]), os.path.realpath(self.root))
        self.assertEqual(got["ARGS"], "--experiments dispatch")
        self.assertIn("kind gpu-a (task 1)", out)

    def test_task_outside_the_table_or_without_a_database_is_refused(self):
        for index, env, expected in (
            (3, {}, 'SLURM_ARRAY_TASK_ID: expected a row of the kinds table (0 to 2), is "3"'),
            (None, {}, 'SLURM_ARRAY_TASK_ID: expected a row of the kinds table (0 to 2), is ""'),
            (0, {"PAIRBENCH_DB": ""}, "PAIRBENCH_DB: expected the shared database"),
        ):
            with self.subTest(index=index, env=env):
                rc, out, err = self.task(index, **env)
                self.assertEqual(rc, 2, out + err)
                self.assertIn(expected, err)
                self.assertFalse(os.path.exists(os.path.join(self.root, "results", "nightly-call.txt")))


class Workflows(unittest.TestCase):
    def load(self, name):
        with open(os.path.join(REPO, "ci", "workflows", name), encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        self.assertIsInstance(doc, dict, name)
        # YAML 1.1 reads the key `on` as true; GitHub reads it as "on".
        self.assertTrue("on" in doc or True in doc, name)
        self.assertIsInstance(doc["jobs"], dict, name)
        return doc

    def test_every_workflow_parses(self):
        names = [n for n in os.listdir(os.path.join(REPO, "ci", "workflows")) if n.endswith((".yml", ".yaml"))]
        self.assertIn("fleet.yml", names)
        for name in names:
            with self.subTest(name=name):
                self.load(name)

    def test_fleet_matrix_runs_nightly_on_each_kind_and_a_final_cross_machine_job(self):
        doc = self.load("fleet.yml")
        machine = doc["jobs"]["machine"]
        kinds = machine["strategy"]["matrix"]["include"]
        self.assertFalse(machine["strategy"]["fail-fast"])
        labels = {k["kind"]: k["runner"] for k in kinds}
        self.assertIn("cpu", labels)
        gpu = [k for k, runner in labels.items() if any(str(label).startswith("gpu") for label in runner)]
        self.assertGreaterEqual(len(gpu), 1, labels)
        self.assertEqual(machine["runs-on"], "${{ matrix.runner }}")
        steps = machine["steps"]
        nightly = next(s for s in steps if "ci/nightly.sh" in s.get("run", ""))
        self.assertEqual(nightly["env"]["PAIRBENCH_DB"], "${{ secrets.PAIRBENCH_DB }}")
        upload = next(s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact@"))
        self.assertEqual(upload["if"], "always()")
        self.assertEqual(upload["with"]["path"], nightly["env"]["ARTIFACTS_DIR"].rstrip("/") + "/")
        self.assertIn("${{ matrix.kind }}", upload["with"]["name"])

        fleet = doc["jobs"]["fleet"]
        self.assertEqual(fleet["needs"], "machine")
        self.assertEqual(fleet["if"], "always()")
        step = next(s for s in fleet["steps"] if "ci/fleet-report.sh" in s.get("run", ""))
        self.assertEqual(step["env"]["PAIRBENCH_DB"], "${{ secrets.PAIRBENCH_DB }}")
        self.assertEqual(step["env"]["PAIRBENCH_COMMIT"], "${{ github.sha }}")
        download = next(s for s in fleet["steps"] if str(s.get("uses", "")).startswith("actions/download-artifact@"))
        self.assertIn(download["with"]["path"].rstrip("/"), step["run"])
        # What the final step runs (ci/fleet-report.sh) is the cross-machine gate and report.
        with open(os.path.join(REPO, "ci", "fleet-report.sh"), encoding="utf-8") as f:
            script = f.read()
        self.assertRegex(script, r'"\$pb" gate --db "\$PAIRBENCH_DB" --commit "\$sha"')
        self.assertRegex(script, r'"\$pb" report --run "\$newest" --db "\$PAIRBENCH_DB"')


class BisectScript(unittest.TestCase):
    """ci/bisect.sh --confirmed with a stand-in pairbench that records its command line (and passes
    `confirm`, the confirmation's own command, to the real pairbench)."""

    def setUp(self):
        self.root = scratch_checkout(self)
        self.build = os.path.join(self.root, "build-fake")
        os.makedirs(os.path.join(self.build, "bin"))
        self.log = os.path.join(self.build, "calls.txt")
        with open(os.path.join(self.build, "bin", "pairbench"), "w", encoding="utf-8") as f:
            f.write(
                f'#!/bin/bash\n[ "$1" = confirm ] && exec {shlex.quote(PAIRBENCH)} "$@"\n'
                f'printf "%q " "$@" >> {shlex.quote(self.log)}\necho >> {shlex.quote(self.log)}\n'
            )
        os.chmod(os.path.join(self.build, "bin", "pairbench"), 0o755)
        self.artifacts = os.path.join(self.root, "artifacts")
        os.makedirs(self.artifacts)

    def write(self, name, doc):
        path = os.path.join(self.artifacts, name)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        return path

    def bisect(self, *extra):
        return run_script(
            [os.path.join(self.root, "ci", "bisect.sh"), "--confirmed", self.artifacts, *extra],
            env={"SKIP_BUILD": "1", "BUILD_DIR": self.build, "PROFILE": "nightly", "ARTIFACTS_DIR": self.artifacts},
            cwd=self.root,
            timeout=30,
        )

    def test_no_confirmed_regression_bisects_nothing(self):
        self.write("confirmed.json", {"regressions": []})
        rc, out, err = self.bisect()
        self.assertEqual(rc, 0, err)
        self.assertIn("nothing to bisect", out)
        self.assertFalse(os.path.exists(self.log))

    def test_confirmed_regressions_become_one_bisection_between_the_baseline_and_the_night(self):
        sha = lambda c: c * 40
        # The gate's JSON as `gate --json` writes it: the two runs' git shas (no suspect rows needed).
        self.write(
            "gate.json",
            {
                "headline": "",
                "benchmarks": [],
                "baseline_run": {"run_id": "1", "machine_key": "m", "git_sha": sha("a"), "started_at": ""},
                "current_run": {"run_id": "2", "machine_key": "m", "git_sha": sha("b"), "started_at": ""},
            },
        )
        self.write(
            "confirmed.json",
            {"regressions": [{"benchmark": "data.gather/indexed/size:1048576"}, {"benchmark": "ops.a+b/x(2)"}]},
        )
        rc, out, err = self.bisect("--budget", "99")
        self.assertEqual(rc, 0, err)
        with open(self.log, encoding="utf-8") as f:
            words = shlex.split(f.read())
        regex = r"^(?:data\.gather/indexed/size:1048576|ops\.a\+b/x\(2\))$"
        self.assertEqual(
            words,
            [
                "bisect",
                "--good",
                sha("a"),
                "--bad",
                sha("b"),
                "--benchmarks",
                regex,
                "--profile",
                "nightly",
                "--json",
                os.path.join(self.artifacts, "bisect.json"),
                "--budget",
                "99",
            ],
        )
        # The expression names exactly those benchmarks (ECMAScript and Python agree on it).
        self.assertTrue(re.fullmatch(regex, "ops.a+b/x(2)"))
        self.assertFalse(re.search(regex, "data.gather/indexed/size:10485760"))

    def test_a_baseline_without_a_git_sha_is_refused(self):
        self.write("confirmed.json", {"regressions": [{"benchmark": "data.gather/x"}], "current_git_sha": "b" * 40})
        rc, out, err = self.bisect()
        self.assertEqual(rc, 2, out + err)
        self.assertIn("no git sha for the baseline", err)
        self.assertFalse(os.path.exists(self.log))

    def test_nightly_workflow_bisects_a_confirmed_regression_on_the_same_runner(self):
        with open(os.path.join(REPO, "ci", "workflows", "nightly.yml"), encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        steps = doc["jobs"]["nightly"]["steps"]
        names = [s.get("name", s.get("uses", "")) for s in steps]
        bisect = next(s for s in steps if "ci/bisect.sh --confirmed" in s.get("run", ""))
        self.assertIn("steps.nightly.outputs.status == '1'", bisect["if"])
        self.assertIn("failure()", bisect["if"])
        self.assertEqual(bisect["env"]["ARTIFACTS_DIR"], "artifacts")
        # Before the upload, so that its JSON and log are artifacts.
        upload = next(i for i, s in enumerate(steps) if str(s.get("uses", "")).startswith("actions/upload-artifact@"))
        self.assertLess(steps.index(bisect), upload, names)


if __name__ == "__main__":
    unittest.main()


# ---- issue 38: a CI script is shell; what it computes lives in a file of its own language -------

EMBEDDED_LIMIT = 10


def embedded_blocks(text):
    """(first line number, lines) of each here-document body and each multi-line `-c '...'`
    program in a shell script."""
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        heredoc = re.search(r"<<-?\s*'?\"?(\w+)'?\"?", line) if "<<<" not in line else None
        if heredoc:
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == heredoc.group(1)), len(lines))
            out.append((i + 1, end - i - 1))
            i = end + 1
            continue
        program = re.search(r"\s-c\s+'([^']*)$", line)
        if program:
            end = next((j for j in range(i + 1, len(lines)) if "'" in lines[j]), len(lines))
            out.append((i + 1, end - i + 1))
            i = end + 1
            continue
        i += 1
    return out


class EmbeddedCode(unittest.TestCase):
    def test_no_ci_script_embeds_more_than_ten_lines_of_another_language(self):
        scripts = [os.path.join(REPO, ".ci", "run")]
        for folder, _, files in os.walk(os.path.join(REPO, "ci")):
            scripts += [os.path.join(folder, f) for f in files if f.endswith(".sh")]
        self.assertGreater(len(scripts), 10)
        for path in scripts:
            with open(path, encoding="utf-8") as f:
                for line, count in embedded_blocks(f.read()):
                    self.assertLessEqual(
                        count,
                        EMBEDDED_LIMIT,
                        f"{os.path.relpath(path, REPO)}:{line}: {count} lines of another language "
                        "embedded: move them into a file of their own (ci/*.py, plots/pairbench_report/)",
                    )

    def test_the_check_counts_here_documents_and_inline_programs(self):
        text = (
            "a\npython3 - <<'EOF'\n" + "x = 1\n" * 12 + "EOF\nb\npython3 -c '\nimport sys\nprint(1)'\ncat <<<\"$x\"\n"
        )
        self.assertEqual(embedded_blocks(text), [(2, 12), (17, 3)])


class DrawsStudy(unittest.TestCase):
    """ci/draws-study.py's one-way analysis on generated groups whose answer is known, and its
    refusals (no bench run)."""

    @classmethod
    def setUpClass(cls):
        import importlib.util

        spec = importlib.util.spec_from_file_location("draws_study", os.path.join(REPO, "ci", "draws-study.py"))
        cls.study = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(cls.study)

    @staticmethod
    def groups(sd_process, sd_draw, n=400, k=4, seed=3, first=0.0):
        import random

        r = random.Random(seed)
        out = []
        for _ in range(n):
            p = r.gauss(0, sd_process)
            out.append([p + r.gauss(0, sd_draw) + (first if i == 0 else 0) for i in range(k)])
        return out

    def test_draws_as_independent_as_processes_have_icc_near_zero(self):
        sd_p, sd_d, icc, _ = self.study.one_way(self.groups(0.0, 0.05))
        self.assertLess(icc, 0.05)
        self.assertAlmostEqual(sd_d, 0.05, delta=0.004)
        self.assertLess(sd_p, 0.012)

    def test_a_process_effect_as_large_as_the_draws_has_icc_near_one_half(self):
        sd_p, sd_d, icc, f = self.study.one_way(self.groups(0.05, 0.05))
        self.assertAlmostEqual(icc, 0.5, delta=0.08)
        self.assertAlmostEqual(sd_p, 0.05, delta=0.006)
        self.assertGreater(f, 3)

    def test_the_first_draw_offset_is_found(self):
        self.assertAlmostEqual(self.study.first_draw_offset(self.groups(0.02, 0.01, first=0.1)), 0.1, delta=0.005)

    def test_too_few_groups_or_draws_are_refused(self):
        with self.assertRaises(ValueError):
            self.study.one_way([[1.0, 2.0]])
        with self.assertRaises(ValueError):
            self.study.one_way([[1.0], [2.0]])

    def test_bad_arguments_are_one_line_and_exit_2(self):
        import subprocess
        import tempfile

        script = os.path.join(REPO, "ci", "draws-study.py")
        passed = {"run_type": "iteration", "verification": "passed", "iterations": 5, "experiment": "copy.stores"}
        with tempfile.TemporaryDirectory() as tmp:
            bad, good = os.path.join(tmp, "run.json"), os.path.join(tmp, "good.json")
            with open(bad, "w") as f:
                f.write('{"benchmarks": 3}')
            with open(good, "w") as f:
                json.dump({"benchmarks": [dict(passed, name="copy.stores/x")]}, f)
            for run, argv, says in (
                (bad, ["--processes", "2"], "--processes: at least 3"),
                (bad, ["--draws", "1"], "--draws: at least 2"),
                (bad, [], "benchmarks: expected an array"),
                (good, ["--experiments", "ops.fusion"], "no passed time rows of ops.fusion"),
                (good, ["--experiments", "copy.stores,ops.fusion"], "--experiments: not in"),
                (good, [], "no executable bench_copy"),
            ):
                r = subprocess.run(["/usr/bin/python3", script, run, tmp, *argv], capture_output=True, text=True)
                self.assertEqual(r.returncode, 2, r.stderr)
                self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
                self.assertIn(says, r.stderr)


class NightlySteps(unittest.TestCase):
    """ci/nightly_steps.py, the steps of ci/nightly.sh that read the gate's JSON through the report's
    one typed reader: the headline, the exit status, whether anything is broken; bad input one line,
    exit 2."""

    STEPS = os.path.join(REPO, "ci", "nightly_steps.py")

    def step(self, *args):
        import subprocess

        return subprocess.run(["/usr/bin/python3", self.STEPS, *args], capture_output=True, text=True)

    def gate(self, doc):
        import tempfile

        d = tempfile.mkdtemp()
        self.addCleanup(__import__("shutil").rmtree, d, True)
        path = os.path.join(d, "gate.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        return path

    def test_headline_status_and_broken_are_read_by_key(self):
        headline = "1 regression, 0 undecided, 2 unchanged (+ 0 improvements, 1 broken, 0 new, 0 missing)"
        rows = [{"name": "a", "verdict": "regression"}, {"name": "b", "verdict": "broken"}]
        path = self.gate({"headline": headline, "exit_status": 1, "benchmarks": rows})
        r = self.step("headline", path)
        self.assertEqual((r.returncode, r.stdout.strip()), (0, headline), r.stderr)
        self.assertEqual(self.step("gate-status", path).stdout.strip(), "1")
        self.assertEqual(self.step("has-broken", path).returncode, 0)
        quiet = self.gate({"headline": "0 regressions", "exit_status": 0, "benchmarks": [rows[0]]})
        self.assertEqual(self.step("has-broken", quiet).returncode, 1)

    def test_a_malformed_gate_is_one_line_naming_the_field_and_exit_2(self):
        for doc, field in (({"headline": 3, "benchmarks": []}, "headline"), ({"headline": "x"}, "benchmarks")):
            r = self.step("headline", self.gate(doc))
            self.assertEqual(r.returncode, 2, r.stdout)
            self.assertEqual(len(r.stderr.strip().splitlines()), 1, r.stderr)
            self.assertIn(field, r.stderr)

    def test_nightly_reads_the_gate_through_the_steps_not_by_pattern(self):
        with open(os.path.join(REPO, "ci", "nightly.sh"), encoding="utf-8") as f:
            script = f.read()
        self.assertNotIn('"headline"', script)
        self.assertIn("nightly_steps.py headline", script)
