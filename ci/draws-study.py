#!/usr/bin/python3
# Does drawing a benchmark's sources again inside one process reproduce the spread between
# processes? (docs/guide.md, "Why one sample per process"). Each benchmark of a run file runs in
# PROCESSES processes, each giving DRAWS samples (Google Benchmark repetitions: the benchmark's
# set-up runs again, its buffers are allocated again at the next drawn page offset; its process,
# relinked layout variant, environment padding, cores and the machine's moment stay). Processes
# draw their layout as the runner does and run in a shuffled order over every benchmark, so a
# drift over the study lands on processes, not on draws. Per benchmark, a one-way random-effects
# analysis of the log time per iteration: the SD between processes beyond what the draws explain
# (sd_process), the SD between draws inside one (sd_draw), their intraclass correlation (icc: the
# share of the variance that is the process's) and the first draw's offset from the rest.
#
# Where icc is near 0, a process's draws are as independent as processes, and one process could
# give several samples; where it is not, a second draw in a process repeats the first's process
# effect and counts as much less than a sample: pairbench keeps one sample per process.
#
# Usage: ci/draws-study.py RUN_FILE BENCH_DIR [--processes N] [--draws K] [--experiments A,B]
#                          [--fixed-layout] [--out FILE] [--seed S]
#   RUN_FILE   a `pairbench run` file: which benchmarks, and each one's calibrated iterations
#   BENCH_DIR  the build's bin/ (bench_<area> and its bench_<area>.layout<k> variants)
#   --fixed-layout  every process on the plain binary with one seed and padding: what is left
#                   of the process effect without layout
import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile

MAX_LAYOUT_PAD_BYTES = 4096


def fail(message):
    print(f"draws-study: {message}", file=sys.stderr)
    sys.exit(2)


def one_way(groups):
    """A one-way random-effects analysis of equal-sized groups of log values: (sd_process, sd_draw,
    icc, F). sd_process is the SD of the group effects (0 where the groups differ no more than their
    draws explain); icc = sd_process^2 / (sd_process^2 + sd_draw^2)."""
    k = min(len(g) for g in groups)
    groups = [g[:k] for g in groups]
    n = len(groups)
    if n < 2 or k < 2:
        raise ValueError("one_way: at least 2 groups of at least 2 values")
    means = [statistics.fmean(g) for g in groups]
    grand = statistics.fmean(means)
    msb = k * sum((m - grand) ** 2 for m in means) / (n - 1)
    msw = sum((x - m) ** 2 for g, m in zip(groups, means) for x in g) / (n * (k - 1))
    var_process = max(0.0, (msb - msw) / k)
    total = var_process + msw
    icc = var_process / total if total > 0 else 0.0
    f = msb / msw if msw > 0 else math.inf
    return math.sqrt(var_process), math.sqrt(msw), icc, f


def first_draw_offset(groups):
    """Mean over groups of the first value less the mean of the others (log: a relative offset)."""
    return statistics.fmean(g[0] - statistics.fmean(g[1:]) for g in groups)


