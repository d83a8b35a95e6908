#!/usr/bin/env python3
# The layout effect measured directly (docs/gate.md, "Layout"): one benchmark's process from each
# bench binary in turn (a build's plain binary, its layout variants, other builds), round after
# round, pinned to one CPU, and each binary's median time per iteration against the first's. What a
# build's placement does to a benchmark, without the gate in between.
# Usage: ci/layout-effect.py BENCHMARK[,BENCHMARK...] BINARY,BINARY,... ROUNDS
# Environment: CPU (default 1), ITERS (iterations per process, default 200), WITH_SEED (set: a fresh
# PAIRBENCH_LAYOUT_SEED per process: buffer offsets and heap shift drawn as the runner draws them).
import json, os, shutil, subprocess, sys, statistics, tempfile

benches = sys.argv[1].split(",")
binaries = sys.argv[2].split(",")
rounds = int(sys.argv[3])
cpu = os.environ.get("CPU", "1")
seed_env = os.environ.get("WITH_SEED")  # set: each process gets a fresh PAIRBENCH_LAYOUT_SEED
iters = int(os.environ.get("ITERS", "200"))
res = {(b, x): [] for b in benches for x in binaries}
tmp = tempfile.mkdtemp()
k = 0
for r in range(rounds):
    for b in benches:
        for x in binaries:
            k += 1
            env = dict(os.environ)
            if seed_env:
                env["PAIRBENCH_LAYOUT_SEED"] = str(1000 + k)
            out = f"{tmp}/o.json"
            subprocess.run(
                [
                    "taskset",
                    "-c",
                    cpu,
                    x,
                    f"--pairbench_only={b}",
                    f"--pairbench_iterations={iters}",
                    "--pairbench_batches=5",
                    f"--benchmark_out={out}",
                    "--benchmark_out_format=json",
                    f"--pairbench_record={tmp}/r.json",
                ],
                env=env,
                check=True,
                capture_output=True,
            )
            rec = json.load(open(f"{tmp}/r.json"))
            res[(b, x)].append(rec["measured_s"] / rec["iterations_recorded"])
shutil.rmtree(tmp, ignore_errors=True)
for b in benches:
    base = statistics.median(res[(b, binaries[0])])
    print(b)
    for x in binaries:
        v = res[(b, x)]
        m = statistics.median(v)
        print(
            "  %-60s median %.3f us  ratio %.3f  (min %.3f, max %.3f)"
            % (x[-60:], m * 1e6, m / base, min(v) * 1e6, max(v) * 1e6)
        )
