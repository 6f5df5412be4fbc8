#!/usr/bin/env python3
"""bench/gemm_cpu: sgemm GFLOP/s of mirrored's CPU backend at the shapes of the
vignette's model (forward and backward products of 784-256-256-10 at batch 64)
and two large products, against the machine's measured ceiling (an FMA loop on
1 and 2 threads). Runs build/bench_gemm (built by `make core`) N times and
writes the medians to the `gemm_cpu` section of BENCHMARKS.md.

    python3 bench/gemm_cpu/run.py [--n 5] [--bin build/bench_gemm] [--no-write]
"""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from report import REPO, provenance, publish  # noqa: E402


def run_once(binary, threads, seconds):
    out = subprocess.run([binary, str(threads), str(seconds)], capture_output=True, text=True, check=True).stdout
    rows, ceiling = {}, None
    for line in out.splitlines():
        if line.startswith("FMA ceiling:"):
            parts = line.replace(",", "").split()
            ceiling = (float(parts[4]), float(parts[8]))
            continue
        fields = line.split()
        if len(fields) >= 7 and fields[-1].replace(".", "", 1).isdigit() and fields[-3].isdigit():
            label = " ".join(fields[:-6])
            rows[(label, fields[-6], fields[-5], fields[-4], fields[-3])] = (float(fields[-2]), float(fields[-1]))
    return rows, ceiling


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=5)
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "bench_gemm"))
    ap.add_argument("--seconds", type=float, default=0.5)
    ap.add_argument("--output", default=os.path.join(REPO, "BENCHMARKS.md"))
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    if not os.path.exists(args.bin):
        sys.exit(f"{args.bin} is missing: run `make core` first")
    runs = [run_once(args.bin, 2, args.seconds) for _ in range(args.n)]
    keys = list(runs[0][0].keys())
    med = lambda xs: statistics.median(xs)  # noqa: E731
    ceil1 = med([r[1][0] for r in runs])
    ceil2 = med([r[1][1] for r in runs])
    lines = [
        "## gemm_cpu",
        "",
        "sgemm of the CPU backend (oneDNN's sgemm where the build found oneDNN, else Eigen with the",
        "kernels' vector flags; split over a team of threads by output rows or columns) at every",
        "product one training step of the vignette's model does (784-256-256-10, batch 64; the first",
        "layer's dX is not computed), and two large ones, against the machine's ceiling measured by an",
        "FMA-throughput loop (independent accumulators). Products with n or k <= 16 (the output",
        "layer's) run on the AVX-512 kernels of `src/mr/backends/cpu/cpu_gemm_narrow.cpp`, on the",
        "calling thread alone below 512k multiply-adds: an empty 2-way hand-off of the thread team",
        "(`build/bench_team_handoff`) measured 0.6-0.9 us against a 0.3 us cross-core round trip, a",
        "third of such a product, and split they ran slower, so their 2-thread figure is their",
        "1-thread one and is given against both ceilings. Operands are 64-byte aligned, as the step's",
        f"buffers are. Median GFLOP/s of {args.n} runs of `build/bench_gemm 2`.",
        "",
        *provenance("make core && python3 bench/gemm_cpu/run.py"),
        "",
        "| product | op | m | n | k | 1 thread GFLOP/s | share of the 1-thread ceiling | 2 threads GFLOP/s | share of the 2-thread ceiling |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for key in keys:
        one = med([r[0][key][0] for r in runs if key in r[0]])
        two = med([r[0][key][1] for r in runs if key in r[0]])
        label, op, m, n, k = key
        lines.append(
            f"| {label} | {op} | {m} | {n} | {k} | {one:.1f} | {100 * one / ceil1:.0f}% | {two:.1f} | {100 * two / ceil2:.0f}% |"
        )
    lines += ["", f"Ceiling (FMA loop): {ceil1:.1f} GFLOP/s on 1 thread, {ceil2:.1f} on 2."]
    publish("gemm_cpu", lines, args.output, not args.no_write)


if __name__ == "__main__":
    main()
