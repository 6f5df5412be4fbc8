#!/usr/bin/env python3
"""bench/multiworker_step: the step time of the vignette MLP (batch 64) trained
by 2 worker processes of 1 CPU replica each (Gloo), beside one process with 1
and 2 replicas and beside PyTorch DDP (gloo) with 2 processes of 1 thread.
Runs each configuration --runs times, interleaved, and writes the
`multiworker_step` section of BENCHMARKS.md.

    python3 bench/multiworker_step/run.py [--runs 5] [--no-write]
"""
import argparse
import os
import random
import socket
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from report import REPO, provenance, publish  # noqa: E402


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mirrored(mode, env):
    script = os.path.join(HERE, "mirrored.R")
    if mode != "workers":
        out = subprocess.run(["Rscript", script, mode], capture_output=True, text=True, env=env, check=True)
        return float(out.stdout.split()[-1])
    ports = [free_port(), free_port()]
    cluster = ", ".join(f'"127.0.0.1:{p}"' for p in ports)
    procs = []
    for i in range(2):
        e = dict(env, TF_CONFIG='{"cluster": {"worker": [%s]}, "task": {"type": "worker", "index": %d}}' % (cluster, i))
        procs.append(subprocess.Popen(["Rscript", script, "workers"], stdout=subprocess.PIPE, text=True, env=e))
    times = [float(p.communicate(timeout=600)[0].split()[-1]) for p in procs]
    return max(times)


def torch_ddp(env):
    out = subprocess.run([sys.executable, os.path.join(HERE, "peer_torch.py"), "2", str(free_port())],
                         capture_output=True, text=True, env=env, check=True)
    return float(out.stdout.split()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--output", default=os.path.join(REPO, "BENCHMARKS.md"))
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env["R_LIBS"] = os.path.join(REPO, ".lib") + (":" + env["R_LIBS"] if env.get("R_LIBS") else "")
    names = ["single", "threads", "workers", "torch"]
    res = {n: [] for n in names}
    for r in range(args.runs):
        order = names[:]
        random.Random(r).shuffle(order)
        for n in order:
            res[n].append(torch_ddp(env) if n == "torch" else mirrored(n, env))
            print(f"run {r + 1}: {n} {res[n][-1]:.3f} ms/step", flush=True)
    med = {n: statistics.median(v) for n, v in res.items()}
    rows = [
        ("mirrored, 1 process x 1 replica", "single"),
        ("mirrored, 1 process x 2 replicas (thread all-reduce)", "threads"),
        ("mirrored, 2 processes x 1 replica (Gloo, TF_CONFIG on loopback)", "workers"),
        ("PyTorch DDP, 2 processes x 1 thread (gloo)", "torch"),
    ]
    lines = [
        "## multiworker_step",
        "",
        "The vignette's MLP (784-256-256-10 with dropout, Adam, global batch 64; 6,400 random rows,",
        "100 steps per epoch): ms per step over epochs 2-4, median of the runs (configurations",
        "interleaved in a shuffled order each round). Every process and thread shares the same 2",
        "cores, so the 2-process rows pay for the process boundary (loopback TCP, Gloo's I/O",
        "threads) on the cores that compute; mirrored's workers use 1 CPU thread each (the host's",
        "cores shared by its workers), PyTorch's are set to 1 thread.",
        "",
        *provenance(f"make install && python3 bench/multiworker_step/run.py --runs {args.runs}"),
        "",
        "| configuration | ms/step | runs |",
        "|---|---|---|",
    ]
    for label, key in rows:
        lines.append(f"| {label} | {med[key]:.3f} | {' '.join(f'{v:.3f}' for v in res[key])} |")
    lines += ["", f"2 processes: PyTorch DDP / mirrored = {med['torch'] / med['workers']:.2f} (above 1: mirrored is faster)."]
    publish("multiworker_step", lines, args.output, not args.no_write)


if __name__ == "__main__":
    main()
