"""The report renders from fixture run files: a GPU-shaped one (synthetic CUDA, copy, precision
and allocator results), a real CPU-only one whose CUDA arms were not supported, and a real CPU
run with a history export (as `pairbench report --db` passes it: the report never opens a database)."""
import json
import os
import re
import subprocess
import sys
import unittest

from helpers import CPU_RUN_DISPATCH, CPU_RUN_SKIPPED, GPU_RUN, REPO, judged, parse_page, run_report, tmpdir
import make_history_export

FIGURE_NAME = re.compile(r"^fig\d\d-[A-Za-z0-9._-]+\.(png|svg)$")


class RenderMixin:
    def render(self, run, *extra):
        out = tmpdir(self)
        rc, stdout, stderr = run_report("--run", judged(self, run), *extra, "-o", out)
        self.assertEqual(rc, 0, f"report.py failed: {stderr}")
        self.assertIn("index.html", stdout)
        text, page = parse_page(os.path.join(out, "index.html"))
        return out, text, page

    def assert_figures_complete(self, out, page):
        self.assertTrue(page.images, "no figures on the page")
        for src in page.images:
            self.assertRegex(src, FIGURE_NAME)
            with open(os.path.join(out, src), "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n", src)
            svg = src[:-4] + ".svg"
            self.assertIn(svg, page.links, f"{src} has no SVG link")
            with open(os.path.join(out, svg), encoding="utf-8") as f:
                self.assertIn("<svg", f.read(2000))
        for name in os.listdir(out):
            if name not in ("index.html", "fleet.html"):
                self.assertRegex(name, FIGURE_NAME)
        # Offline: nothing on the page points off the machine.
        for tag, attr, value in page.attributes:
            if attr in ("src", "href"):
                self.assertNotRegex(value or "", r"^(https?:)?//", f"<{tag} {attr}> leaves the page")


class RenderGpu(RenderMixin, unittest.TestCase):
    def test_gpu_fixture_renders_every_kind_of_figure(self):
        out, text, page = self.render(GPU_RUN)
        self.assert_figures_complete(out, page)
        names = " ".join(page.images)
        for expected in (
            "dispatch.sync_vs_async-ratio",
            "dispatch.sync_vs_async-metric",
            "copy.h2d-ratio",
            "copy.h2d-metric",
            "precision.gpu_gemm-accuracy",
            "precision.cpu_gemm_loops-accuracy",
            "alloc.small_objects-rss",
            "alloc.tensor_buffers-rss",
            "limits.core_pingpong-metric",
        ):
            self.assertIn(expected, names)
        # The synthetic data is announced, never passed off as measured.
        self.assertIn("Fixture note from the run file", text)
        self.assertIn("SYNTHETIC TEST DATA", text)
        # Claims table: every claim, with verdicts this fixture decides.
        for n in range(1, 21):
            self.assertIn(f'id="claim-C{n}"', text)
        self.assertRegex(text, r'id="claim-C17".*?v-recorded.*?NVIDIA H100')
        self.assertRegex(text, r'id="claim-C6".*?<span class="verdict v-held">held</span>')
        self.assertRegex(text, r'id="claim-C4".*?not run here.*?dispatch.bounded_queue: not in this run')
        # Environment section with the fingerprint and its warnings.
        self.assertIn('id="environment"', text)
        self.assertIn("OPENBLAS_CORETYPE=SkylakeX", text)
        self.assertIn("gpu_compute_capability", text)
        # Skipped arms are listed with their reason.
        self.assertIn("libmimalloc.so.2 not installed", text)


class RenderCpuOnly(RenderMixin, unittest.TestCase):
    def test_cpu_run_with_not_supported_cuda_arms(self):
        out, text, page = self.render(CPU_RUN_SKIPPED)
        self.assert_figures_complete(out, page)
        self.assertIn("no CUDA device", text)
        self.assertIn('id="not-run"', text)
        self.assertRegex(text, r'id="claim-C17".*?not run here.*?no CUDA device')
        # C3 ran on the CPU: its verdict comes from the CPU points, the CUDA ones are listed as not run.
        self.assertRegex(text, r'id="claim-C3".*?not run here \(no CUDA device\)')
        self.assertIn("No history was given", text)


