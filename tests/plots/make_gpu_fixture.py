#!/usr/bin/env python3
"""Builds tests/fixtures/run_gpu.json, a GPU-shaped run file for the report's tests, from a real
CPU run file (tests/plots/data/run_cpu_dispatch.json).

Everything this script adds is SYNTHETIC test data, never a measurement: the device:cuda points
of the dispatch experiments, and the copy.*, precision.*, alloc.* and extra limits.* experiments
(those families did not exist yet when it was written). The values are plausible for an H100
host, drawn from simple models with a fixed seed; each added arm and benchmark entry carries
"synthetic": true and the file's top-level "fixture_note" says so.

  /usr/bin/python3 tests/plots/make_gpu_fixture.py [--from CPU_RUN] [--out FILE]
"""
import argparse
import copy
import json
import math
import os
import random
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))
KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30

NOTE = (
    "SYNTHETIC TEST DATA, not a measurement. Made by tests/plots/make_gpu_fixture.py from a real "
    "CPU-only run (the device:cpu dispatch points and limits.core_pingpong are real, from a 2-core VM). "
    "Every device:cuda point, every copy.*, precision.* and alloc.* experiment and the limits other "
    "than limits.core_pingpong are made up from simple models (names follow the experiments declared "
    "when it was written; limits.gpu_fma_peak is invented) so the report's GPU-shaped figures can be "
    'tested; their arms and benchmark entries say "synthetic": true.'
)


# ---- statistics as the harness reports them (Hodges-Lehmann on logs, Mann-Whitney interval) ----


def mw_counts(n, m):
    """Number of arrangements giving each Mann-Whitney U, for sample sizes n and m."""
    table = {}

    def f(a, b):
        if (a, b) in table:
            return table[(a, b)]
        if a == 0 or b == 0:
            res = [1]
        else:
            left, right = f(a - 1, b), f(a, b - 1)
            res = [0] * (a * b + 1)
            for u, c in enumerate(left):
                res[u + b] += c
            for u, c in enumerate(right):
                res[u] += c
        table[(a, b)] = res
        return res

    return f(n, m)


def hl_ratio(base, treat, better, target=0.95):
    sign = 1 if better == "lower" else -1
    d = sorted(sign * (math.log(b) - math.log(t)) for b in base for t in treat)
    n, m = len(base), len(treat)
    counts = mw_counts(n, m)
    total = sum(counts)
    k, cdf = 1, 0
    for u, c in enumerate(counts):
        cdf += c
        if cdf / total <= (1 - target) / 2:
            k = u + 2
        else:
            break
    tail = sum(counts[: k - 1]) / total if k > 1 else counts[0] / total
    conf = 1 - 2 * tail
    est = statistics.median(d)
    med_ratio = (statistics.median(base) / statistics.median(treat)) ** sign
    return {
        "ci_high": math.exp(d[n * m - k]),
        "ci_low": math.exp(d[k - 1]),
        "confidence": round(conf, 4),
        "estimator": "hodges_lehmann_log",
        "ratio": math.exp(est),
        "ratio_of_medians": med_ratio,
    }


# ---- building synthetic arms ---------------------------------------------------------------


class Maker:
    def __init__(self, doc, reps=5, seed=20261122):
        self.doc = doc
        self.reps = reps
        self.rng = random.Random(seed)

    def samples(self, value, cv=0.02):
        return [float(f"{value * math.exp(self.rng.gauss(0.0, cv)):.6g}") for _ in range(self.reps)]

    def bench_entries(self, exp, arm, name, values, metric, unit, counters=None):
        for i, v in enumerate(values):
            t = round(v / 1e3, 4) if unit == "ns" else 1.0
            entry = {
                "name": name,
                "run_name": name,
                "run_type": "iteration",
                "repetition_index": i,
                "repetitions": self.reps,
                "real_time": t,
                "cpu_time": t,
                "time_unit": "us",
                "experiment": exp,
                "arm": arm,
                "metric_value": v,
                metric: v,
                "verification": "passed",
                "synthetic": True,
            }
            for key, c in (counters or {}).items():
                entry[key] = float(f"{c(i) if callable(c) else c:.6g}")
            self.doc["benchmarks"].append(entry)

    def arm(self, exp, arm, role, params, value, metric, unit, cv=0.02, counters=None):
        name = "/".join([exp, arm] + [f"{k}:{v}" for k, v in params.items()])
        vals = self.samples(value, cv)
        self.bench_entries(exp, arm, name, vals, metric, unit, counters)
        med = statistics.median(vals)
        mean = statistics.fmean(vals)
        return {
            "arm": arm,
            "benchmark": name,
            "cv": statistics.pstdev(vals) / mean,
            "max": max(vals),
            "median": med,
            "min": min(vals),
            "role": role,
            "samples": len(vals),
            "unit": unit,
            "verification": "passed",
            "synthetic": True,
        }, vals


