"""The history as `pairbench` exports it (`pairbench history export`, format
pairbench-history-export/1, read and checked by fleet.py): per machine and benchmark each run's
median and process values, the change points the export found over those runs, and each machine's
baseline run. The report never opens a history database: `pairbench report --db DB` (an SQLite
path or a PostgreSQL URL) writes the export and passes it (`--history-export FILE`)."""
import datetime
import os


def parse_time(text):
    text = str(text).strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    t = datetime.datetime.fromisoformat(text)
    if t.tzinfo is None:
        t = t.replace(tzinfo=datetime.timezone.utc)
    return t


def experiment_of(benchmark):
    """Exports written before series carried `experiment`: a benchmark is named experiment/arm/..."""
    return benchmark.split("/", 1)[0]


class Series:
    """One benchmark on one machine over time: per run, the processes' values and the median."""

    def __init__(self, benchmark, experiment, machine_key, unit, metric, better):
        self.benchmark, self.experiment, self.machine_key = benchmark, experiment, machine_key
        self.unit, self.metric, self.better = unit, metric, better
        self.runs = []  # (run_id, started_at, [values]) in time order; no values in older exports
        self.points = []  # (run_id, started_at, median), the same runs
        self.resolutions = []  # (started_at, resolution): what a gate of that run was gated at (>= 3 runs)

    def medians(self):
        return self.points


class History:
    """The trend figures' and the history section's view of an export (a fleet.Fleet)."""

    def __init__(self, export):
        self.label = os.path.basename(export.db) if export.db and "://" not in export.db else export.db
        self.label = self.label or os.path.basename(export.path)
        self.run_count = sum(m["runs"] for m in export.machines.values())
        self.runs = {}  # run_id -> {"id", "started_at", "git_sha", "machine_key"}: the exported runs
        self.series = {}  # (benchmark, machine_key) -> Series
        for s in export.series:
            key = (s["benchmark"], s["machine_key"])
            series = self.series.get(key)
            if series is None:
                series = self.series[key] = Series(
                    s["benchmark"],
                    s["experiment"] or experiment_of(s["benchmark"]),
                    s["machine_key"],
                    s["unit"],
                    s["metric"],
                    s["better"],
                )
            for p in s["points"]:
                self.runs.setdefault(
                    p["run_id"],
                    {
                        "id": p["run_id"],
                        "started_at": p["started_at"],
                        "git_sha": p["git_sha"],
                        "machine_key": s["machine_key"],
                    },
                )
                series.runs.append((p["run_id"], p["started_at"], p["values"]))
                series.points.append((p["run_id"], p["started_at"], p["median"]))
                if p.get("resolution") is not None:
                    series.resolutions.append((p["started_at"], p["resolution"]))
        self.baselines = {
            m: info["baseline_run_id"] for m, info in export.machines.items() if info["baseline_run_id"] is not None
        }
        self.change_points = {}  # (benchmark, machine_key) -> [(run_id, before, after)]
        for c in export.change_points:
            if c["run_id"] in self.runs:
                self.change_points.setdefault((c["benchmark"], c["machine_key"]), []).append(
                    (c["run_id"], c["before"], c["after"])
                )
        self._machines = sorted(export.machines)
        self.regressions = export.regressions  # None where the export predates them

    def experiments(self):
        """Experiment name -> its series, benchmarks in name order."""
        out = {}
        for (bench, machine), s in sorted(self.series.items()):
            out.setdefault(s.experiment, []).append(s)
        return out

    def machines(self):
        return self._machines
