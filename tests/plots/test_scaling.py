"""The worker-scaling figure (C5): which experiments get it, and where it puts the knee, on a
hand-made run with known medians."""
import os
import unittest

from helpers import tmpdir
from pairbench_report import figures
from pairbench_report.runfile import RunFile


def loader_run(medians, idle):
    """medians / idle: {batch_size: [value per arm workers_0, _1, _2, _4]}."""
    points, benchmarks = [], []
    for batch, values in medians.items():
        arms = []
        for arm, value, idle_fraction in zip(("workers_0", "workers_1", "workers_2", "workers_4"), values, idle[batch]):
            name = f"pipeline.loader/{arm}/device:cpu/batch_size:{batch}"
            arms.append(
                {
                    "arm": arm,
                    "role": "baseline" if arm == "workers_0" else "treatment",
                    "benchmark": name,
                    "verification": "passed",
                    "samples": 3,
                    "median": value,
                    "min": 0.9 * value,
                    "max": 1.1 * value,
                }
            )
            benchmarks += [{"name": name, "metric_value": value, "consumer_idle_fraction": idle_fraction}] * 3
        points.append({"params": {"device": "cpu", "batch_size": batch}, "arms": arms, "ratios": []})
    doc = {
        "benchmarks": benchmarks,
        "pairbench": {
            "schema_version": 1,
            "profile": "quick",
            "started_at": "",
            "finished_at": "",
            "command": "",
            "repetitions": 3,
            "experiments": [
                {
                    "name": "pipeline.loader",
                    "question": "q",
                    "claim": "C5",
                    "kind": "comparison",
                    "metric": "samples_per_second",
                    "unit": "1/s",
                    "better": "higher",
                    "points": points,
                }
            ],
        },
    }
    return RunFile("loader.json", doc)


class Knee(unittest.TestCase):
    def test_fewest_workers_within_five_percent_of_the_best(self):
        self.assertEqual(figures.knee({0: 100, 1: 190, 2: 195, 4: 180}), 1)
        self.assertEqual(figures.knee({0: 100, 1: 150, 2: 195, 4: 200}), 2)
        self.assertEqual(figures.knee({0: 100, 1: 50}), 0)

    def test_only_experiments_whose_arms_are_worker_counts(self):
        run = loader_run({"16": [1, 2, 2, 2]}, {"16": [0.5, 0.1, 0.1, 0.1]})
        self.assertEqual(
            figures.worker_counts(run.experiments[0]), {"workers_0": 0, "workers_1": 1, "workers_2": 2, "workers_4": 4}
        )
        exp = dict(run.experiments[0])
        exp["points"] = [
            {**p, "arms": [{**a, "arm": "pinned" if a["arm"] == "workers_1" else a["arm"]} for a in p["arms"]]}
            for p in exp["points"]
        ]
        self.assertIsNone(figures.worker_counts(exp))

    def test_figure_is_written_with_the_knee_per_batch_size(self):
        run = loader_run(
            {"16": [100.0, 190.0, 195.0, 180.0], "64": [100.0, 150.0, 195.0, 200.0]},
            {"16": [0.6, 0.1, 0.05, 0.05], "64": [0.6, 0.3, 0.05, 0.05]},
        )
        out = tmpdir(self)
        files, knees = figures.scaling_figure(run.experiments[0], run, figures.Writer(out))
        self.assertTrue(os.path.getsize(os.path.join(out, files["png"])) > 0)
        self.assertEqual(
            knees, ["device:cpu batch_size:16: 1 worker thread", "device:cpu batch_size:64: 2 worker threads"]
        )


if __name__ == "__main__":
    unittest.main()
