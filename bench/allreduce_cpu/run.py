#!/usr/bin/env python3
"""bench/allreduce_cpu: the CPU communicator's all-reduce (reduce-scatter +
all-gather over replica threads sharing host memory) against message size,
4 KB .. 64 MB, for 2 and 4 replicas. Runs build/bench_allreduce (built by
`make core`) and writes the `allreduce_cpu` section of BENCHMARKS.md.

    python3 bench/allreduce_cpu/run.py [--reps 20] [--no-write]
"""
import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from report import REPO, provenance, publish  # noqa: E402


def human(b):
    return f"{b >> 20} MB" if b >= 1 << 20 else f"{b >> 10} KB"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "bench_allreduce"))
    ap.add_argument("--output", default=os.path.join(REPO, "BENCHMARKS.md"))
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    if not os.path.exists(args.bin):
        sys.exit(f"{args.bin} is missing: run `make core` first")
    rows = {}
    for ranks in (2, 4):
        out = subprocess.run([args.bin, str(ranks), str(args.reps)], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines()[1:]:
            b, r, us, alg, bus = line.split()
            rows.setdefault(int(b), {})[int(r)] = (float(us), float(alg), float(bus))
    cpus = os.cpu_count()
    lines = [
        "## allreduce_cpu",
        "",
        "All-reduce (sum) of the CPU communicator: each replica thread sums its chunk of every",
        "replica's buffer in rank order (reduce-scatter), then copies the other chunks (all-gather);",
        "three barriers per call. Time of the slowest rank, median of the repetitions; algorithmic",
        "bandwidth = bytes / time; bus bandwidth = algbw x 2(N-1)/N (NCCL's convention). On this",
        f"{cpus}-core machine 4 replica threads share 2 cores, so 4 ranks measure oversubscription too.",
        "",
        *provenance(f"make core && python3 bench/allreduce_cpu/run.py --reps {args.reps}"),
        "",
        "| size | 2 replicas µs | algbw GB/s | busbw GB/s | 4 replicas µs | algbw GB/s | busbw GB/s |",
        "|---|---|---|---|---|---|---|",
    ]
    for b in sorted(rows):
        two, four = rows[b].get(2), rows[b].get(4)
        lines.append(f"| {human(b)} | {two[0]:.1f} | {two[1]:.2f} | {two[2]:.2f} | {four[0]:.1f} | {four[1]:.2f} | {four[2]:.2f} |")
    publish("allreduce_cpu", lines, args.output, not args.no_write)


if __name__ == "__main__":
    main()