def not_supported(exp, arm, role, params, unit, reason):
    name = "/".join([exp, arm] + [f"{k}:{v}" for k, v in params.items()])
    return {
        "arm": arm,
        "benchmark": name,
        "reason": reason,
        "role": role,
        "samples": 0,
        "unit": unit,
        "verification": "not_supported",
        "synthetic": True,
    }


def point(mk, exp, params, arms, metric, unit, better, cv=0.02, counters=None, limits=None, skipped=None):
    """arms: [(name, role, value)], baseline first. limits: arm -> (benchmark, median)."""
    out = {"arms": [], "params": dict(params), "ratios": [], "targets": []}
    samples = {}
    for name, role, value in arms:
        a, vals = mk.arm(exp, name, role, params, value, metric, unit, cv, (counters or {}).get(name))
        if limits and name in limits:
            bench, med = limits[name]
            a["limit"] = {"benchmark": bench, "median": med}
            a["percent_of_limit"] = 100.0 * (med / a["median"] if better == "lower" else a["median"] / med)
        out["arms"].append(a)
        samples[name] = vals
    for name, role, reason in skipped or []:
        out["arms"].append(not_supported(exp, name, role, params, unit, reason))
        mk.doc["pairbench"]["not_run"].append(
            {
                "arm": name,
                "experiment": exp,
                "name": out["arms"][-1]["benchmark"],
                "reason": reason,
                "repetition_index": 0,
                "verification": "not_supported",
            }
        )
    base = next(n for n, r, _ in arms if r == "baseline") if any(r == "baseline" for _, r, _ in arms) else None
    if base:
        for name, role, _ in arms:
            if role == "treatment":
                r = hl_ratio(samples[base], samples[name], better)
                r["treatment"] = name
                out["ratios"].append(r)
    return out


def experiment(name, claim, question, kind, metric, unit, better, timing, points):
    return {
        "better": better,
        "claim": claim,
        "kind": kind,
        "metric": metric,
        "name": name,
        "points": points,
        "question": question,
        "timing": timing,
        "unit": unit,
        "synthetic": True,
    }


# ---- models ----------------------------------------------------------------------------------

CUDA_DISPATCH_NS = {  # (experiment, arm, key axis value) -> ns per op on a plausible H100 host
    ("dispatch.sync_vs_async", "sync", "1000"): 6800,
    ("dispatch.sync_vs_async", "sync", "10000"): 6500,
    ("dispatch.sync_vs_async", "async", "1000"): 2300,
    ("dispatch.sync_vs_async", "async", "10000"): 2200,
    ("dispatch.sync_vs_async", "graph", "1000"): 1100,
    ("dispatch.sync_vs_async", "graph", "10000"): 850,
    ("dispatch.enqueue_vs_complete", "complete", "add_one"): 2600,
    ("dispatch.enqueue_vs_complete", "enqueue", "add_one"): 2250,
    ("dispatch.enqueue_vs_complete", "complete", "busy_10us"): 10300,
    ("dispatch.enqueue_vs_complete", "enqueue", "busy_10us"): 2300,
    ("dispatch.barriers", "wait_all", "0"): 5200,
    ("dispatch.barriers", "wait_for", "0"): 5400,
    ("dispatch.barriers", "wait_all", "1000"): 1010000,
    ("dispatch.barriers", "wait_for", "1000"): 7900,
    ("dispatch.readback_in_loop", "readback_every_step", "1000"): 9100,
    ("dispatch.readback_in_loop", "accumulate_read_once", "1000"): 2400,
}
KEY_AXIS = {
    "dispatch.sync_vs_async": "ops",
    "dispatch.enqueue_vs_complete": "op",
    "dispatch.barriers": "unrelated_us",
    "dispatch.readback_in_loop": "steps",
}


