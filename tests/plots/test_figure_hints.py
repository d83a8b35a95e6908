"""The figure an experiment declares (`figure` in the run file: kind, x_axis, x_scale, y_scale,
counter, arm_values) decides what the report draws; names decide nothing. Run files from before
experiments declared figures (no `figure`) still draw, by the old rules."""
import unittest

from helpers import tmpdir
from pairbench_report import figures
from pairbench_report.runfile import RunFile


def run_file(name, arms, grid, figure=None, metric="ns_per_op", unit="ns", better="lower", counters=None):
    """One experiment: `arms` (baseline first) at every point of `grid` ({axis: [values]}, crossed),
    each arm's median 100 * (arm index + 1) * (first axis value); `counters`: {counter: value} on
    every process sample."""
    points, benchmarks = [[]], []
    for axis, values in grid.items():
        points = [p + [(axis, v)] for p in points for v in values]
    out_points = []
    for p in points:
        scale = float(p[0][1]) if p else 1.0
        entries, ratios = [], []
        for i, arm in enumerate(arms):
            bench = "/".join([name, arm] + [f"{k}:{v}" for k, v in p])
            median = 100.0 * (i + 1) * scale
            entries.append(
                {
                    "arm": arm,
                    "role": "baseline" if i == 0 else "treatment",
                    "benchmark": bench,
                    "verification": "passed",
                    "samples": 3,
                    "median": median,
                    "min": 0.9 * median,
                    "max": 1.1 * median,
                }
            )
            benchmarks += [{"name": bench, "metric_value": median, **(counters or {})}] * 3
            if i:
                ratios.append(
                    {
                        "treatment": arm,
                        "ratio": 1.0 / (i + 1),
                        "ci_low": 0.9 / (i + 1),
                        "ci_high": 1.1 / (i + 1),
                        "confidence": 0.95,
                    }
                )
        out_points.append({"params": dict(p), "arms": entries, "ratios": ratios})
    exp = {
        "name": name,
        "question": "q",
        "claim": "",
        "kind": "comparison",
        "metric": metric,
        "unit": unit,
        "better": better,
        "points": out_points,
    }
    if figure is not None:
        exp["figure"] = {
            "kind": "metric",
            "x_axis": "",
            "x_scale": "auto",
            "y_scale": "auto",
            "counter": "",
            "arm_axis": "",
            "arm_values": {},
            **figure,
        }
    doc = {
        "benchmarks": benchmarks,
        "pairbench": {
            "schema_version": 1,
            "profile": "quick",
            "started_at": "",
            "finished_at": "",
            "command": "",
            "repetitions": 3,
            "experiments": [exp],
        },
    }
    return RunFile(f"{name}.json", doc)


class ScaleRecorder(figures.Writer):
    """Writes figures as usual and remembers each one's axes: (x scale, y scale, x label)."""

    def __init__(self, outdir):
        super().__init__(outdir)
        self.axes = {}

    def save(self, fig, slug):
        self.axes[slug] = [(ax.get_xscale(), ax.get_yscale(), ax.get_xlabel()) for ax in fig.axes if ax.axison]
        return super().save(fig, slug)


def draw_all(testcase, run):
    """Every experiment figure the report draws for the run's one experiment: {slug suffix: axes}."""
    exp = run.experiments[0]
    writer = ScaleRecorder(tmpdir(testcase))
    plan = figures.figure_plan(exp, run)
    figures.ratio_figure(exp, writer, plan)
    figures.metric_figure(exp, run, writer, plan)
    figures.scaling_figure(exp, run, writer, plan)
    figures.rss_figure(exp, run, writer, plan)
    return {slug[len(exp["name"]) + 1 :]: axes for slug, axes in writer.axes.items()}


