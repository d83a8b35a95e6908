#!/usr/bin/python3
"""How many rows a gate between two quick runs could gate within +-25 % at this noise, at best.

  history_bound.py extract RUN_FILE... > processes.tsv   every passed time process of each run
  history_bound.py bound processes.tsv [--benchmarks 128]

The best case for the gate's resolution (docs/gate.md): no run-to-run noise at all and known
variances (infinite degrees of freedom), so resolution = exp((z(0.95) + z(1 - 0.01 / (2 m))) * SE) - 1
with SE^2 = s^2 / n_base + s^2 / n_current, s a benchmark's SD of log process values between the
processes of one run (the median over the runs), n its processes per run.
"""
import collections
import math
import statistics
import sys
from statistics import NormalDist


def extract(paths):
    import json

    print("run\tbenchmark\tlog_value")
    for i, path in enumerate(paths, 1):
        with open(path) as f:
            doc = json.load(f)
        for b in doc["benchmarks"]:
            if b.get("run_type") == "iteration" and b.get("verification") == "passed" and b.get("metric_value", 0) > 0:
                if "sample_wall" in b:  # a time process (counting processes carry no sample_wall)
                    print(f"{i}\t{b['name']}\t{math.log(b['metric_value']):.6f}")


def bound(path, m):
    runs = collections.defaultdict(lambda: collections.defaultdict(list))
    with open(path) as f:
        next(f)
        for line in f:
            run, name, v = line.rstrip("\n").split("\t")
            runs[name][run].append(float(v))
    z = NormalDist().inv_cdf(0.95) + NormalDist().inv_cdf(1 - 0.01 / (2 * m))
    sds, within = [], 0
    for name, by_run in runs.items():
        sd = statistics.median(statistics.stdev(v) for v in by_run.values() if len(v) >= 3)
        n = statistics.median(len(v) for v in by_run.values())
        sds.append(sd)
        within += math.expm1(z * sd * math.sqrt(2 / n)) <= 0.25
    sds.sort()
    q = [100 * sds[int(p * len(sds))] for p in (0.1, 0.25, 0.5, 0.75, 0.9)]
    print(
        f"{len(sds)} benchmarks; SD between processes, quantiles 10/25/50/75/90 %: " + " / ".join(f"{x:.1f}" for x in q)
    )
    print(f"at best (no run-to-run noise, known variances, z = {z:.2f}): {within} of {len(sds)} within +-25 %")


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "extract":
        extract(sys.argv[2:])
    elif len(sys.argv) >= 3 and sys.argv[1] == "bound":
        m = int(sys.argv[sys.argv.index("--benchmarks") + 1]) if "--benchmarks" in sys.argv else 128
        bound(sys.argv[2], m)
    else:
        sys.exit(__doc__)
