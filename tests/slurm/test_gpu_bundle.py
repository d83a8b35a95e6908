"""ci/gpu-bundle.sh and ci/gpu-host-run.sh, the build-here-run-on-a-GPU-host recipe, on this
machine (no GPU needed: what is checked is the packing and the start, not a device):
- the bundle holds pairbench and the bench binaries, the device test binaries, the build's
  CMakeCache.txt, the Debian libraries they load but never libc, libstdc++ or CUDA's own, and the
  allocators the alloc arms preload; the layout variants go beside it in their own xz archive;
- unpacked by ci/gpu-host-run.sh into another folder (variants included), the bundled pairbench
  runs there with its bundled bench binaries (`list`) and the command's exit status comes back;
- ci/gpu-reference.sh runs there: without a device its steps say skipped or find no GPU benchmark,
  a packed candidate (.tar.xz of bench binaries) is laid over a copy of build/bin, each step's wall
  time lands in steps.tsv and ARCHIVE is written; an unknown step is refused with exit 2;
- mechanics only, on any machine (issue 44): on a GPU host the `planted` step is a real `ab` over
  the GPU benchmarks, whose verdict is made of real timings (an H200 once exited 4, undecided, after
  182 s). It runs at the fixed design (AB_ARGS "--budget 0 --undecided pass") and its exit is
  accepted among the gate's decision exits (0, 1, 4); what is checked is that it ran, on the
  candidate laid over the build, and wrote its files;
- a missing build or bundle is one line and exit 2."""
import json
import os
import subprocess
import tarfile
import tempfile
import shutil
import unittest

from ci_helpers import BUILD, PAIRBENCH, REPO, run_script