class DeclaredFigure(unittest.TestCase):
    def test_a_declared_plain_figure_is_not_second_guessed_from_names_or_counters(self):
        # Named like a precision experiment, arms named like worker counts, error and RSS counters:
        # the old rules would add an accuracy panel, a scaling and an RSS figure. Declared 'metric': none.
        run = run_file(
            "precision.lookalike",
            ["workers_0", "workers_2"],
            {"n": ["64", "1024"]},
            figure={"kind": "metric"},
            metric="flop_per_second",
            unit="FLOP/s",
            better="higher",
            counters={"rel_error": 1e-6, "peak_rss_bytes": 1e6, "consumer_idle_fraction": 0.1},
        )
        self.assertEqual(sorted(draw_all(self, run)), ["metric", "ratio"])
        legacy = run_file(
            "precision.lookalike",
            ["workers_0", "workers_2"],
            {"n": ["64", "1024"]},
            metric="flop_per_second",
            unit="FLOP/s",
            better="higher",
            counters={"rel_error": 1e-6, "peak_rss_bytes": 1e6, "consumer_idle_fraction": 0.1},
        )
        self.assertEqual(sorted(draw_all(self, legacy)), ["accuracy", "ratio", "rss", "scaling"])

    def test_accuracy_draws_the_declared_counter_only(self):
        run = run_file(
            "scratch.sum",
            ["plain", "fast"],
            {"n": ["64", "1024"]},
            figure={"kind": "accuracy", "counter": "ulp_error"},
            counters={"ulp_error": 2.0, "rel_error": 1e-6},
        )
        plan = figures.figure_plan(run.experiments[0], run)
        self.assertEqual(plan["error_counter"], "ulp_error")
        self.assertEqual(sorted(draw_all(self, run)), ["accuracy", "ratio"])

    def test_scaling_takes_each_arms_number_from_the_declaration(self):
        run = run_file(
            "scratch.threads",
            ["single", "pair", "quad"],
            {"bytes": ["4096"]},
            figure={"kind": "scaling", "arm_axis": "threads", "arm_values": {"single": 1, "pair": 2, "quad": 4}},
            metric="items_per_second",
            unit="items/s",
            better="higher",
        )
        drawn = draw_all(self, run)
        self.assertIn("scaling", drawn)
        self.assertEqual(drawn["scaling"][0][2], "threads (arm)")
        _, knees = figures.scaling_figure(run.experiments[0], run, figures.Writer(tmpdir(self)))
        self.assertEqual(knees, ["bytes:4 KiB: 4 threads"])  # medians 100, 200, 300: only 4 within 95 %

    def test_memory_draws_the_metric_against_the_declared_counter(self):
        run = run_file(
            "scratch.pool",
            ["malloc", "pool"],
            {"bytes": ["4096", "65536"]},
            figure={"kind": "memory", "counter": "resident_bytes"},
            counters={"resident_bytes": 5e6},
        )
        self.assertEqual(sorted(draw_all(self, run)), ["metric", "ratio", "rss"])
        self.assertIn("resident_bytes", draw_all(self, run)["rss"][0][2])

    def test_declared_scales_override_the_span_rule(self):
        grid = {"bytes": ["4096", "8192", "16384", "1048576"]}  # spans 256x: auto would be log
        auto = draw_all(self, run_file("scratch.copy", ["a", "b"], grid, figure={}))
        self.assertEqual(auto["metric"][0][0], "log")
        linear = draw_all(
            self, run_file("scratch.copy", ["a", "b"], grid, figure={"x_scale": "linear", "y_scale": "log"})
        )
        self.assertEqual(linear["metric"][0][:2], ("linear", "log"))
        self.assertEqual(linear["ratio"][0][0], "linear")
        narrow = {"n": ["2", "3"]}  # spans 1.5x: auto would be linear
        forced = draw_all(self, run_file("scratch.copy", ["a", "b"], narrow, figure={"x_scale": "log"}))
        self.assertEqual(forced["metric"][0][0], "log")

    def test_declared_x_axis_picks_one_of_several_numeric_axes(self):
        grid = {"n": ["64", "1024"], "threads": ["1", "2"]}
        undeclared = draw_all(self, run_file("scratch.mm", ["a", "b"], grid, figure={}))
        self.assertEqual(undeclared["metric"][0][2], "grid point")  # two numeric axes: categories
        declared = draw_all(self, run_file("scratch.mm", ["a", "b"], grid, figure={"x_axis": "threads"}))
        self.assertEqual(declared["metric"][0][2], "threads")
        self.assertEqual(len(declared["metric"]), 2)  # one panel per n


class OldRunFiles(unittest.TestCase):
    def test_without_a_declared_figure_the_old_rules_still_draw(self):
        run = run_file(
            "precision.old",
            ["fp32", "bf16"],
            {"n": ["256", "1024"]},
            metric="flop_per_second",
            unit="FLOP/s",
            better="higher",
            counters={"rel_error": 1e-3},
        )
        plan = figures.figure_plan(run.experiments[0], run)
        self.assertFalse(plan["declared"])
        self.assertEqual(plan["error_counter"], "rel_error")
        self.assertEqual(sorted(draw_all(self, run)), ["accuracy", "ratio"])


if __name__ == "__main__":
    unittest.main()
