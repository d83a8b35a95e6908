"""The cross-machine page (`report.py --fleet FILE`, fleet.html) on an export with a known answer
(tests/plots/make_fleet.py: two machines of two kinds, one planted +25 % step, one 10x spread,
claims that differ per kind), and its refusal of bad exports."""
import copy
import json
import os
import re
import sys
import unittest

from helpers import CPU_RUN_SKIPPED, parse_page, run_report, tmpdir
import make_fleet

from pairbench_report import fleet


class FleetPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import tempfile

        cls._dir = tempfile.TemporaryDirectory(prefix="pairbench-fleet-")
        cls.export = os.path.join(cls._dir.name, "export.json")
        with open(cls.export, "w", encoding="utf-8") as f:
            json.dump(make_fleet.build(), f)
        cls.out = os.path.join(cls._dir.name, "out")
        cls.rc, cls.stdout, cls.stderr = run_report("--run", CPU_RUN_SKIPPED, "--fleet", cls.export, "-o", cls.out)
        if cls.rc == 0:
            cls.text, cls.page = parse_page(os.path.join(cls.out, "fleet.html"))
            cls.index_text, cls.index = parse_page(os.path.join(cls.out, "index.html"))

    @classmethod
    def tearDownClass(cls):
        cls._dir.cleanup()

    def setUp(self):
        self.assertEqual(self.rc, 0, f"report.py failed: {self.stderr}")

    def test_index_links_to_the_fleet_page_and_back(self):
        self.assertIn("fleet.html", self.index.links)
        self.assertIn("index.html", self.page.links)

    def test_every_figure_is_written_as_png_and_svg(self):
        self.assertTrue(self.page.images)
        for src in self.page.images:
            with open(os.path.join(self.out, src), "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n", src)
            self.assertIn(src[:-4] + ".svg", self.page.links)
        for tag, attr, value in self.page.attributes:
            if attr in ("src", "href"):
                self.assertNotRegex(value or "", r"^(https?:)?//", f"<{tag} {attr}> leaves the page")

    def test_the_deciding_benchmarks_are_drawn_and_the_rest_listed(self):
        # The planted step (a change point) first, then the 10x spread; the rest, within 1 % between
        # machines, only listed.
        self.assertEqual(len(self.page.images), 2, self.page.images)
        self.assertRegex(self.page.images[0], r"fleet-dispatch\.sync_vs_async_sync_device_cpu_ops_10000\.png$")
        self.assertRegex(self.page.images[1], r"fleet-copy\.h2d_pageable_bytes_1048576\.png$")
        self.assertRegex(self.text, r"copy\.h2d/pageable/bytes:1048576</code>: latest [^<]*; spread 10\.\d\d×")
        listed = re.search(r"The other (\d+) benchmark\(s\)", self.text)
        self.assertIsNotNone(listed)
        self.assertEqual(int(listed.group(1)), make_fleet.BENCHMARK_COUNT - 2)
        self.assertIn('<td class="mono">ops.elementwise/plain/n:1024</td>', self.text)

    def test_at_most_max_figures_are_drawn(self):
        groups = fleet.benchmark_groups(fleet.parse_export(json.dumps(make_fleet.build()).encode(), "export.json"))
        drawn, listed = fleet.select(groups, limit=1)
        self.assertEqual([g.benchmark for g in drawn], [make_fleet.STEP_BENCHMARK])
        self.assertEqual(len(listed), make_fleet.BENCHMARK_COUNT - 1)
        drawn, _ = fleet.select(groups, min_spread=1.0)
        self.assertEqual(len(drawn), fleet.MAX_FIGURES)

    def test_the_planted_step_is_in_the_change_point_table(self):
        row = re.search(r'<section id="change-points">.*?</section>', self.text, re.S).group(0)
        self.assertIn(make_fleet.STEP_BENCHMARK, row)
        self.assertIn("+25.0 %", row)
        self.assertIn(f"{make_fleet.CPU}-{make_fleet.STEP_RUN_INDEX:02d}", row)

    def test_claims_table_has_each_kinds_verdict_with_detail_on_hover(self):
        def row(cid):
            return re.search(rf'<tr id="fleet-claim-{cid}" class="([^"]*)">(.*?)</tr>', self.text, re.S)

        cpu, gpu = make_fleet.KINDS[make_fleet.CPU], make_fleet.KINDS[make_fleet.GPU]
        header = re.search(r'<table class="fleet-claims"><thead><tr>(.*?)</tr>', self.text).group(1)
        self.assertEqual(re.findall(r"<th>(.*?)</th>", header), ["claim", cpu, gpu])
        c6 = row("C6")
        self.assertEqual(c6.group(1), "differs")
        cells = re.findall(r'<td class="cell">(.*?)</td>', c6.group(2))
        self.assertIn(">not testable here</span>", cells[0])
        self.assertIn('title="cpu-amd-epyc-2core, run cpu-amd-epyc-2core-11', cells[0])
        self.assertIn("no CUDA device", cells[0])
        self.assertIn(">held</span>", cells[1])
        self.assertEqual(row("C2").group(1), "differs")
        self.assertEqual(row("C1").group(1), "")
        c9 = re.findall(r'<td class="cell">(.*?)</td>', row("C9").group(2))
        self.assertIn("CPU analogue", c9[0])
        self.assertIn("no run of this kind", c9[1])
        self.assertIn("2 of 4 claim(s) get different verdicts", self.text)

    def test_machines_table(self):
        section = re.search(r'<section id="machines">.*?</section>', self.text, re.S).group(0)
        for m in (make_fleet.CPU, make_fleet.GPU):
            row = re.search(rf'<tr id="machine-{m}">(.*?)</tr>', section).group(1)
            self.assertIn(make_fleet.KINDS[m], row)
            self.assertIn(f'<td class="num">{make_fleet.RUNS[m]}</td>', row)
            last = make_fleet.RUNS[m] - 1
            self.assertIn(f"run {m}-{last:02d}", row)
            self.assertIn(f"<code>{last:02d}abcdef0123</code>", row)