class GpuBundle(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.out = tempfile.mkdtemp(prefix="pairbench-gpu-bundle-")
        rc, out, err = run_script([os.path.join(REPO, "ci", "gpu-bundle.sh"), BUILD, cls.out], timeout=300)
        cls.packed = (rc, out, err)
        cls.tgz = os.path.join(cls.out, "pairbench-gpu.tgz")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.out, True)

    def test_the_bundle_holds_the_binaries_and_the_libraries_they_need_from_here(self):
        rc, out, err = self.packed
        self.assertEqual(rc, 0, out + err)
        self.assertIn("wrote " + self.tgz, out)
        with tarfile.open(self.tgz) as t:
            names = t.getnames()
        self.assertIn("fresh/build/bin/pairbench", names)
        self.assertIn("fresh/build/CMakeCache.txt", names)
        self.assertIn("fresh/ci/gpu-check.sh", names)
        self.assertTrue(any(n.startswith("fresh/build/bin/bench_") for n in names), names[:20])
        self.assertFalse([n for n in names if ".layout" in n], "layout variants go in their own archive")
        with tarfile.open(os.path.join(self.out, "pairbench-gpu-layouts.tar.xz")) as t:
            variants = t.getnames()
        self.assertIn("bench_precision.layout1", variants)
        self.assertFalse([n for n in names if n.startswith("fresh/results/reference/")])
        libs = [os.path.basename(n) for n in names if n.startswith("lib/") and n != "lib/"]
        self.assertTrue(any(n.startswith("libopenblas") for n in libs), libs)
        for kept_out in ("libc.so", "libstdc++", "libcudart", "libcublas", "libcurand"):
            self.assertFalse([n for n in libs if n.startswith(kept_out)], f"{kept_out} must come from the host: {libs}")
        self.assertTrue([n for n in names if n.startswith("alloclib/libjemalloc")], names)

    def test_unpacked_elsewhere_its_pairbench_runs_with_its_own_bench_binaries(self):
        self.assertEqual(self.packed[0], 0, self.packed[1] + self.packed[2])
        host = tempfile.mkdtemp(prefix="pairbench-gpu-host-")
        self.addCleanup(shutil.rmtree, host, True)
        shutil.copy2(self.tgz, host)
        rc, out, err = run_script(
            ["bash", os.path.join(REPO, "ci", "gpu-host-run.sh"), host, "build/bin/pairbench", "list"], timeout=120
        )
        self.assertEqual(rc, 0, out + err)
        self.assertIn("precision.gpu_gemm", out)
        rc, _, _ = run_script(
            ["bash", os.path.join(REPO, "ci", "gpu-host-run.sh"), host, "sh", "-c", "exit 5"], timeout=120
        )
        self.assertEqual(rc, 5, "the command's exit status comes back")

    def test_the_reference_script_runs_its_steps_there_and_archives_them(self):
        self.assertEqual(self.packed[0], 0, self.packed[1] + self.packed[2])
        host = tempfile.mkdtemp(prefix="pairbench-gpu-host-")
        self.addCleanup(shutil.rmtree, host, True)
        for f in ("pairbench-gpu.tgz", "pairbench-gpu-layouts.tar.xz"):
            shutil.copy2(os.path.join(self.out, f), host)
        # A packed candidate as ci/gpu-planted-build.sh writes it (here: this build's own binary).
        candidate = os.path.join(host, "candidate.tar.xz")
        with tarfile.open(candidate, "w:xz") as t:
            t.add(os.path.join(BUILD, "bin", "bench_precision"), arcname="bench_precision")
        out_dir, archive = os.path.join(host, "out"), os.path.join(host, "gpu.tgz")
        env = {"STEPS": "tests torch planted", "ARCHIVE": archive, "AB_ARGS": "--budget 0 --undecided pass"}
        rc, out, err = run_script(
            [
                "bash",
                os.path.join(REPO, "ci", "gpu-host-run.sh"),
                host,
                "bash",
                "ci/gpu-reference.sh",
                out_dir,
                candidate,
            ],
            timeout=600,
            env=env,
        )
        self.assertTrue(
            os.path.exists(os.path.join(host, "fresh", "build", "bin", "bench_precision.layout1")),
            "gpu-host-run.sh unpacks the layout variants",
        )
        with open(os.path.join(out_dir, "steps.tsv")) as f:
            steps = [line.split("\t")[:2] for line in f.read().splitlines()[1:]]
        self.assertEqual([s[0] for s in steps], ["tests", "torch", "planted"], out)
        self.assertEqual(steps[:2], [["tests", "0"], ["torch", "0"]], out)
        # The planted ab's exit is its gate's decision on real timings where there is a GPU: any
        # of the decision exits (0 unchanged, 1 a regression; 4 undecided cannot come with
        # --undecided pass, and is accepted all the same); 2 or 3 would be a broken step.
        self.assertIn(steps[2][1], ("0", "1", "4"), open(os.path.join(out_dir, "planted.log")).read())
        self.assertEqual(rc, int(steps[2][1]), "the script's exit is the first failed step's: " + out + err)
        planted_log = open(os.path.join(out_dir, "planted.log")).read()
        self.assertIn("ab-planted", planted_log)
        for f in ("ab-planted/baseline.json", "ab-planted/candidate.json", "ab-planted.gate.json"):
            self.assertTrue(os.path.exists(os.path.join(out_dir, f)), f + ": " + planted_log[-2000:])
        with open(os.path.join(out_dir, "ab-planted.gate.json"), encoding="utf-8") as f:
            self.assertEqual(json.load(f)["undecided_policy"], "pass", "AB_ARGS reached the planted ab")
        with tarfile.open(archive) as t:
            self.assertIn("out/steps.tsv", t.getnames())
        env["STEPS"] = "tests nonsense"
        rc, out, err = run_script(
            ["bash", os.path.join(REPO, "ci", "gpu-host-run.sh"), host, "bash", "ci/gpu-reference.sh", out_dir],
            timeout=120,
            env=env,
        )
        self.assertEqual(rc, 2, out + err)
        self.assertIn("unknown step 'nonsense'", err)

    def test_a_missing_build_or_bundle_is_one_line_and_exit_2(self):
        empty = tempfile.mkdtemp(prefix="pairbench-gpu-empty-")
        self.addCleanup(shutil.rmtree, empty, True)
        rc, out, err = run_script([os.path.join(REPO, "ci", "gpu-bundle.sh"), empty, empty], timeout=60)
        self.assertEqual(rc, 2, out + err)
        self.assertIn("pairbench: missing", err)
        rc, out, err = run_script(["bash", os.path.join(REPO, "ci", "gpu-host-run.sh"), empty, "true"], timeout=60)
        self.assertEqual(rc, 2, out + err)
        self.assertIn("cannot unpack", err)


if __name__ == "__main__":
    unittest.main()
