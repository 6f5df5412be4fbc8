"""A/B of mirrored against another build of itself on bench/mlp_cpu's job (the vignette's MLP,
2 epochs on the bundled MNIST digits), or with --job cnn_cpu on bench/cnn_cpu's (keras3's MNIST
convnet): the two run interleaved in one session (A, B, A, B, ..., each in its own process), so a
slow phase of the machine hits both alike; the section `<job>_ab` of BENCHMARKS.md gets the
median, min and max of epoch-2 ms/step and the ratio B / A. A redesign must keep B within 3% of
A. Timing runs must not overlap a build:

    flock /tmp/mr-build.lock python3 bench/mlp_cpu/ab.py --n 7 \\
        --a-cmd 'cd /tmp/base-src && Rscript bench/mlp_cpu/mirrored.R' --a-label 214be81

(A's checkout has the base commit's package installed in its own .lib; B is this checkout.)
"""

import argparse
import datetime
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from report import provenance, publish  # noqa: E402
from harness import FAR_NS, machine_mode, run_once  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
JOBS = {
    "mlp_cpu": "784-256-256-10 MLP, Adam, batch 64, 2 epochs of 10,000 digits",
    "cnn_cpu": "keras3's MNIST convnet, batch 128, 2 epochs",
}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=7)
    p.add_argument("--a-cmd", required=True, help="command of the base build (prints mirrored.R's JSON line)")
    p.add_argument("--a-label", default="base")
    p.add_argument("--job", choices=list(JOBS), default="mlp_cpu")
    p.add_argument("--b-cmd", default=None, help="default: Rscript bench/<job>/mirrored.R")
    p.add_argument("--b-label", default="this checkout")
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--output", default=os.path.join(REPO, "BENCHMARKS.md"))
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args()

    runs = {"A": [], "B": []}
    cmds = {"A": args.a_cmd, "B": args.b_cmd or f"Rscript bench/{args.job}/mirrored.R"}
    for i in range(args.n):
        for side in ("A", "B"):
            rec, why = run_once(cmds[side], args.timeout, seed=i + 1)
            if rec is None:
                sys.exit(f"{side} failed: {why}")
            runs[side].append(rec)
            rt = rec.get("cross_core_ns")
            print(f"round {i + 1} {side}: {rec['ms_per_step_epoch2']:.3f} ms/step "
                  f"(contention {rec['contention']:.3f}, cross-core round trip "
                  f"{'?' if rt is None else f'{rt:.0f} ns'})", flush=True)

    def stats(side, mode=None):
        v = [r["ms_per_step_epoch2"] for r in runs[side] if mode is None or machine_mode(r) == mode]
        return (statistics.median(v), min(v), max(v), len(v)) if v else None

    a, b = stats("A"), stats("B")
    cmd = (f"python3 bench/mlp_cpu/ab.py --job {args.job} --n {args.n} --a-cmd '{args.a_cmd}'"
           f" --a-label {args.a_label}")
    lines = [
        f"## {args.job} A/B: a redesign against its base commit",
        "",
        *provenance(cmd),
        f"- job: bench/{args.job}'s ({JOBS[args.job]});"
        f" {args.n} rounds, A and B interleaved; epoch-2 ms/step",
        "",
        "| build | median | min | max |",
        "| --- | --- | --- | --- |",
        f"| A: {args.a_label} | {a[0]:.3f} | {a[1]:.3f} | {a[2]:.3f} |",
        f"| B: {args.b_label} | {b[0]:.3f} | {b[1]:.3f} | {b[2]:.3f} |",
        "",
        f"B / A (medians): **{b[0] / a[0]:.3f}** ({datetime.datetime.utcnow():%Y-%m-%d})",
    ]
    # The machine's two modes (the cross-core round trip measured before each run: near or far
    # vCPUs, see harness.cross_core_ns), each build's runs in each.
    modes = [m for m in ("near", "far") if any(machine_mode(r) == m for side in runs for r in runs[side])]
    if any(r.get("cross_core_ns") for side in runs for r in runs[side]):
        lines += ["", "| machine mode (cross-core round trip) | A runs, median (min-max) | B runs, median (min-max) | B / A |",
                  "| --- | --- | --- | --- |"]
        for m in modes:
            sa, sb = stats("A", m), stats("B", m)
            cell = lambda x: "—" if x is None else f"{x[3]}, {x[0]:.3f} ({x[1]:.3f}-{x[2]:.3f})"
            ratio = f"{sb[0] / sa[0]:.3f}" if sa and sb else "—"
            label = f"{m} (< {FAR_NS} ns)" if m == "near" else f"{m} (>= {FAR_NS} ns)"
            lines.append(f"| {label} | {cell(sa)} | {cell(sb)} | {ratio} |")
    publish(f"{args.job}_ab", lines, args.output, write=not args.no_write)


if __name__ == "__main__":
    main()