def fill_cuda_points(mk, exp):
    for i, p in enumerate(exp["points"]):
        if p["params"].get("device") != "cuda":
            continue
        key = p["params"][KEY_AXIS[exp["name"]]]
        arms = [(a["arm"], a["role"], CUDA_DISPATCH_NS[(exp["name"], a["arm"], key)]) for a in p["arms"]]
        params = {}
        for part in p["arms"][0]["benchmark"].split("/")[2:]:
            k, v = part.split(":", 1)
            params[k] = v
        exp["points"][i] = point(mk, exp["name"], params, arms, "ns_per_op", "ns", "lower", cv=0.015)


def bandwidth(size, latency_s, peak):
    return size / (latency_s + size / peak)


def build(cpu_run):
    doc = copy.deepcopy(cpu_run)
    doc = {"fixture_note": NOTE, **doc}
    pb = doc["pairbench"]
    mk = Maker(doc)
    env = pb["environment"]
    env.update(
        {
            "gpu_name": "NVIDIA H100 80GB HBM3",
            "gpu_count": 1,
            "gpu_compute_capability": "9.0",
            "cuda_driver_version": 13000,
            "gpu_unavailable_reason": "",
            "hostname": "fixture-gpu-host",
            "machine_key": "f1x7e0e0a0d0b0c1",
            "memory_bytes": 2.0 * 1024**4 / 4,
        }
    )
    pb["command"] = "synthetic: tests/plots/make_gpu_fixture.py (see fixture_note)"
    pb["not_run"] = [n for n in pb.get("not_run", []) if "device:cuda" not in n["name"]]
    for exp in pb["experiments"]:
        if exp["name"] in KEY_AXIS:
            fill_cuda_points(mk, exp)

    B = "bytes_per_second"
    lim_pts = []
    membw = {
        ("memcpy", "1"): 11.9e9,
        ("memcpy", "2"): 18.1e9,
        ("copy", "1"): 11.5e9,
        ("copy", "2"): 17.8e9,
        ("triad", "1"): 12.8e9,
        ("triad", "2"): 19.5e9,
    }
    for threads in ("1", "2"):
        lim_pts.append(
            point(
                mk,
                "limits.memory_bandwidth",
                {"threads": threads, "array_bytes": str(256 * MIB)},
                [(arm, "limit", membw[(arm, threads)]) for arm in ("memcpy", "copy", "triad")],
                B,
                "B/s",
                "higher",
            )
        )
    exps = [
        experiment(
            "limits.memory_bandwidth",
            "",
            "How fast can this machine's cores copy memory (copy and triad)?",
            "limit",
            B,
            "B/s",
            "higher",
            "wall_clock",
            lim_pts,
        )
    ]
    hd = {"d2d": 1.45e12, "h2d_pinned": 53.1e9, "d2h_pinned": 52.4e9}
    exps.append(
        experiment(
            "limits.gpu_copy",
            "",
            "How fast can this GPU copy within its memory, and to and from " "pinned host memory?",
            "limit",
            B,
            "B/s",
            "higher",
            "cuda_events",
            [point(mk, "limits.gpu_copy", {}, [(a, "limit", v) for a, v in hd.items()], B, "B/s", "higher")],
        )
    )
    peaks = {"fp32": 67e12, "tf32": 495e12, "fp16": 990e12, "bf16": 990e12}
    exps.append(
        experiment(
            "limits.gpu_fma_peak",
            "",
            "What is this GPU's dense matrix-math peak per precision "
            "(SMs x tensor-core rate x clock, from the datasheet formula)?",
            "limit",
            "flop_per_second",
            "FLOP/s",
            "higher",
            "cuda_events",
            [
                point(
                    mk,
                    "limits.gpu_fma_peak",
                    {},
                    [(a, "limit", v) for a, v in peaks.items()],
                    "flop_per_second",
                    "FLOP/s",
                    "higher",
                    cv=0.0,
                )
            ],
        )
    )
    exps.append(
        experiment(
            "limits.fma_peak",
            "",
            "How many FP32 FLOP per second can this machine's cores do with " "FMAs from registers?",
            "limit",
            "flop_per_second",
            "FLOP/s",
            "higher",
            "wall_clock",
            [
                point(
                    mk,
                    "limits.fma_peak",
                    {"threads": "2"},
                    [("fma_loop", "limit", 332.8e9)],
                    "flop_per_second",
                    "FLOP/s",
                    "higher",
                    cv=0.01,
                )
            ],
        )
    )

    sizes = [4 * KIB, 64 * KIB, MIB, 16 * MIB, 256 * MIB, GIB]
    for direction, pageable_peak, lim in (("h2d", 21e9, "h2d_pinned"), ("d2h", 17e9, "d2h_pinned")):
        pts = []
        for s in sizes:
            arms = [
                ("pageable", "baseline", bandwidth(s, 9e-6, pageable_peak)),
                ("pinned", "treatment", bandwidth(s, 2.2e-6, hd[lim] * 0.985)),
                ("registered", "treatment", bandwidth(s, 2.4e-6, hd[lim] * 0.975)),
            ]
            pts.append(
                point(
                    mk,
                    f"copy.{direction}",
                    {"bytes": str(s)},
                    arms,
                    B,
                    "B/s",
                    "higher",
                    limits={a: (f"limits.gpu_copy/{lim}", hd[lim]) for a, _, _ in arms},
                )
            )
        exps.append(
            experiment(
                f"copy.{direction}",
                "C6",
                f"Is pinned host memory faster to copy {'to' if direction == 'h2d' else 'from'} "
                "the GPU than pageable memory?",
                "comparison",
                B,
                "B/s",
                "higher",
                "cuda_events",
                pts,
            )
        )
    pts = []
    for s in (64 * KIB, MIB, 16 * MIB, 256 * MIB):
        arms = [
            ("faulting", "baseline", bandwidth(s, 1e-6, 3.1e9)),
            ("prefaulted", "treatment", bandwidth(s, 0.3e-6, 10.9e9)),
            ("mlocked", "treatment", bandwidth(s, 0.3e-6, 10.8e9)),
        ]
        counters = {
            "faulting": {"page_faults": s / 4096},
            "prefaulted": {"page_faults": 0.0},
            "mlocked": {"page_faults": 0.0},
        }
        pts.append(
            point(
                mk,
                "copy.page_state",
                {"bytes": str(s)},
                arms,
                B,
                "B/s",
                "higher",
                counters=counters,
                limits={a: ("limits.memory_bandwidth/memcpy", membw[("memcpy", "1")]) for a, _, _ in arms},
            )
        )
    exps.append(
        experiment(
            "copy.page_state",
            "C6",
            "Is copying into pre-faulted, locked pages faster than into " "fresh pageable pages?",
            "comparison",
            B,
            "B/s",
            "higher",
            "wall_clock",
            pts,
        )
    )

    F = "flop_per_second"
    eff_tc = {1024: 0.35, 2048: 0.65, 4096: 0.85, 8192: 0.92}
    eff_32 = {1024: 0.70, 2048: 0.88, 4096: 0.95, 8192: 0.97}
    achieved = {"fp32": 51e12, "tf32": 380e12, "fp16": 720e12, "bf16": 715e12}
    err = {"fp32": 2.1e-7, "tf32": 4.6e-4, "fp16": 3.1e-4, "bf16": 2.5e-3}
    pts = []
    for n in (1024, 2048, 4096, 8192):
        arms = [
            (p, "baseline" if p == "fp32" else "treatment", achieved[p] * (eff_32[n] if p == "fp32" else eff_tc[n]))
            for p in ("fp32", "tf32", "fp16", "bf16")
        ]
        counters = {p: {"rel_error": (lambda i, p=p: err[p] * math.sqrt(n / 1024) * (1 + 0.03 * i))} for p in achieved}
        pts.append(
            point(
                mk,
                "precision.gpu_gemm",
                {"shape": f"{n}x{n}x{n}"},
                arms,
                F,
                "FLOP/s",
                "higher",
                counters=counters,
                limits={p: (f"limits.gpu_fma_peak/{p}", peaks[p]) for p in peaks},
            )
        )
    exps.append(
        experiment(
            "precision.gpu_gemm",
            "C10",
            "How much faster is GEMM in tf32, fp16 and bf16 than in fp32, " "and how much accuracy does it cost?",
            "comparison",
            F,
            "FLOP/s",
            "higher",
            "cuda_events",
            pts,
        )
    )
    cpu = {
        "naive": {256: 1.1e9, 512: 0.9e9, 1024: 0.45e9},
        "blocked": {256: 18e9, 512: 19e9, 1024: 19.5e9},
        "openblas": {256: 85e9, 512: 102e9, 1024: 108e9},
    }
    pts = []
    for n in (256, 512, 1024):
        arms = [
            ("naive", "baseline", cpu["naive"][n]),
            ("blocked", "treatment", cpu["blocked"][n]),
            ("openblas", "treatment", cpu["openblas"][n]),
        ]
        counters = {a: {"rel_error": (lambda i, n=n: 1.2e-7 * math.sqrt(n / 256) * (1 + 0.02 * i))} for a, _, _ in arms}
        pts.append(
            point(
                mk,
                "precision.cpu_gemm_loops",
                {"n": str(n)},
                arms,
                F,
                "FLOP/s",
                "higher",
                counters=counters,
                limits={a: ("limits.fma_peak/fma_loop", 332.8e9) for a, _, _ in arms},
            )
        )
    exps.append(
        experiment(
            "precision.cpu_gemm_loops",
            "C19",
            "How much faster than a naive triple loop are a " "cache-blocked loop and OpenBLAS sgemm?",
            "comparison",
            F,
            "FLOP/s",
            "higher",
            "wall_clock",
            pts,
        )
    )

    allocators = ("glibc", "jemalloc", "tcmalloc", "mimalloc")
    churn = {"glibc": (17e6, 9.4), "jemalloc": (28e6, 12.6), "tcmalloc": (73e6, 15.1), "mimalloc": (50e6, 11.3)}
    pts = []
    for threads in ("1", "2"):
        t = 1.0 if threads == "1" else 1.7
        arms = [(a, "baseline" if a == "glibc" else "treatment", churn[a][0] * t) for a in allocators]
        counters = {a: {"peak_rss_bytes": churn[a][1] * MIB * (1.0 if threads == "1" else 1.3)} for a in allocators}
        pts.append(
            point(
                mk,
                "alloc.small_objects",
                {"threads": threads},
                arms,
                "ops_per_second",
                "op/s",
                "higher",
                counters=counters,
            )
        )
    exps.append(
        experiment(
            "alloc.small_objects",
            "C16",
            "Do jemalloc, tcmalloc or mimalloc churn small objects "
            "faster than glibc, on one thread and on every core?",
            "comparison",
            "ops_per_second",
            "op/s",
            "higher",
            "wall_clock",
            pts,
        )
    )
    tensors = {
        ("glibc", MIB): (0.21e6, 3.1),
        ("glibc", 64 * MIB): (13e6, 66),
        ("jemalloc", MIB): (0.05e6, 6.2),
        ("jemalloc", 64 * MIB): (0.9e6, 130),
        ("tcmalloc", MIB): (0.02e6, 7.0),
        ("tcmalloc", 64 * MIB): (0.26e6, 140),
    }
    pts = []
    for s in (MIB, 64 * MIB):
        arms = [(a, "baseline" if a == "glibc" else "treatment", tensors[(a, s)][0]) for a in allocators[:3]]
        counters = {a: {"peak_rss_bytes": tensors[(a, s)][1] * MIB} for a in allocators[:3]}
        pts.append(
            point(
                mk,
                "alloc.tensor_buffers",
                {"bytes": str(s)},
                arms,
                "ns_per_op",
                "ns",
                "lower",
                cv=0.04,
                counters=counters,
                skipped=[("mimalloc", "treatment", "libmimalloc.so.2 not installed: install libmimalloc2.0")],
            )
        )
    exps.append(
        experiment(
            "alloc.tensor_buffers",
            "C16",
            "Allocating, touching and freeing a tensor-sized buffer "
            "every step: which allocator is fastest, and how much RSS does it keep?",
            "comparison",
            "ns_per_op",
            "ns",
            "lower",
            "wall_clock",
            pts,
        )
    )
    pb["experiments"] += exps
    return doc


def dumps(doc):
    """Indented JSON, except one line per benchmarks[] entry (they are many and alike)."""
    parts = []
    for key, value in doc.items():
        if key == "benchmarks":
            rows = ",\n  ".join(json.dumps(b, ensure_ascii=False, separators=(",", ":")) for b in value)
            parts.append(f' "benchmarks": [\n  {rows}\n ]')
        else:
            text = json.dumps(value, indent=1, ensure_ascii=False).replace("\n", "\n ")
            parts.append(f" {json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(parts) + "\n}\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--from", dest="src", default=os.path.join(HERE, "data", "run_cpu_dispatch.json"))
    ap.add_argument("--out", default=os.path.join(HERE, "..", "fixtures", "run_gpu.json"))
    args = ap.parse_args()
    with open(args.src, encoding="utf-8") as f:
        cpu_run = json.load(f)
    doc = build(cpu_run)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(dumps(doc))
    print(f"wrote {os.path.normpath(args.out)}")


if __name__ == "__main__":
    main()
