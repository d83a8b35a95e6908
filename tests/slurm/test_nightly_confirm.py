"""ci/nightly.sh's same-runner confirmation (ci/confirm.sh), scheduler-free, on the simulated bench
(tests/bench/sim_bench.cpp: its times are a generator's that the test declares, so what the nights
decide follows from the declaration, not from the machine's load):
- night 1 has no baseline: it stores its run as the baseline and keeps its build's bench binaries
  in results/builds/<git sha>;
- night 2 runs a build whose declaration plants 40 % in every case: the gate's suspects are
  measured again in one `pairbench ab` of the kept baseline build against this one, the
  regression is confirmed, the night fails (1) and confirmed.json names it for ci/bisect.sh;
- night 3 runs the unchanged build again: the ab clears whatever the gate suspects and the night
  passes (0), and the baseline's kept build was not replaced by the slower one;
- a baseline whose build is not kept and came from uncommitted changes cannot be confirmed: the
  gate's verdicts stand and the summary says why."""
import json
import os
import shutil
import unittest

from ci_helpers import BUILD, PAIRBENCH, run_script, scratch_checkout

# The simulated bench's four cases, 1 % noise between processes (its defaults). (On real benchmarks
# under ctest's load a night once measured a planted 40 % as -92 %.)
EXPERIMENT = "sim.declared"
BINARY = "bench_sim"
SIM = os.path.join(BUILD, "tests", "sim_bench", BINARY)


def build_dir(root, name, slowdown_pct=0):
    """A build folder whose bin/ holds pairbench and a copy of the simulated bench: with its
    default declaration, or one that plants `slowdown_pct` % in every case."""
    build = os.path.join(root, name)
    os.makedirs(os.path.join(build, "bin"))
    # A copy, not a link: pairbench runs the bench binaries beside its own executable.
    shutil.copy2(PAIRBENCH, os.path.join(build, "bin", "pairbench"))
    shutil.copy2(SIM, os.path.join(build, "bin", BINARY))
    if slowdown_pct:
        planted = {"change": slowdown_pct / 100}
        with open(os.path.join(build, "bin", BINARY + ".sim"), "w", encoding="utf-8") as f:
            json.dump({"cases": {case: planted for case in "abcd"}}, f)
    return build


class NightlyConfirmation(unittest.TestCase):
    def setUp(self):
        self.assertTrue(os.access(PAIRBENCH, os.X_OK), f"{PAIRBENCH}: build pairbench and " + BINARY + " first")
        self.root = scratch_checkout(self)
        self.db = os.path.join(self.root, "history.sqlite")

    def night(self, build, n, **env):
        artifacts = f"results/night{n}"
        rc, out, err = run_script(
            [os.path.join(self.root, "ci", "nightly.sh"), "--experiments", EXPERIMENT],
            env={
                "PAIRBENCH_DB": self.db,
                "PROFILE": "quick",
                "SKIP_BUILD": "1",
                "BUILD_DIR": build,
                "ARTIFACTS_DIR": artifacts,
                "CONFIRM_BUDGET": "15",
                **env,
            },
            cwd=self.root,
            timeout=300,
        )
        return rc, out, err, os.path.join(self.root, artifacts)

    def test_a_planted_slowdown_is_confirmed_and_unchanged_code_passes(self):
        plain = build_dir(self.root, "build-plain")
        slow = build_dir(self.root, "build-slow", slowdown_pct=40)
        rc, out, err, _ = self.night(plain, 1)
        self.assertEqual(rc, 0, out[-3000:] + err[-3000:])
        self.assertIn("storing this run as the baseline", err)
        builds = os.path.join(self.root, "results", "builds")
        kept = os.listdir(builds)
        self.assertEqual(len(kept), 1, kept)
        baseline_key = kept[0]
        self.assertTrue(os.path.isfile(os.path.join(builds, baseline_key, "bin", BINARY)))

        rc, out, err, artifacts = self.night(slow, 2)
        self.assertEqual(rc, 1, out[-3000:] + err[-3000:])
        with open(os.path.join(artifacts, "gate.json"), encoding="utf-8") as f:
            gate = json.load(f)
        self.assertEqual(gate["baseline_build"], baseline_key)
        self.assertTrue(any(b["suspect"] for b in gate["benchmarks"]), gate["headline"])
        with open(os.path.join(artifacts, "confirmed.json"), encoding="utf-8") as f:
            confirmed = json.load(f)
        self.assertTrue(confirmed["regressions"], confirmed)
        for r in confirmed["regressions"]:
            self.assertTrue(r["benchmark"].startswith(EXPERIMENT), r)
            self.assertGreater(r["change"], 0.15, r)
            self.assertIn("confirmed", r["why"])
        self.assertEqual(confirmed["baseline_git_sha"], baseline_key.removesuffix("-dirty"))
        with open(os.path.join(artifacts, "gate.md"), encoding="utf-8") as f:
            summary = f.read()
        self.assertIn("### Same-runner confirmation", summary)
        self.assertIn("confirmed", summary)

        rc, out, err, artifacts = self.night(plain, 3)
        self.assertEqual(rc, 0, out[-3000:] + err[-3000:])
        with open(os.path.join(artifacts, "confirmed.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)["regressions"], [])
        # The baseline's kept build is still the baseline's, not night 2's planted one of the same commit.
        self.assertTrue(os.path.isfile(os.path.join(builds, baseline_key, "bin", BINARY)))
        self.assertFalse(os.path.exists(os.path.join(builds, baseline_key, "bin", BINARY + ".sim")))

    def test_a_baseline_build_that_is_gone_and_was_dirty_cannot_be_confirmed(self):
        artifacts = os.path.join(self.root, "results", "gone")
        os.makedirs(artifacts)
        gate = {
            "baseline_build": "0123456789abcdef0123456789abcdef01234567-dirty",
            "current_build": "abc",
            # A regression row as the gate writes one (pairbench confirm reads it through the gate's
            # typed reader, which requires what a regression row records).
            "benchmarks": [
                {
                    "name": EXPERIMENT + "/x",
                    "instrument": "time",
                    "verdict": "regression",
                    "suspect": True,
                    "metric": "ns_per_op",
                    "unit": "ns",
                    "better": "lower",
                    "baseline_median": 100.0,
                    "current_median": 130.0,
                    "slowdown": 0.3,
                    "slowdown_low": 0.2,
                    "slowdown_high": 0.4,
                    "threshold": 0.05,
                }
            ],
        }
        with open(os.path.join(artifacts, "gate.json"), "w", encoding="utf-8") as f:
            json.dump(gate, f)
        rc, out, err = run_script(
            [os.path.join(self.root, "ci", "confirm.sh"), artifacts, "quick"],
            env={"BUILD_DIR": build_dir(self.root, "build-plain")},
            cwd=self.root,
            timeout=60,
        )
        self.assertEqual(rc, 3, out + err)
        self.assertIn("cannot be rebuilt", err)
        with open(os.path.join(artifacts, "confirmation.md"), encoding="utf-8") as f:
            self.assertIn("The gate's verdicts stand", f.read())


if __name__ == "__main__":
    unittest.main()
