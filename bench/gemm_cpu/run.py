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
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from report import REPO, provenance, publish  # noqa: E402


ROW = re.compile(r"^(.*?)\s+([NT]{2})\s+(\d+)\s+(\d+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+(-?[\d.]+)")


def run_once(binary, threads, seconds):
    out = subprocess.run([binary, str(threads), str(seconds)], capture_output=True, text=True, check=True).stdout
    rows, ceiling, transpose, path = {}, None, None, "?"
    for line in out.splitlines():
        if line.startswith("W3 transpose:"):
            transpose = float(line.split()[4])
            continue
        if line.startswith("FMA ceiling:"):
            parts = line.replace(",", "").split()
            ceiling = (float(parts[4]), float(parts[8]))
            continue
        if line.startswith("kernel path:"):
            path = line.split(":", 1)[1].strip()
            continue
        # label op m n k 1-thread team oneDNN-1-thread [team working]
        m = ROW.match(line)
        if m:
            label, op, mm, nn, kk, one, team, dnnl = m.groups()
            rows[(label.strip(), op, mm, nn, kk)] = (float(one), float(team), float(dnnl))
    return rows, ceiling, transpose, path


# cpu_gemm_narrow.cpp's kSplitMinMacs: narrow products below it run on the calling thread.
SPLIT_MIN_MACS = 512 * 1024


def team_handoff(binary, n):
    """Median ns of a cross-core round trip and of an empty 2-part ThreadTeam::run_parts over n runs
    of build/bench_team_handoff, or None where it is not built."""
    if not os.path.exists(binary):
        return None
    trip, team = [], []
    for _ in range(n):
        out = subprocess.run([binary], capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("cross-core round trip"):
                trip.append(float(line.split()[-2]))
            elif line.startswith("ThreadTeam::run_parts"):
                team.append(float(line.split()[-2]))
    return statistics.median(trip), statistics.median(team)


def split_budget(medians, ceil2, handoff, n_runs):
    """Lines on the products that run on one thread (medians: key -> (1-thread, 2-thread)
    GFLOP/s): how much time a 2-way split could spend on its hand-off and still reach 60% of the
    2-thread ceiling, against the measured hand-off."""
    out = []
    for key, (one, _) in medians.items():
        label, op, m, n, k = key
        if min(int(m), int(n), int(k)) > 16 or int(m) * int(n) * int(k) >= SPLIT_MIN_MACS:
            continue  # split over the team
        flops = 2.0 * int(m) * int(n) * int(k)
        t1 = flops / (one * 1e9) * 1e6
        budget = flops / (0.6 * ceil2 * 1e9) * 1e6
        out.append(f"- {label.strip()} ({op} {m}x{n}x{k}): {t1:.2f} us on one thread; at 60% of the 2-thread"
                   f" ceiling it must take {budget:.2f} us, so a 2-way split (halves of {t1 / 2:.2f} us at the"
                   f" same speed) has {1000 * (budget - t1 / 2):.0f} ns for its hand-off")
    if out and handoff:
        out.append(f"- measured (`build/bench_team_handoff`, median of {n_runs} runs): a cross-core round trip"
                   f" {handoff[0]:.0f} ns, an empty 2-part ThreadTeam::run_parts {handoff[1]:.0f} ns")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=5)
    ap.add_argument("--bin", default=os.path.join(REPO, "build", "bench_gemm"))
    ap.add_argument("--seconds", type=float, default=0.5)
    ap.add_argument("--output", default=os.path.join(REPO, "BENCHMARKS.md"))
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--section", default="gemm_cpu", help="BENCHMARKS.md section (e.g. gemm_cpu_avx2)")
    args = ap.parse_args()
    if not os.path.exists(args.bin):
        sys.exit(f"{args.bin} is missing: run `make core` first")
    runs = [run_once(args.bin, 2, args.seconds) for _ in range(args.n)]
    handoff = team_handoff(os.path.join(os.path.dirname(args.bin), "bench_team_handoff"), args.n)
    keys = list(runs[0][0].keys())
    med = lambda xs: statistics.median(xs)  # noqa: E731
    ceil1 = med([r[1][0] for r in runs])
    ceil2 = med([r[1][1] for r in runs])
    lines = [
        f"## {args.section}",
        "",
        f"Kernel path: {runs[0][3]} (`src/mr/backends/cpu/cpu_isa.h`; the avx512 path: oneDNN's sgemm",
        "where the build found oneDNN, else Eigen with the kernels' vector flags; avx2 and portable: the",
        "blocked GEMM of `cpu_gemm_blocked_kernel.h`). sgemm of the CPU backend (split over a team of",
        "threads by output rows or columns), beside oneDNN's sgemm on one thread, at every",
        "product one training step of the vignette's model does (784-256-256-10, batch 64; the first",
        "layer's dX is not computed), and two large ones, against the machine's ceiling measured by an",
        "FMA-throughput loop (independent accumulators). Products with n or k <= 16 (the output",
        "layer's) run on the AVX-512 kernels of `src/mr/backends/cpu/cpu_gemm_narrow.cpp`, on the",
        "calling thread alone below 512k multiply-adds (split, they ran slower: the hand-off costs more",
        "than the split saves, see below), so their 2-thread figure is their 1-thread one and is given",
        "against both ceilings. The output layer's kernel W3 is kept transposed for the step (Dense,",
        "where `Backend::keeps_transposed_narrow_weights` says so: the AVX-512 CPU), so its forward is the",
        "NT product H (W3^T)^T and dX3 the NN product dY (W3^T) from that one copy, timed below the",
        "table. Operands are 64-byte aligned, as the step's buffers are.",
        f"Median GFLOP/s of {args.n} runs of `build/bench_gemm 2`.",
        "",
        *provenance("make core && python3 bench/gemm_cpu/run.py"),
        "",
        "| product | op | m | n | k | 1 thread GFLOP/s | share of the 1-thread ceiling | 2 threads GFLOP/s | share of the 2-thread ceiling | oneDNN sgemm, 1 thread |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    medians = {key: tuple(med([r[0][key][i] for r in runs if key in r[0]]) for i in range(3)) for key in keys}
    for key, (one, two, dnnl) in medians.items():
        label, op, m, n, k = key
        lines.append(
            f"| {label} | {op} | {m} | {n} | {k} | {one:.1f} | {100 * one / ceil1:.0f}% | {two:.1f} |"
            f" {100 * two / ceil2:.0f}% | {'—' if dnnl < 0 else f'{dnnl:.1f}'} |"
        )
    lines += ["", f"Ceiling (FMA loop): {ceil1:.1f} GFLOP/s on 1 thread, {ceil2:.1f} on 2."]
    budget = split_budget({k: v[:2] for k, v in medians.items()}, ceil2, handoff, len(runs))
    if budget:
        lines += ["", "Why the output layer's products run on one thread: what a split would have to reach.", ""]
        lines += budget
    tr = [r[2] for r in runs if r[2] is not None]
    if tr:
        lines += ["", f"The copy of W3 to W3^T (256x10, `strided_copy`, once per step): {med(tr):.3f} us on 1 thread"
                  f" (median of {len(tr)} runs)."]
    publish(args.section, lines, args.output, not args.no_write)


if __name__ == "__main__":
    main()
