#!/usr/bin/env python3
"""bench/pipeline: does prefetch overlap input with compute, and how fast is the C++ pipeline?

1. A source made slow on purpose (the internal `dataset_delay()` stage sleeps a known time per
   batch) feeds a consumer of known cost per step (sleeping on the consuming thread), then
   fit() on an MLP whose measured step cost the delay is set to match. Epoch time with
   dataset_prefetch() should be within 10% of max(input, compute); without it, the plain
   consumer pays their sum.
2. Raw throughput in batches/s of batch-64 MNIST (the 10,000 bundled training digits:
   slices -> [shuffle(10000) ->] batch(64) -> x/255 -> prefetch) against tf.data doing the same
   work, in the same run.

    flock /tmp/mr-build.lock python3 bench/pipeline/run.py [--epochs 5] [--no-write]
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
from report import provenance, publish  # noqa: E402


def json_lines(cmd, env=None):
    out = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, env=env, timeout=900)
    if out.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{out.stderr[-3000:]}")
    return [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--output", default=os.path.join(REPO, "BENCHMARKS.md"))
    ap.add_argument("--no-write", action="store_true")
    args = ap.parse_args()
    env = dict(os.environ)
    env["R_LIBS"] = os.path.join(REPO, ".lib") + (":" + env["R_LIBS"] if env.get("R_LIBS") else "")
    mine = json_lines(["Rscript", "bench/pipeline/mirrored.R", str(args.epochs)], env)
    peer = json_lines([args.python, "bench/pipeline/peer_tf.py", str(args.epochs)])
    lines = ["## pipeline", "", *provenance("make install && python3 bench/pipeline/run.py"), "",
             "Overlap of input and compute (seconds per epoch; input = the slow pipeline drained alone,",
             "compute = the consumer fed by an instant pipeline):", "",
             "| consumer | batches | input | compute | max | sum | without prefetch | with prefetch | prefetch / max |",
             "|---|---|---|---|---|---|---|---|---|"]
    labels = {"overlap": "sleep 25 ms/step, input 15 ms/batch", "fit": "fit(), MLP 784-1024-1024-10, batch 64, input = 1 step (median of 3)"}
    for r in mine:
        if r["kind"] not in labels:
            continue
        mx, sm = max(r["input_s"], r["compute_s"]), r["input_s"] + r["compute_s"]
        lines.append(f"| {labels[r['kind']]} | {r['batches']} | {r['input_s']:.3f} | {r['compute_s']:.3f} | "
                     f"{mx:.3f} | {sm:.3f} | {r['no_prefetch_s']:.3f} | {r['prefetch_s']:.3f} | "
                     f"{r['prefetch_s'] / mx:.2f} |")
    lines += ["", "fit() draws batch k+1 on R's thread while the replicas compute batch k, so even without",
              "prefetch its epoch is already near max(input, compute); dataset_prefetch() moves the input",
              "off that thread entirely.", "",
              f"Throughput, batch-64 MNIST, {args.epochs} epochs after a warm-up epoch (batches/s, higher is better):", "",
              "| pipeline | mirrored | tf.data | mirrored / tf.data |", "|---|---|---|---|"]
    tfv = "?"
    names = {"shuffle": "shuffle(10000) + batch(64) + x/255 + prefetch", "plain": "batch(64) + x/255 + prefetch",
             "parts": "10 files read every pass + batch(64) + x/255 + prefetch"}
    for name, label in names.items():
        m = next((r for r in mine if r["kind"] == "throughput" and r["pipeline"] == name), None)
        p = next((r for r in peer if r["pipeline"] == name), None)
        if m and p:
            tfv = p.get("tf", tfv)
            lines.append(f"| {label} | {m['batches_per_s']:.0f} | {p['batches_per_s']:.0f} | "
                         f"{m['batches_per_s'] / p['batches_per_s']:.2f} |")
    lines += ["", f"tf.data: tensorflow-cpu {tfv} (`from_tensor_slices` of uint8 images, `map` cast/255, AUTOTUNE prefetch).",
              "Files: mirrored reads 10 `.npz` parts (`npz_dataset()` of several files, uint8 images); tf.data",
              "reads the same digits from 10 TFRecord files (`TFRecordDataset`, batched `parse_example` +",
              "`decode_raw`)."]
    publish("pipeline", lines, args.output, write=not args.no_write)


if __name__ == "__main__":
    main()
