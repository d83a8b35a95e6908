#!/usr/bin/env python3
"""Builds a small history export for the report's tests: what `pairbench history export` writes
(format pairbench-history-export/1, with each series' experiment, each point's process values and
each machine's baseline run), as `pairbench report --db DB` passes it to report.py. SYNTHETIC
values from a fixed seed: 14 nightly runs on this fixture's machine plus 8 on a second machine, a
+18 % step at run 9 found as a change point, and run 5 as the machine's baseline; the regressions
`pairbench regressions` tracks: that step open (seen 6 nights), one acknowledged with a reason, one fixed.

  /usr/bin/python3 tests/plots/make_history_export.py OUT.json [--machine KEY] [--empty-change-points]
"""
import argparse
import datetime
import json
import math
import random
import statistics

# benchmark -> (experiment, arm, metric, unit, better, typical value)
BENCHMARKS = {
    "dispatch.sync_vs_async/sync/device:cpu/ops:1000": (
        "dispatch.sync_vs_async",
        "sync",
        "ns_per_op",
        "ns",
        "lower",
        880.0,
    ),
    "dispatch.sync_vs_async/sync/device:cpu/ops:10000": (
        "dispatch.sync_vs_async",
        "sync",
        "ns_per_op",
        "ns",
        "lower",
        1060.0,
    ),
    "dispatch.sync_vs_async/async/device:cpu/ops:1000": (
        "dispatch.sync_vs_async",
        "async",
        "ns_per_op",
        "ns",
        "lower",
        105.0,
    ),
    "dispatch.sync_vs_async/async/device:cpu/ops:10000": (
        "dispatch.sync_vs_async",
        "async",
        "ns_per_op",
        "ns",
        "lower",
        100.0,
    ),
    "dispatch.readback_in_loop/readback_every_step/device:cpu/steps:1000": (
        "dispatch.readback_in_loop",
        "readback_every_step",
        "ns_per_op",
        "ns",
        "lower",
        1200.0,
    ),
    "dispatch.readback_in_loop/accumulate_read_once/device:cpu/steps:1000": (
        "dispatch.readback_in_loop",
        "accumulate_read_once",
        "ns_per_op",
        "ns",
        "lower",
        520.0,
    ),
    "limits.core_pingpong/spin": ("limits.core_pingpong", "spin", "ns_per_op", "ns", "lower", 1450.0),
}
STEP_BENCHMARK = "dispatch.sync_vs_async/sync/device:cpu/ops:10000"
STEP_RUN_INDEX, STEP = 9, 1.18
BASELINE_RUN_INDEX = 5
PROCESSES = 5


def build(machine, other_machine="a100node00000002", empty_change_points=False, seed=7):
    """The export as a dict."""
    rng = random.Random(seed)
    start = datetime.datetime(2026, 11, 8, 2, 0, tzinfo=datetime.timezone.utc)
    export = {
        "format": "pairbench-history-export/1",
        "generated_at": "2026-11-22T06:00:00Z",
        "db": "results/history.sqlite",
        "machines": [],
        "series": [],
        "claims": [],
        "change_points": [],
    }
    series = {}
    for machine_key, count in ((machine, 14), (other_machine, 8)):
        runs = []
        for i in range(1, count + 1):
            when = start + datetime.timedelta(days=i - 1, minutes=0 if machine_key == machine else 37)
            run = {
                "run_id": f"{machine_key[:6]}-run{i:02d}",
                "started_at": when.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "git_sha": f"{rng.getrandbits(160):040x}",
            }
            runs.append(run)
            scale = 1.0 if machine_key == machine else 0.7
            for bench, (exp, arm, metric, unit, better, typical) in BENCHMARKS.items():
                level = typical * scale
                if machine_key == machine and bench == STEP_BENCHMARK and i >= STEP_RUN_INDEX:
                    level *= STEP
                values = [level * math.exp(rng.gauss(0, 0.02)) for _ in range(PROCESSES)]
                s = series.setdefault(
                    (machine_key, bench),
                    {
                        "machine_key": machine_key,
                        "benchmark": bench,
                        "experiment": exp,
                        "metric": metric,
                        "unit": unit,
                        "better": better,
                        "points": [],
                    },
                )
                s["points"].append(
                    {**run, "median": statistics.median(values), "samples": len(values), "values": values}
                )
        export["machines"].append(
            {
                "machine_key": machine_key,
                "machine_kind": "synthetic",
                "runs": count,
                "last_run": runs[-1],
                "baseline_run_id": runs[BASELINE_RUN_INDEX - 1]["run_id"] if machine_key == machine else None,
            }
        )
    export["machines"].sort(key=lambda m: m["machine_key"])
    export["series"] = [series[k] for k in sorted(series)]
    if not empty_change_points:
        typical = BENCHMARKS[STEP_BENCHMARK][5]
        export["change_points"].append(
            {
                "machine_key": machine,
                "benchmark": STEP_BENCHMARK,
                "run_id": f"{machine[:6]}-run{STEP_RUN_INDEX:02d}",
                "before": typical,
                "after": typical * STEP,
            }
        )
    export["regressions"] = regressions(machine, other_machine)
    return export


