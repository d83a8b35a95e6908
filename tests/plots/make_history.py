#!/usr/bin/env python3
"""Builds a small history database for the report's tests, with the schema the harness writes
(runs, samples, baselines, change_points). SYNTHETIC values from a fixed seed: 14 nightly runs on
this fixture's machine plus 8 on a second machine, a +18 % step at run 9 recorded as a change
point, and run 5 as the machine's baseline.

  /usr/bin/python3 tests/plots/make_history.py OUT.sqlite [--machine KEY] [--empty-change-points]
"""
import argparse
import datetime
import json
import math
import os
import random
import sqlite3

SCHEMA = """
CREATE TABLE runs(id INTEGER PRIMARY KEY, started_at TEXT NOT NULL, git_sha TEXT NOT NULL, machine_key TEXT NOT NULL,
                  profile TEXT NOT NULL, fingerprint TEXT NOT NULL, run_file TEXT NOT NULL);
CREATE TABLE samples(run_id INTEGER NOT NULL REFERENCES runs(id), benchmark TEXT NOT NULL, experiment TEXT NOT NULL,
                     arm TEXT NOT NULL, repetition INTEGER NOT NULL, metric TEXT NOT NULL, unit TEXT NOT NULL,
                     better TEXT NOT NULL, value REAL NOT NULL);
CREATE TABLE baselines(machine_key TEXT PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id), updated_at TEXT NOT NULL);
CREATE TABLE change_points(benchmark TEXT NOT NULL, machine_key TEXT NOT NULL, run_id INTEGER NOT NULL,
                           before REAL NOT NULL, after REAL NOT NULL, PRIMARY KEY(benchmark, machine_key, run_id));
"""

# benchmark -> (experiment, arm, metric, unit, better, typical value)
BENCHMARKS = {
    "dispatch.sync_vs_async/sync/device:cpu/ops:1000": ("dispatch.sync_vs_async", "sync", "ns_per_op", "ns", "lower", 880.0),
    "dispatch.sync_vs_async/sync/device:cpu/ops:10000": ("dispatch.sync_vs_async", "sync", "ns_per_op", "ns", "lower", 1060.0),
    "dispatch.sync_vs_async/async/device:cpu/ops:1000": ("dispatch.sync_vs_async", "async", "ns_per_op", "ns", "lower", 105.0),
    "dispatch.sync_vs_async/async/device:cpu/ops:10000": ("dispatch.sync_vs_async", "async", "ns_per_op", "ns", "lower", 100.0),
    "dispatch.readback_in_loop/readback_every_step/device:cpu/steps:1000": ("dispatch.readback_in_loop", "readback_every_step", "ns_per_op", "ns", "lower", 1200.0),
    "dispatch.readback_in_loop/accumulate_read_once/device:cpu/steps:1000": ("dispatch.readback_in_loop", "accumulate_read_once", "ns_per_op", "ns", "lower", 520.0),
    "limits.core_pingpong/spin": ("limits.core_pingpong", "spin", "ns_per_op", "ns", "lower", 1450.0),
}
STEP_BENCHMARK = "dispatch.sync_vs_async/sync/device:cpu/ops:10000"
STEP_RUN_INDEX, STEP = 9, 1.18
BASELINE_RUN_INDEX = 5


def build(path, machine, other_machine="a100node00000002", empty_change_points=False, seed=7):
    if os.path.exists(path):
        os.remove(path)
    rng = random.Random(seed)
    con = sqlite3.connect(path)
    con.executescript(SCHEMA)
    start = datetime.datetime(2026, 11, 8, 2, 0, tzinfo=datetime.timezone.utc)
    run_ids = {}
    plan = [(machine, i, 14) for i in range(1, 15)] + [(other_machine, i, 8) for i in range(1, 9)]
    for machine_key, i, _ in plan:
        when = start + datetime.timedelta(days=i - 1, minutes=0 if machine_key == machine else 37)
        fingerprint = json.dumps({"machine_key": machine_key, "synthetic": True})
        cur = con.execute("INSERT INTO runs(started_at, git_sha, machine_key, profile, fingerprint, run_file) "
                          "VALUES (?, ?, ?, ?, ?, ?)",
                          (when.strftime("%Y-%m-%dT%H:%M:%SZ"), f"{rng.getrandbits(160):040x}", machine_key,
                           "nightly", fingerprint, f"results/run-{when:%Y%m%dT%H%M%SZ}-nightly.json"))
        run_ids[(machine_key, i)] = cur.lastrowid
        scale = 1.0 if machine_key == machine else 0.7
        for bench, (exp, arm, metric, unit, better, typical) in BENCHMARKS.items():
            level = typical * scale
            if machine_key == machine and bench == STEP_BENCHMARK and i >= STEP_RUN_INDEX:
                level *= STEP
            for rep in range(5):
                value = level * math.exp(rng.gauss(0, 0.02))
                con.execute("INSERT INTO samples VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                            (cur.lastrowid, bench, exp, arm, rep, metric, unit, better, value))
    con.execute("INSERT INTO baselines VALUES (?, ?, ?)",
                (machine, run_ids[(machine, BASELINE_RUN_INDEX)], "2026-11-12T02:10:00Z"))
    if not empty_change_points:
        typical = BENCHMARKS[STEP_BENCHMARK][5]
        con.execute("INSERT INTO change_points VALUES (?, ?, ?, ?, ?)",
                    (STEP_BENCHMARK, machine, run_ids[(machine, STEP_RUN_INDEX)], typical, typical * STEP))
    con.commit()
    con.close()
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--machine", default="343b40c11781b539")
    ap.add_argument("--empty-change-points", action="store_true")
    args = ap.parse_args()
    build(args.out, args.machine, empty_change_points=args.empty_change_points)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
