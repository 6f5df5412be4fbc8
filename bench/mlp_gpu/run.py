#!/usr/bin/env python3
"""bench/mlp_gpu: the vignette's model on one GPU, µs per training step at
batch 64, 512 and 4096, mirrored (build/bench_mlp_gpu, the C++ loop fit()
uses) with its CUDA graphs on and off, against PyTorch on the same GPU,
eager and with CUDA graphs; cuBLAS alone running the step's own GEMMs; the
fraction of the FP32 SGEMM ceiling reached at batch 4096; and the goals of
issue 14 (batch-64 step <= 50 µs and >= 3x PyTorch eager; batch 4096 >= 70%
of cuBLAS alone; bf16 >= 1.8x strict FP32 at 4096), each marked met, missed
or not measured. Needs a GPU and
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
                key = (r["contender"], r["batch"], r.get("precision", "f32"))
                rows.setdefault(key, []).append(r)
    return rows


def goals(med, rows):
    """One line per goal: met, missed, or not measured (and why)."""
    out = []
    m64, e64 = med.get(("mirrored", 64)), med.get(("torch_eager", 64))
    if m64 is None:
        out.append("- batch-64 step <= 50 µs: not measured")
    else:
        out.append(f"- batch-64 step <= 50 µs: {m64:.1f} µs, {'met' if m64 <= 50 else 'missed'}")
    if m64 is not None and e64 is not None:
        out.append(f"- batch 64 >= 3x PyTorch eager: {e64 / m64:.2f}x, {'met' if e64 / m64 >= 3 else 'missed'}")
    else:
        out.append("- batch 64 >= 3x PyTorch eager: not measured")
    m4k, c4k = med.get(("mirrored", 4096)), med.get(("cublas_step_gemms", 4096))
    if m4k is not None and c4k is not None:
        out.append(f"- batch 4096 >= 70% of cuBLAS alone on the step's GEMMs: {100 * c4k / m4k:.0f}%, "
                   f"{'met' if c4k / m4k >= 0.7 else 'missed'}")
    else:
        out.append("- batch 4096 >= 70% of cuBLAS alone: not measured")
    bf = [r["us_per_step"] for k, v in rows.items() if k[:3] == ("mirrored", 4096, "bf16") for r in v]
    if bf and m4k is not None:
        b = statistics.median(bf)
        out.append(f"- bf16 >= 1.8x strict FP32 at batch 4096: {m4k / b:.2f}x, {'met' if m4k / b >= 1.8 else 'missed'}")
    else:
        out.append("- bf16 >= 1.8x strict FP32 at batch 4096: not measured (bench_mlp_gpu's bf16 run "
                   "needs mixed precision in the core; see mlp_gpu_bf16.err)")
    return out


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
    f32 = {k: v for k, v in rows.items() if k[2] == "f32"}
    med = {k[:2]: statistics.median(r["us_per_step"] for r in v) for k, v in f32.items()}
    n = min(len(v) for v in f32.values())
    lines = ["## mlp_gpu", "", meta, "",
             f"µs per training step, median of {n} runs of 500 steps; 784-256-256-10, Adam, FP32 (no TF32). "
             "mirrored: CUDA graphs on (the default); eager: `options(mirrored.cuda_graphs = FALSE)`; "
             "cuBLAS alone: the step's eight GEMMs back to back.", "",
             "| batch | mirrored | mirrored eager | PyTorch eager | PyTorch CUDA graph | cuBLAS alone "
             "| graphs' speed-up | PyTorch eager / mirrored | PyTorch graph / mirrored | cuBLAS alone / mirrored |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]

    def cell(v):
        return "—" if v is None else f"{v:.1f}"

    def ratio(a, b):
        return "—" if a is None or b is None else f"{a / b:.2f}x"

    for b in (64, 512, 4096):
        m = med.get(("mirrored", b))
        if m is None:
            continue
        me, e, g, c = (med.get((k, b)) for k in ("mirrored_eager", "torch_eager", "torch_cuda_graph",
                                                  "cublas_step_gemms"))
        lines.append(f"| {b} | {cell(m)} | {cell(me)} | {cell(e)} | {cell(g)} | {cell(c)} | "
                     f"{ratio(me, m)} | {ratio(e, m)} | {ratio(g, m)} | {ratio(c, m)} |")
    big = f32.get(("mirrored", 4096, "f32"))
    if big:
        tf = statistics.median(r["tflops"] for r in big)
        ceil = statistics.median(r["sgemm_ceiling_tflops"] for r in big)
        lines += ["", f"Batch 4096: {tf:.1f} TFLOP/s of dense-layer work, {100 * tf / ceil:.0f}% of the "
                  f"measured cuBLAS FP32 SGEMM ceiling ({ceil:.1f} TFLOP/s at 8192^3)."]
    replays = [r.get("graph_replays", 0) for r in f32.get(("mirrored", 64, "f32"), [])]
    if replays:
        lines.append(f"Graph replays in a batch-64 run: {min(replays)} (of 550 steps).")
    lines += ["", "Goals (issue 14):"] + goals(med, rows)
    publish("mlp_gpu", lines, a.output, write=not a.no_write)


if __name__ == "__main__":
    main()
