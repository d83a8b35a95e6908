"""The report renders from fixture run files: a GPU-shaped one (synthetic CUDA, copy, precision
and allocator results), a real CPU-only one whose CUDA arms were not supported, and a real CPU
run with a history database."""
import json
import os
import re
import unittest

from helpers import (CPU_RUN_DISPATCH, CPU_RUN_SKIPPED, GPU_RUN, judged, parse_page, run_report, tmpdir)
import make_history

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
            if name != "index.html":
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
        for expected in ("dispatch.sync_vs_async-ratio", "dispatch.sync_vs_async-metric",
                         "copy.h2d-ratio", "copy.h2d-metric", "precision.gpu_gemm-accuracy",
                         "precision.cpu_gemm_loops-accuracy", "alloc.small_objects-rss", "alloc.tensor_buffers-rss",
                         "limits.core_pingpong-metric"):
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
        self.assertIn("No history database was given", text)


class RenderMinimal(RenderMixin, unittest.TestCase):
    def test_run_without_experiments(self):
        work = tmpdir(self)
        path = os.path.join(work, "empty.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"context": {}, "benchmarks": [],
                       "pairbench": {"schema_version": 1, "environment": {}, "experiments": []}}, f)
        out, text, page = self.render(path)
        self.assertEqual(page.images, [])
        self.assertIn("The run file has no experiments", text)
        self.assertRegex(text, r'id="claim-C3".*?not run here.*?dispatch.sync_vs_async: not in this run')


class RenderHistory(RenderMixin, unittest.TestCase):
    def test_history_trends_change_points_and_baseline(self):
        db = os.path.join(tmpdir(self), "history.sqlite")
        make_history.build(db, machine="343b40c11781b539")
        out, text, page = self.render(CPU_RUN_DISPATCH, "--history", db)
        self.assert_figures_complete(out, page)
        history = [src for src in page.images if "-history-" in src]
        self.assertEqual(len(history), 3, history)  # one per experiment in the database
        self.assertIn("Change points", text)
        self.assertIn("+18.0 %", text)
        self.assertIn("Baselines:", text)
        self.assertIn("343b40c11781b539", text)

    def test_history_without_change_points(self):
        db = os.path.join(tmpdir(self), "history.sqlite")
        make_history.build(db, machine="343b40c11781b539", empty_change_points=True)
        out, text, page = self.render(CPU_RUN_SKIPPED, "--history", db)
        self.assert_figures_complete(out, page)
        self.assertIn("No change points recorded", text)


if __name__ == "__main__":
    unittest.main()