class Normalisation(unittest.TestCase):
    def test_each_machine_is_relative_to_its_own_first_run(self):
        groups = {
            g.benchmark: g
            for g in fleet.benchmark_groups(fleet.parse_export(json.dumps(make_fleet.build()).encode(), "export.json"))
        }
        step = groups[make_fleet.STEP_BENCHMARK]
        _, rel = fleet.normalised(step.by_machine[make_fleet.CPU])
        self.assertEqual(rel[0], 1.0)
        before, after = rel[: make_fleet.STEP_RUN_INDEX], rel[make_fleet.STEP_RUN_INDEX :]
        self.assertTrue(all(0.97 < r < 1.03 for r in before), before)
        self.assertTrue(all(1.21 < r < 1.29 for r in after), after)
        _, rel_gpu = fleet.normalised(step.by_machine[make_fleet.GPU])
        self.assertTrue(all(0.97 < r < 1.03 for r in rel_gpu), rel_gpu)
        spread = groups[make_fleet.SPREAD_BENCHMARK]
        self.assertAlmostEqual(spread.spread(), make_fleet.SPREAD, delta=0.3)
        self.assertEqual(len(step.change_points), 1)


class BadExport(unittest.TestCase):
    def setUp(self):
        self.work = tmpdir(self)
        self.out = os.path.join(self.work, "out")

    def assert_refused(self, text, *expected):
        path = os.path.join(self.work, "export.json")
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        rc, stdout, stderr = run_report("--run", CPU_RUN_SKIPPED, "--fleet", path, "-o", self.out)
        self.assertEqual(rc, 2, f"stdout={stdout!r} stderr={stderr!r}")
        line = stderr.strip()
        self.assertNotIn("\n", line)
        self.assertNotIn("Traceback", stderr)
        self.assertTrue(line.startswith(f"report: {path}: "), line)
        for piece in expected:
            self.assertIn(piece, line)
        self.assertFalse(os.path.exists(self.out), "output written for bad input")

    def mutated(self, mutate):
        doc = make_fleet.build()
        mutate(doc)
        return json.dumps(doc)

    def test_wrong_format(self):
        self.assert_refused(
            self.mutated(lambda d: d.__setitem__("format", "pairbench-history-export/2")),
            'format: expected one of "pairbench-history-export/1", is the string "pairbench-history-export/2"',
        )

    def test_median_not_positive(self):
        self.assert_refused(
            self.mutated(lambda d: d["series"][3]["points"][2].__setitem__("median", -1)),
            "series[3].points[2].median: expected a finite number > 0, is the number -1",
        )

    def test_median_a_string(self):
        self.assert_refused(
            self.mutated(lambda d: d["series"][0]["points"][0].__setitem__("median", "x")),
            'series[0].points[0].median: expected a finite number > 0, is the string "x"',
        )

    def test_missing_machines(self):
        self.assert_refused(self.mutated(lambda d: d.pop("machines")), "machines: missing")

    def test_unknown_verdict(self):
        self.assert_refused(
            self.mutated(lambda d: d["claims"][1]["claims"][0].__setitem__("verdict", "maybe")),
            'claims[1].claims[0].verdict: expected one of "held", "did not hold"',
            'is the string "maybe"',
        )

    def test_series_of_an_unlisted_machine(self):
        self.assert_refused(
            self.mutated(lambda d: d["series"][1].__setitem__("machine_key", "ghost")),
            'series[1].machine_key: expected one of machines[].machine_key, is the string "ghost"',
        )

    def test_bad_time(self):
        self.assert_refused(
            self.mutated(lambda d: d["series"][0]["points"][1].__setitem__("started_at", "yesterday")),
            "series[0].points[1].started_at: expected an ISO 8601 UTC time string",
        )

    def test_nan_and_truncation(self):
        self.assert_refused(
            self.mutated(lambda d: None).replace('"median": ', '"median": NaN, "x": ', 1), "not valid JSON", "NaN"
        )
        whole = self.mutated(lambda d: None)
        self.assert_refused(whole[: whole.index('"series"')], "not valid JSON at line 1", "truncated")

    def test_not_an_object(self):
        self.assert_refused("[1]", "(top level): expected an object (a pairbench history export), is an array")

    def test_fifo_is_refused_before_it_is_opened(self):
        path = os.path.join(self.work, "fifo")
        os.mkfifo(path)
        rc, _, stderr = run_report("--run", CPU_RUN_SKIPPED, "--fleet", path, "-o", self.out, timeout=30)
        self.assertEqual(rc, 2)
        self.assertIn(f"{path}: expected a regular file (a history export), is a FIFO", stderr)


class Escaping(unittest.TestCase):
    def test_hostile_strings_stay_text(self):
        hostile = "<script>alert(1)</script>\"'&"
        doc = make_fleet.build()
        doc["claims"][0]["claims"][0]["detail"] = hostile
        doc["claims"][0]["machine_kind"] = hostile
        doc["series"][0]["benchmark"] = hostile
        work = tmpdir(self)
        path = os.path.join(work, "export.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f)
        rc, _, stderr = run_report("--run", CPU_RUN_SKIPPED, "--fleet", path, "-o", os.path.join(work, "out"))
        self.assertEqual(rc, 0, stderr)
        text, page = parse_page(os.path.join(work, "out", "fleet.html"))
        self.assertNotIn("script", page.tags)
        self.assertNotIn("<script>", text)
        self.assertIn("&lt;script&gt;", text)


if __name__ == "__main__":
    sys.exit(unittest.main())
