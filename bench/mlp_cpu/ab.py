"""A/B of mirrored against another build of itself on bench/mlp_cpu's job (the vignette's MLP,
2 epochs on the bundled MNIST digits): the two run interleaved in one session (A, B, A, B, ...,
each in its own process), so a slow phase of the machine hits both alike; the section
`mlp_cpu_ab` of BENCHMARKS.md gets the median, min and max of epoch-2 ms/step and the ratio
B / A. A redesign must keep B within 3% of A. Timing runs must not overlap a build:

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
from harness import run_once  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n", type=int, default=7)
    p.add_argument("--a-cmd", required=True, help="command of the base build (prints mirrored.R's JSON line)")
    p.add_argument("--a-label", default="base")
    p.add_argument("--b-cmd", default="Rscript bench/mlp_cpu/mirrored.R")
    p.add_argument("--b-label", default="this checkout")
    p.add_argument("--timeout", type=float, default=900)
    p.add_argument("--output", default=os.path.join(REPO, "BENCHMARKS.md"))
    p.add_argument("--no-write", action="store_true")
    args = p.parse_args()

    runs = {"A": [], "B": []}
    cmds = {"A": args.a_cmd, "B": args.b_cmd}
    for i in range(args.n):
        for side in ("A", "B"):
            rec, why = run_once(cmds[side], args.timeout, seed=i + 1)
            if rec is None:
                sys.exit(f"{side} failed: {why}")
            runs[side].append(rec)
            print(f"round {i + 1} {side}: {rec['ms_per_step_epoch2']:.3f} ms/step "
                  f"(contention {rec['contention']:.3f})", flush=True)

    def stats(side):
        v = [r["ms_per_step_epoch2"] for r in runs[side]]
        return statistics.median(v), min(v), max(v)

    a, b = stats("A"), stats("B")
    cmd = f"python3 bench/mlp_cpu/ab.py --n {args.n} --a-cmd '{args.a_cmd}' --a-label {args.a_label}"
    lines = [
        "## mlp_cpu A/B: a redesign against its base commit",
        "",
        *provenance(cmd),
        f"- job: bench/mlp_cpu's (784-256-256-10 MLP, Adam, batch 64, 2 epochs of 10,000 digits);"
        f" {args.n} rounds, A and B interleaved; epoch-2 ms/step",
        "",
        "| build | median | min | max |",
        "| --- | --- | --- | --- |",
        f"| A: {args.a_label} | {a[0]:.3f} | {a[1]:.3f} | {a[2]:.3f} |",
        f"| B: {args.b_label} | {b[0]:.3f} | {b[1]:.3f} | {b[2]:.3f} |",
        "",
        f"B / A (medians): **{b[0] / a[0]:.3f}** ({datetime.datetime.utcnow():%Y-%m-%d})",
    ]
    publish("mlp_cpu_ab", lines, args.output, write=not args.no_write)


if __name__ == "__main__":
    main()
