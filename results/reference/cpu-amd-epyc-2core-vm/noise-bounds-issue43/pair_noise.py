#!/usr/bin/python3
"""The noise an `ab`'s pairs and crossover blocks carry, per experiment and by regime.

  pair_noise.py extract AB_OUT_DIR > processes.tsv    every passed time process of both sides
                                                     (duet: 0 one side at a time, 1 at once, 2 taking turns)
  pair_noise.py summary processes.tsv [...]          per experiment, and duet against one side at a time

Per benchmark (at least 4 repetitions on each side): the SD of the log differences of its pairs
(same repetition index), of its blocks (the mean of two consecutive pairs: a crossover block), and
of one side's log values between processes; the tables give medians over benchmarks.
"""
import collections
import json
import math
import statistics
import sys


def extract(out_dir):
    print("side\tbenchmark\trepetition\tduet\tlog_value")
    for side in ("baseline", "candidate"):
        with open(f"{out_dir}/{side}.json") as f:
            doc = json.load(f)
        for b in doc["benchmarks"]:
            if b.get("run_type") != "iteration" or b.get("verification") != "passed":
                continue
            if not b.get("metric_value", 0) > 0:
                continue
            duet = (2 if b.get("duet_alternate") else 1) if "duet_pair" in b else 0
            print(f"{side}\t{b['name']}\t{b['repetition_index']}\t{duet}\t{math.log(b['metric_value']):.6f}")


def per_benchmark(path):
    values = {"baseline": collections.defaultdict(dict), "candidate": collections.defaultdict(dict)}
    duet = {}
    with open(path) as f:
        next(f)
        for line in f:
            side, name, rep, is_duet, v = line.rstrip("\n").split("\t")
            values[side][name][int(rep)] = float(v)
            duet[name] = int(is_duet)
    out = {}
    for name, base in values["baseline"].items():
        cand = values["candidate"].get(name, {})
        reps = sorted(set(base) & set(cand))
        if len(reps) < 4:
            continue
        d = [cand[r] - base[r] for r in reps]
        blocks = [(d[i] + d[i + 1]) / 2 for i in range(0, len(d) - 1, 2)]
        out[name] = (
            duet[name],
            statistics.stdev(d),
            statistics.stdev(blocks),
            statistics.stdev([base[r] for r in reps]),
        )
    return out


def summary(paths):
    for path in paths:
        rows = per_benchmark(path)
        print(f"{path}: {len(rows)} benchmarks; medians of pair SD / block SD / one side's SD between processes")
        groups = collections.defaultdict(list)
        for name, r in rows.items():
            groups[name.split("/")[0]].append(r)
            groups[("one side at a time", "duet", "taking turns")[r[0]]].append(r)
            groups["all"].append(r)
        for key in sorted(groups, key=lambda k: (k in ("all", "duet", "one side at a time", "taking turns"), k)):
            g = groups[key]
            med = [100 * statistics.median(r[i] for r in g) for i in (1, 2, 3)]
            print(f"  {key:32s} {len(g):3d}  {med[0]:6.2f} % {med[1]:6.2f} % {med[2]:6.2f} %")


if __name__ == "__main__":
    if len(sys.argv) >= 3 and sys.argv[1] == "extract":
        extract(sys.argv[2])
    elif len(sys.argv) >= 3 and sys.argv[1] == "summary":
        summary(sys.argv[2:])
    else:
        sys.exit(__doc__)
