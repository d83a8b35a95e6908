#!/usr/bin/env python3
"""An independent measurement beside pairbench's, on the same GPU in the same hour: PyTorch times
the same work (same sizes, same dtypes, same counting of bytes and operations) with CUDA events,
and the table puts its median beside the median of pairbench's processes from a run file.

    python3 ci/torch_side_by_side.py RUN_FILE OUT_MARKDOWN [--json OUT_JSON]

Runs where PyTorch with CUDA is installed (GPU hosts); pairbench itself never imports it. Each
PyTorch figure is the median of 15 timed repeats after 3 warm-ups, each repeat timed with events
around several calls (fresh random data, never zeros). The pairbench figure is the median of the
run's processes for that benchmark (rows whose verification passed).
"""
import argparse
import json
import os
import statistics
import sys
import time


def pairbench_medians(run_path):
    with open(run_path, encoding="utf-8") as f:
        run = json.load(f)
    values = {}
    for row in run.get("benchmarks", []):
        if row.get("verification") != "passed" or "metric_value" not in row:
            continue
        values.setdefault(row["name"], []).append(float(row["metric_value"]))
    return {name: statistics.median(v) for name, v in values.items()}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_file")
    parser.add_argument("out_markdown")
    parser.add_argument("--json")
    args = parser.parse_args()
    try:
        import torch
    except ImportError as e:
        print(f"torch_side_by_side.py: skipped: PyTorch not importable ({e})")
        return 0
    if not torch.cuda.is_available():
        print("torch_side_by_side.py: skipped: no CUDA device")
        return 0
    ours = pairbench_medians(args.run_file)
    dev = torch.device("cuda")
    torch.manual_seed(1)

    def timed(fn, calls, host_clock=False, repeats=15, warmups=3):
        """Median seconds per call over `repeats` batches after `warmups` calls of fn. A batch is
        `calls` calls of fn between two CUDA events; with host_clock, one call of fn (which makes
        `calls` calls itself) on the host's clock, for loops whose cost is the host's (launch, wait)."""
        for _ in range(warmups):
            fn()
        torch.cuda.synchronize()
        per_call = []
        for _ in range(repeats):
            if host_clock:
                t0 = time.perf_counter()
                fn()
                per_call.append((time.perf_counter() - t0) / calls)
                continue
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(calls):
                fn()
            stop.record()
            stop.synchronize()
            per_call.append(start.elapsed_time(stop) / 1e3 / calls)
        return statistics.median(per_call)

    rows = []  # (what, pairbench benchmark, unit, scale, torch value in base units)

    mib64 = 64 << 20
    pinned = torch.randint(0, 255, (mib64,), dtype=torch.uint8).pin_memory()
    on_dev = torch.empty(mib64, dtype=torch.uint8, device=dev)
    s = timed(lambda: on_dev.copy_(pinned, non_blocking=True), 4)
    rows.append(("H2D copy, pinned, 64 MiB", "copy.h2d/pinned/bytes:67108864", "GB/s", 1e9, mib64 / s))
    on_dev.random_(0, 255)
    s = timed(lambda: pinned.copy_(on_dev, non_blocking=True), 4)
    rows.append(("D2H copy, pinned, 64 MiB", "copy.d2h/pinned/bytes:67108864", "GB/s", 1e9, mib64 / s))
    del pinned, on_dev

    mib256 = 256 << 20
    a = torch.randint(0, 255, (mib256,), dtype=torch.uint8, device=dev)
    b = torch.empty_like(a)
    s = timed(lambda: b.copy_(a), 10)
    rows.append(("device-to-device copy, 256 MiB (read + write)", "limits.gpu_copy/d2d", "TB/s", 1e12, 2 * mib256 / s))
    del a, b

    n = 4096
    for name, dtype, tf32 in (
        ("fp32", torch.float32, False),
        ("tf32", torch.float32, True),
        ("fp16", torch.float16, False),
        ("bf16", torch.bfloat16, False),
    ):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        x = torch.randn(n, n, device=dev, dtype=dtype)
        y = torch.randn(n, n, device=dev, dtype=dtype)
        z = torch.empty(n, n, device=dev, dtype=dtype)
        s = timed(lambda: torch.mm(x, y, out=z), 10)
        rows.append(
            (f"GEMM 4096^3 {name}", f"precision.gpu_gemm/{name}/shape:4096x4096x4096", "TFLOP/s", 1e12, 2 * n**3 / s)
        )
        del x, y, z
    torch.backends.cuda.matmul.allow_tf32 = False

    elements = 16 << 20
    x = torch.randn(elements, device=dev)
    y = torch.empty_like(x)
    # b + a * x in one kernel (torch.add with alpha): one read of x, one write of y, as axpb_kernel.
    # b is a CPU scalar tensor, which PyTorch folds into the kernel; a 0-dim CUDA tensor would take
    # its broadcast path (the H200 table of 2026-11-28 was measured that way: 2.62 TB/s).
    b0 = torch.tensor(0.5)
    s = timed(lambda: torch.add(b0, x, alpha=1.5, out=y), 20)
    rows.append(
        (
            "fp32 a*x+b, 16M elements (bytes read + written)",
            "precision.bandwidth_ops/fp32/device:cuda/op:axpb/elements:16777216",
            "TB/s",
            1e12,
            8 * elements / s,
        )
    )
    del x, y

    tiny = torch.zeros(1024, device=dev)
    ops = 1000

    def launch_async():
        for _ in range(ops):
            tiny.add_(1)
        torch.cuda.synchronize()

    def launch_sync():
        for _ in range(ops):
            tiny.add_(1)
            torch.cuda.synchronize()

    s = timed(launch_async, ops, host_clock=True)
    rows.append(
        ("tiny kernel x1000, one wait (eager)", "dispatch.sync_vs_async/async/device:cuda/ops:1000", "us/op", 1e-6, s)
    )
    s = timed(launch_sync, ops, host_clock=True)
    rows.append(
        (
            "tiny kernel x1000, wait after each (eager)",
            "dispatch.sync_vs_async/sync/device:cuda/ops:1000",
            "us/op",
            1e-6,
            s,
        )
    )

    # pairbench's deciding metrics: bytes/s, flop/s, elements/s (axpb: 8 bytes each), ns per op.
    def ours_in_base(bench):
        v = ours.get(bench)
        if v is None:
            return None
        if bench.startswith("precision.bandwidth_ops"):
            return v * 8
        if bench.startswith("dispatch."):
            return v * 1e-9
        return v

    props = torch.cuda.get_device_properties(0)
    lines = [
        f"Same device, same hour: {props.name}, {props.multi_processor_count} SMs; PyTorch {torch.__version__} "
        f"(CUDA {torch.version.cuda}); pairbench from `{os.path.basename(args.run_file)}`.",
        "",
        "| work | unit | pairbench (median of processes) | PyTorch (median of 15) | pairbench / PyTorch |",
        "|---|---|---:|---:|---:|",
    ]
    out_json = []
    for what, bench, unit, scale, theirs in rows:
        mine = ours_in_base(bench)
        ratio = f"{mine / theirs:.2f}" if mine else "not run"
        mine_text = f"{mine / scale:.3g}" if mine else "not in the run"
        lines.append(f"| {what} (`{bench}`) | {unit} | {mine_text} | {theirs / scale:.3g} | {ratio} |")
        out_json.append(
            {
                "work": what,
                "benchmark": bench,
                "unit": unit,
                "pairbench": mine and mine / scale,
                "pytorch": theirs / scale,
            }
        )
    text = "\n".join(lines) + "\n"
    with open(args.out_markdown + ".partial", "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(args.out_markdown + ".partial", args.out_markdown)
    if args.json:
        with open(args.json + ".partial", "w", encoding="utf-8") as f:
            json.dump({"device": props.name, "torch": torch.__version__, "rows": out_json}, f, indent=1)
        os.replace(args.json + ".partial", args.json)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
