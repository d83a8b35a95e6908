#!/usr/bin/env python3
"""Builds a `pairbench history export` (pairbench-history-export/1) for the cross-machine page's
tests, with a known answer. SYNTHETIC values from a fixed seed:
- two machines of two kinds: a CPU box (12 runs) and a GPU node (8 runs);
- BENCHMARK_COUNT benchmarks on both, +-1 % noise; one (STEP_BENCHMARK) steps +25 % on the CPU box
  at run STEP_RUN_INDEX, recorded as a change point; one (SPREAD_BENCHMARK) is 10x slower on the
  CPU box than on the GPU node; every other one is within 1 % between machines;
- claims differing per kind: C6 'not testable here' on the CPU box and 'held' on the GPU node, C2
  'did not hold' vs 'held'; C1 'held' on both; C9 a CPU analogue on the CPU box only.

  /usr/bin/python3 tests/plots/make_fleet.py OUT.json
"""
import datetime
import json
import random
import sys

CPU, GPU = "cpu-amd-epyc-2core", "gpu-h100-node"
KINDS = {CPU: "AMD EPYC 7B13 64-Core Processor", GPU: "NVIDIA H100 80GB HBM3"}
RUNS = {CPU: 12, GPU: 8}
BENCHMARK_COUNT = 16
STEP_BENCHMARK = "dispatch.sync_vs_async/sync/device:cpu/ops:10000"
SPREAD_BENCHMARK = "copy.h2d/pageable/bytes:1048576"
STEP_RUN_INDEX, STEP = 7, 1.25
SPREAD = 10.0
CLAIMS = {  # id -> (claim, {machine: (verdict, detail, analogue)})
    "C1": (
        "Asynchronous dispatch hides frontend cost",
        {CPU: ("held", "every interval above 1.10", False), GPU: ("held", "every interval above 1.10", False)},
    ),
    "C2": (
        "Pinned memory speeds host-to-device copies",
        {CPU: ("did not hold", "interval 0.97-1.02 at 1 MiB", False), GPU: ("held", "1.8x at 64 MiB", False)},
    ),
    "C6": (
        "Reading a scalar back inside the loop stalls the GPU",
        {CPU: ("not testable here", "no CUDA device", False), GPU: ("held", "2.4x with readback once", False)},
    ),
    "C9": ("16-bit halves bytes moved", {CPU: ("held", "CPU analogue: float16 conversion halves bytes", True)}),
}


def benchmarks():
    names = [STEP_BENCHMARK, SPREAD_BENCHMARK]
    for i in range(BENCHMARK_COUNT - 2):
        names.append(f"ops.elementwise/plain/n:{1 << (10 + i)}")
    return names


def build():
    rng = random.Random(17)
    start = datetime.datetime(2026, 11, 1, 2, 17, tzinfo=datetime.timezone.utc)
    export = {
        "format": "pairbench-history-export/1",
        "generated_at": "2026-11-25T06:00:00Z",
        "machines": [],
        "series": [],
        "claims": [],
        "change_points": [],
    }
    runs = {}
    for m in (CPU, GPU):
        runs[m] = [
            {
                "run_id": f"{m}-{i:02d}",
                "started_at": (start + datetime.timedelta(days=i, minutes=7 * (m == GPU))).strftime(
                    "%Y-%m-%dT%H:%M:%SZ"
                ),
                "git_sha": f"{i:02d}" + "abcdef0123456789" * 2 + "0123456",
            }
            for i in range(RUNS[m])
        ]
        export["machines"].append(
            {"machine_key": m, "machine_kind": KINDS[m], "runs": RUNS[m], "last_run": runs[m][-1]}
        )
    for b in benchmarks():
        base = 100.0 + 10 * len(b)
        for m in (CPU, GPU):
            level = base * (SPREAD if (b == SPREAD_BENCHMARK and m == CPU) else 1.0)
            points = []
            for i, r in enumerate(runs[m]):
                step = STEP if (b == STEP_BENCHMARK and m == CPU and i >= STEP_RUN_INDEX) else 1.0
                points.append({**r, "median": level * step * (1 + rng.uniform(-0.01, 0.01)), "samples": 9})
            export["series"].append(
                {
                    "machine_key": m,
                    "benchmark": b,
                    "metric": "real_time",
                    "unit": "ns",
                    "better": "lower",
                    "points": points,
                }
            )
            if b == STEP_BENCHMARK and m == CPU:
                export["change_points"].append(
                    {
                        "machine_key": m,
                        "benchmark": b,
                        "run_id": runs[m][STEP_RUN_INDEX]["run_id"],
                        "before": base,
                        "after": base * STEP,
                    }
                )
    for m in (CPU, GPU):
        verdicts = [
            {
                "id": cid,
                "claim": text,
                "verdict": per[m][0],
                "detail": per[m][1],
                "analogue": per[m][2],
                "experiments": ["dispatch.sync_vs_async"],
            }
            for cid, (text, per) in CLAIMS.items()
            if m in per
        ]
        export["claims"].append(
            {
                "machine_key": m,
                "machine_kind": KINDS[m],
                "run_id": runs[m][-1]["run_id"],
                "git_sha": runs[m][-1]["git_sha"],
                "claims": verdicts,
            }
        )
    return export


if __name__ == "__main__":
    with open(sys.argv[1], "w", encoding="utf-8") as f:
        json.dump(build(), f, indent=1)
