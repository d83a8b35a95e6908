"""Reads the history database the harness writes (SQLite; tables runs, samples, baselines,
change_points). Opened read-only: the report never writes to it."""
import datetime
import math
import os
import sqlite3
import statistics
import urllib.parse

from .errors import BadInput

_REQUIRED = {
    "runs": {"id", "started_at", "git_sha", "machine_key", "profile", "fingerprint", "run_file"},
    "samples": {"run_id", "benchmark", "experiment", "arm", "repetition", "metric", "unit", "better", "value"},
    "baselines": {"machine_key", "run_id", "updated_at"},
    "change_points": {"benchmark", "machine_key", "run_id", "before", "after"},
}


def parse_time(text):
    text = str(text).strip()
    if text.endswith("Z"):
        text = text[:-1] + "+00:00"
    t = datetime.datetime.fromisoformat(text)
    if t.tzinfo is None:
        t = t.replace(tzinfo=datetime.timezone.utc)
    return t


class Series:
    """One benchmark on one machine over time: per run, the samples' values."""

    def __init__(self, benchmark, experiment, machine_key, unit, metric, better):
        self.benchmark, self.experiment, self.machine_key = benchmark, experiment, machine_key
        self.unit, self.metric, self.better = unit, metric, better
        self.runs = []  # (run_id, started_at, [values]) in time order

    def medians(self):
        return [(rid, t, statistics.median(v)) for rid, t, v in self.runs]


class History:
    def __init__(self, path):
        self.path = path
        if not os.path.exists(path):
            raise BadInput(f"{path}: no such file (history database)")
        if os.path.isdir(path):
            raise BadInput(f"{path}: is a directory, expected a history database")
        uri = "file:" + urllib.parse.quote(os.path.abspath(path)) + "?mode=ro"
        try:
            con = sqlite3.connect(uri, uri=True)
        except sqlite3.Error as e:
            raise BadInput(f"{path}: cannot open as SQLite: {e}") from None
        try:
            self._load(con)
        except sqlite3.DatabaseError as e:
            raise BadInput(f"{path}: not a readable history database: {e}") from None
        finally:
            con.close()

    def _load(self, con):
        for table, columns in _REQUIRED.items():
            have = {row[1] for row in con.execute(f"PRAGMA table_info({table})")}
            if not have:
                raise BadInput(f"{self.path}: table {table}: missing")
            lacking = sorted(columns - have)
            if lacking:
                raise BadInput(f"{self.path}: table {table}: missing column {lacking[0]}")
        self.runs = {}
        for rid, started, sha, machine, profile in con.execute(
                "SELECT id, started_at, git_sha, machine_key, profile FROM runs"):
            try:
                when = parse_time(started)
            except (TypeError, ValueError):
                raise BadInput(f"{self.path}: field runs.started_at (run {rid}): not an ISO-8601 time: "
                               f"{str(started)[:40]!r}") from None
            self.runs[rid] = {"id": rid, "started_at": when, "git_sha": str(sha), "machine_key": str(machine),
                              "profile": str(profile)}
        self.series = {}  # (benchmark, machine_key) -> Series
        rows = con.execute(
            "SELECT s.run_id, s.benchmark, s.experiment, s.metric, s.unit, s.better, s.value, r.machine_key "
            "FROM samples s JOIN runs r ON r.id = s.run_id ORDER BY r.started_at, s.run_id")
        for rid, bench, exp, metric, unit, better, value, machine in rows:
            if value is None or not isinstance(value, (int, float)) or not math.isfinite(value):
                continue
            key = (str(bench), str(machine))
            s = self.series.get(key)
            if s is None:
                s = self.series[key] = Series(str(bench), str(exp), str(machine), str(unit), str(metric), str(better))
            if not s.runs or s.runs[-1][0] != rid:
                s.runs.append((rid, self.runs[rid]["started_at"], []))
            s.runs[-1][2].append(float(value))
        self.baselines = {}
        for machine, rid in con.execute("SELECT machine_key, run_id FROM baselines"):
            if rid in self.runs:
                self.baselines[str(machine)] = rid
        self.change_points = {}
        for bench, machine, rid, before, after in con.execute(
                "SELECT benchmark, machine_key, run_id, before, after FROM change_points"):
            if rid in self.runs:
                self.change_points.setdefault((str(bench), str(machine)), []).append(
                    (rid, float(before), float(after)))

    def experiments(self):
        """Experiment name -> its series, benchmarks in name order."""
        out = {}
        for (bench, machine), s in sorted(self.series.items()):
            out.setdefault(s.experiment, []).append(s)
        return out

    def machines(self):
        return sorted({r["machine_key"] for r in self.runs.values()})
