#!/usr/bin/env python3
"""bench/mlp_gpu: the vignette's model on one GPU, µs per training step at
batch 64, 512 and 4096, mirrored (build/bench_mlp_gpu, the C++ loop fit()
uses) against PyTorch on the same GPU, eager and with CUDA graphs; the
fraction of the FP32 SGEMM ceiling reached at batch 4096. Needs a GPU and
PyTorch: tools/gpu-check.sh runs it on the lent GPU machine, several times,
and writes the medians; on the development machine,

    python3 bench/mlp_gpu/run.py --from DIR   # DIR: gpu-check.sh's output

writes the `mlp_gpu` section of BENCHMARKS.md from those files.
"""
import argparse
import glob
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from report import REPO, publish  # noqa: E402


def load(directory):
    rows = {}
    for path in sorted(glob.glob(os.path.join(directory, "mlp_gpu_*.jsonl"))):
        for line in open(path):
            line = line.strip()
            if line.startswith("{"):
                r = json.loads(line)
                rows.setdefault((r["contender"], r["batch"]), []).append(r)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--from", dest="src", required=True)
    ap.add_argument("--output", default=os.path.join(REPO, "BENCHMARKS.md"))
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    rows = load(a.src)
    if not rows:
        sys.exit(f"no mlp_gpu_*.jsonl files in {a.src}")
    meta = open(os.path.join(a.src, "meta.txt")).read().strip() if os.path.exists(os.path.join(a.src, "meta.txt")) else ""
    med = {k: statistics.median(r["us_per_step"] for r in v) for k, v in rows.items()}
    n = min(len(v) for v in rows.values())
    lines = ["## mlp_gpu", "", meta, "",
             f"µs per training step, median of {n} runs of 500 steps; 784-256-256-10, Adam, FP32 (no TF32).", "",
             "| batch | mirrored | PyTorch eager | PyTorch CUDA graph | eager / mirrored | graph / mirrored |",
             "| --- | --- | --- | --- | --- | --- |"]
    for b in (64, 512, 4096):
        m, e, g = med.get(("mirrored", b)), med.get(("torch_eager", b)), med.get(("torch_cuda_graph", b))
        if m is None:
            continue
        lines.append(f"| {b} | {m:.1f} | {e:.1f} | {g:.1f} | {e / m:.2f}x | {g / m:.2f}x |")
    big = rows.get(("mirrored", 4096))
    if big:
        tf = statistics.median(r["tflops"] for r in big)
        ceil = statistics.median(r["sgemm_ceiling_tflops"] for r in big)
        lines += ["", f"Batch 4096: {tf:.1f} TFLOP/s of dense-layer work, {100 * tf / ceil:.0f}% of the "
                  f"measured cuBLAS FP32 SGEMM ceiling ({ceil:.1f} TFLOP/s at 8192^3)."]
    publish("mlp_gpu", lines, a.output, write=not a.no_write)


if __name__ == "__main__":
    main()