def regressions(machine, other_machine):
    """The tracked regressions the export holds (`pairbench regressions`, regression_json's fields)."""

    def regression(id_, machine_key, bench, state, change, first, last, seen, **extra):
        exp, arm, metric, unit, better, typical = BENCHMARKS[bench]
        r = {
            "id": id_,
            "machine_key": machine_key,
            "benchmark": bench,
            "instrument": "time",
            "metric": metric,
            "unit": unit,
            "better": better,
            "state": state,
            "last_good_sha": f"{id_:02d}" + "a" * 38,
            "last_good_run_id": f"good{id_}",
            "first_bad_sha": f"{id_:02d}" + "b" * 38,
            "first_bad_run_id": f"bad{id_}",
            "culprit_sha": None,
            "change": change,
            "change_low": change - 0.03,
            "change_high": change + 0.03,
            "threshold": 0.05,
            "level_before": typical,
            "level_after": typical * (1 + change),
            "first_seen_at": first,
            "first_seen_run_id": f"bad{id_}",
            "last_seen_at": last,
            "last_seen_run_id": f"last{id_}",
            "times_seen": seen,
            "acknowledged_at": None,
            "ack_reason": None,
            "fixed_at": None,
            "fixed_run_id": None,
            "fixed_reason": None,
        }
        r.update(extra)
        return r

    return [
        regression(1, machine, STEP_BENCHMARK, "open", STEP - 1, "2026-11-16T02:00:00Z", "2026-11-21T02:00:00Z", 6),
        regression(
            2,
            other_machine,
            "limits.core_pingpong/spin",
            "acknowledged",
            0.09,
            "2026-11-10T02:37:00Z",
            "2026-11-15T02:37:00Z",
            4,
            acknowledged_at="2026-11-11T09:00:00Z",
            ack_reason="<b>expected</b>: the new kernel trades latency for safety",
            culprit_sha="c0ffee" + "0" * 34,
        ),
        regression(
            3,
            machine,
            "dispatch.readback_in_loop/readback_every_step/device:cpu/steps:1000",
            "fixed",
            0.12,
            "2026-11-09T02:00:00Z",
            "2026-11-10T02:00:00Z",
            2,
            fixed_at="2026-11-12T02:00:00Z",
            fixed_run_id="343b40-run05",
            fixed_reason="level returned: change point at run 343b40-run05 from 1344 to 1201 ns",
        ),
    ]


def write(path, machine, **kwargs):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(build(machine, **kwargs), f, indent=1)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--machine", default="343b40c11781b539")
    ap.add_argument("--empty-change-points", action="store_true")
    args = ap.parse_args()
    write(args.out, args.machine, empty_change_points=args.empty_change_points)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