def layout_variants(binary):
    out = [binary]
    while os.access(f"{binary}.layout{len(out)}", os.X_OK):
        out.append(f"{binary}.layout{len(out)}")
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("run_file")
    p.add_argument("bench_dir")
    p.add_argument("--processes", type=int, default=6)
    p.add_argument("--draws", type=int, default=4)
    p.add_argument("--experiments", default="")
    p.add_argument("--fixed-layout", action="store_true")
    p.add_argument("--out", default="")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--profile", default="quick")
    a = p.parse_args()
    a.bench_dir = os.path.abspath(a.bench_dir)
    if a.processes < 3:
        fail(f"--processes: at least 3, is {a.processes}")
    if a.draws < 2:
        fail(f"--draws: at least 2, is {a.draws}")
    try:
        with open(a.run_file) as f:
            run = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{a.run_file}: {e}")
    if not isinstance(run, dict) or not isinstance(run.get("benchmarks"), list):
        fail(f"{a.run_file}: benchmarks: expected an array")
    wanted = set(filter(None, a.experiments.split(",")))
    iterations, experiment = {}, {}
    for b in run["benchmarks"]:
        if (
            b.get("run_type") != "iteration"
            or b.get("verification") != "passed"
            or b.get("instrument", "time") != "time"
        ):
            continue
        if wanted and b.get("experiment") not in wanted:
            continue
        if not isinstance(b.get("iterations"), int) or b["iterations"] < 1:
            continue
        iterations.setdefault(b["name"], b["iterations"])
        experiment[b["name"]] = b["experiment"]
    if not iterations:
        fail(f"{a.run_file}: no passed time rows" + (f" of {a.experiments}" if wanted else ""))
    if wanted - set(experiment.values()):
        fail(f"--experiments: not in {a.run_file}: {','.join(sorted(wanted - set(experiment.values())))}")
    for area in sorted({e.split(".")[0] for e in experiment.values()}):
        if not os.access(os.path.join(a.bench_dir, "bench_" + area), os.X_OK):
            fail(f"{a.bench_dir}: no executable bench_{area} (expected a build's bin/)")
    rnd = random.Random(a.seed)
    jobs = [(name, i) for i in range(a.processes) for name in sorted(iterations)]
    rnd.shuffle(jobs)
    values = {name: [] for name in iterations}
    failed = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        for done, (name, _) in enumerate(jobs):
            binary = os.path.join(a.bench_dir, "bench_" + experiment[name].split(".")[0])
            variants = layout_variants(binary)
            env = dict(os.environ)
            if a.fixed_layout:
                exe, seed, pad = variants[0], 1, 0
            else:
                exe = variants[rnd.randrange(len(variants))]
                seed, pad = rnd.getrandbits(53), rnd.randrange(MAX_LAYOUT_PAD_BYTES + 1)
            env["PAIRBENCH_LAYOUT_SEED"] = str(seed)
            env["PAIRBENCH_LAYOUT_PAD"] = "x" * pad
            argv = [
                exe,
                f"--pairbench_profile={a.profile}",
                f"--pairbench_only={name}",
                f"--pairbench_iterations={iterations[name]}",
                f"--benchmark_repetitions={a.draws}",
                f"--benchmark_out={out}",
                "--benchmark_out_format=json",
                "--pairbench_check=0",
            ]
            r = subprocess.run(argv, env=env, cwd=tmp, capture_output=True, text=True)
            if r.returncode != 0:
                failed[name] = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
                continue
            with open(out) as f:
                rows = [b for b in json.load(f)["benchmarks"] if b.get("run_type") == "iteration"]
            times = [b["real_time"] for b in rows if b.get("real_time", 0) > 0]
            if len(times) == a.draws:
                values[name].append([math.log(t) for t in times])
            print(f"\r{done + 1}/{len(jobs)} processes", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    per_benchmark = {}
    for name, groups in values.items():
        if len(groups) < 3:
            continue
        sd_p, sd_d, icc, f = one_way(groups)
        per_benchmark[name] = {
            "experiment": experiment[name],
            "processes": len(groups),
            "draws": a.draws,
            "sd_process": sd_p,
            "sd_draw": sd_d,
            "icc": icc,
            "f": f,
            "first_draw_offset": first_draw_offset(groups),
            "log_times": groups,
        }
    by_experiment = {}
    for row in per_benchmark.values():
        by_experiment.setdefault(row["experiment"], []).append(row)
    table = []
    print(f"{'experiment':32s} {'benchmarks':>10s} {'sd_process':>10s} {'sd_draw':>8s} {'icc':>5s} {'first-rest':>10s}")
    for e, rows in sorted(by_experiment.items()):
        med = {k: statistics.median(r[k] for r in rows) for k in ("sd_process", "sd_draw", "icc", "first_draw_offset")}
        table.append({"experiment": e, "benchmarks": len(rows), **med})
        print(
            f"{e:32s} {len(rows):10d} {100 * med['sd_process']:9.2f}% {100 * med['sd_draw']:7.2f}% "
            f"{med['icc']:5.2f} {100 * med['first_draw_offset']:+9.2f}%"
        )
    for name, why in sorted(failed.items()):
        print(f"failed: {name}: {why}", file=sys.stderr)
    if a.out:
        doc = {
            "run_file": a.run_file,
            "processes": a.processes,
            "draws": a.draws,
            "fixed_layout": a.fixed_layout,
            "seed": a.seed,
            "experiments": table,
            "benchmarks": per_benchmark,
            "failed": failed,
        }
        tmp_out = a.out + ".tmp"
        with open(tmp_out, "w") as f:
            json.dump(doc, f, indent=1)
        os.replace(tmp_out, a.out)


if __name__ == "__main__":
    main()