class RenderMinimal(RenderMixin, unittest.TestCase):
    def test_run_without_experiments(self):
        work = tmpdir(self)
        path = os.path.join(work, "empty.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(
                {
                    "context": {},
                    "benchmarks": [],
                    "pairbench": {"schema_version": 1, "environment": {}, "experiments": []},
                },
                f,
            )
        out, text, page = self.render(path)
        self.assertEqual(page.images, [])
        self.assertIn("The run file has no experiments", text)
        self.assertRegex(text, r'id="claim-C3".*?not run here.*?dispatch.sync_vs_async: not in this run')


class RenderHistory(RenderMixin, unittest.TestCase):
    def test_history_trends_change_points_and_baseline(self):
        export = make_history_export.write(os.path.join(tmpdir(self), "export.json"), machine="343b40c11781b539")
        out, text, page = self.render(CPU_RUN_DISPATCH, "--history-export", export)
        self.assert_figures_complete(out, page)
        history = [src for src in page.images if "-history-" in src]
        self.assertEqual(len(history), 3, history)  # one per experiment in the export
        self.assertIn("From <code>history.sqlite</code>: 22 run(s) on 2 machine(s)", text)
        self.assertIn("Change points", text)
        self.assertIn("+18.0 %", text)
        self.assertRegex(text, r"Baselines: <code>343b40c11781b539</code>: run 343b40-run05 \(2026-11-12 02:00, git ")
        self.assertIn("343b40c11781b539", text)
        self.assertTrue(os.path.exists(os.path.join(out, "fleet.html")))  # the same export: the cross-machine page

    def test_history_without_change_points(self):
        export = make_history_export.write(
            os.path.join(tmpdir(self), "export.json"), machine="343b40c11781b539", empty_change_points=True
        )
        out, text, page = self.render(CPU_RUN_SKIPPED, "--history-export", export)
        self.assert_figures_complete(out, page)
        self.assertIn("No change points found", text)

    def test_export_without_values_experiments_or_baselines(self):
        """An export written before series carried experiment, points values and machines their
        baseline: the trend figures still draw (medians only, experiment from the benchmark's name)."""
        doc = make_history_export.build("343b40c11781b539")
        for m in doc["machines"]:
            del m["baseline_run_id"]
        for s in doc["series"]:
            del s["experiment"]
            for p in s["points"]:
                del p["values"]
        del doc["db"]
        del doc["regressions"]
        export = os.path.join(tmpdir(self), "old-export.json")
        with open(export, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        out, text, page = self.render(CPU_RUN_DISPATCH, "--fleet", export)
        self.assert_figures_complete(out, page)
        self.assertEqual(len([src for src in page.images if "-history-" in src]), 3)
        self.assertIn("From <code>old-export.json</code>", text)
        self.assertNotIn("Baselines:", text)

    def test_the_report_opens_no_database(self):
        """The history reaches the report only as pairbench exports it: no sqlite3, in the source or loaded."""
        package = os.path.join(REPO, "plots")
        for root, _, files in os.walk(package):
            for name in files:
                if name.endswith(".py"):
                    with open(os.path.join(root, name), encoding="utf-8") as f:
                        self.assertNotRegex(f.read(), r"\bimport sqlite3|\bfrom sqlite3\b", name)
        export = make_history_export.write(os.path.join(tmpdir(self), "export.json"), machine="343b40c11781b539")
        script = (
            "import sys; sys.path.insert(0, sys.argv[1]); from pairbench_report import cli; "
            "rc = cli.main(sys.argv[2:]); sys.exit(rc or ('sqlite3' in sys.modules and 5))"
        )
        proc = subprocess.run(
            [
                sys.executable,
                "-c",
                script,
                package,
                "--run",
                judged(self, CPU_RUN_DISPATCH),
                "--history-export",
                export,
                "-o",
                tmpdir(self),
            ],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "MPLBACKEND": "Agg"},
        )
        self.assertEqual(proc.returncode, 0, "exit 5: sqlite3 was loaded; " + proc.stderr)

    def test_history_database_is_refused_naming_pairbench_report(self):
        rc, stdout, stderr = run_report(
            "--run", CPU_RUN_DISPATCH, "--history", "results/history.sqlite", "-o", tmpdir(self)
        )
        self.assertEqual(rc, 2, stderr)
        self.assertIn("no longer reads a history database", stderr)
        self.assertIn("pairbench report --run FILE --db DB", stderr)


if __name__ == "__main__":
    unittest.main()
