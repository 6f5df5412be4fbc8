#!/usr/bin/env python3
"""A MODEL, not a measurement: the data-parallel step time of three models on
1, 2, 4 and 8 GPUs (H100 with NVLink/NVSwitch, and H100 on PCIe without
NVLink), from a single-GPU step time, the bucketed all-reduce overlapped
with the backward pass, and NCCL's bus bandwidth. Writes the tables of
docs/scaling-model.md (printed; --output writes the file's generated block).

The model (docs/scaling-model.md explains each assumption):
- weak scaling: every GPU keeps the per-GPU batch, so its compute time is
  the single-GPU step time t1 whatever N is;
- the backward pass is 2/3 of the compute (dense and convolution layers:
  forward 2 flops per weight and sample, backward 4), and produces the
  gradients in reverse layer order, each layer's at a time proportional to
  its share of the backward flops;
- gradients are packed in reverse layer order into buckets of at most
  --bucket-mb (a bucket is closed once the next layer would overflow it; a
  layer larger than a bucket is a bucket of its own); a bucket's all-reduce
  starts when its last layer's gradients are ready and the previous
  all-reduce ended (one communication stream, fixed launch order);
- a ring all-reduce of S bytes on N GPUs takes latency + 2 (N - 1) / N * S /
  busbw (NVIDIA nccl-tests, doc/PERFORMANCE.md);
- the step ends when the backward pass and the last all-reduce have ended;
  then the optimizer update (inside t1 already).

    python3 tools/scaling-model.py [--from DIR] [--output docs/scaling-model.md]

--from DIR reads tools/gpu-check.sh's logs (mlp_gpu_m*.jsonl) and replaces
the vignette MLP's assumed single-GPU step with the measured median of
mirrored at batch 64.
"""
import argparse
import glob
import json
import os
import statistics

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Interconnects: bus bandwidth (GB/s, the nccl-tests "busbw" of a large
# all-reduce) and the latency of one all-reduce call (µs). Assumptions, see
# docs/scaling-model.md for the sources.
LINKS = {
    "H100 SXM, NVLink 4 + NVSwitch": {"busbw": 360.0, "latency_us": 10.0},
    "H100 PCIe Gen5, no NVLink": {"busbw": 40.0, "latency_us": 20.0},
}

# H100 SXM: 67 TFLOP/s FP32 (non-tensor) from NVIDIA's datasheet; the
# assumed fraction reached by a training step's GEMMs / convolutions at
# these sizes, and a per-step floor (launches, the update) for a step that
# replays a CUDA graph.
PEAK_TFLOPS = 67.0
EFFICIENCY = 0.4
FLOOR_US = 40.0


def dense(sizes):
    """(params, forward flops per sample) of each dense layer."""
    return [(a * b + b, 2 * a * b) for a, b in zip(sizes, sizes[1:])]


MODELS = {
    # 784-256-256-10, batch 64 per GPU (the vignette's batch).
    "vignette MLP (784-256-256-10)": {"layers": dense([784, 256, 256, 10]), "batch": 64},
    # Keras' MNIST convnet (bench/cnn_cpu): conv 3x3x32, pool, conv 3x3x64,
    # pool, flatten, dense 10; batch 128 per GPU (bench/cnn_cpu's).
    "MNIST convnet (bench/cnn_cpu)": {
        "layers": [(3 * 3 * 1 * 32 + 32, 26 * 26 * 32 * 9 * 2),
                   (3 * 3 * 32 * 64 + 64, 11 * 11 * 64 * 288 * 2),
                   (1600 * 10 + 10, 1600 * 10 * 2)],
        "batch": 128},
    # 784-4096-4096-1280-10: 25.3M parameters, batch 256 per GPU.
    "25M-parameter MLP (784-4096-4096-1280-10)": {"layers": dense([784, 4096, 4096, 1280, 10]),
                                                   "batch": 256},
}


def single_gpu_us(model):
    flops = 3 * model["batch"] * sum(f for _, f in model["layers"])
    return FLOOR_US + flops / (EFFICIENCY * PEAK_TFLOPS * 1e12) * 1e6


def allreduce_us(nbytes, n, link):
    if n == 1:
        return 0.0
    return link["latency_us"] + 2 * (n - 1) / n * nbytes / (link["busbw"] * 1e9) * 1e6


def buckets(layers, cap_bytes):
    """Buckets in reverse layer order: (bytes, index of its last layer)."""
    out, size, last = [], 0, None
    for i in reversed(range(len(layers))):
        b = 4 * layers[i][0]
        if size > 0 and size + b > cap_bytes:
            out.append((size, last))
            size = 0
        size += b
        last = i
    if size > 0:
        out.append((size, last))
    return out


def step_us(model, t1, n, link, cap_bytes, overlap=True):
    """(step µs, all-reduce µs in total, all-reduce µs not hidden)."""
    layers = model["layers"]
    back_start = t1 / 3.0  # forward: 1/3 of the compute, backward: 2/3
    back_total = t1 - back_start
    flops = [f for _, f in layers]
    ready, done = {}, 0.0  # when layer i's gradients are complete
    for i in reversed(range(len(layers))):
        done += flops[i] / sum(flops) * back_total
        ready[i] = back_start + done
    end_backward = t1
    comm_total, t = 0.0, 0.0
    for nbytes, last in buckets(layers, cap_bytes if overlap else float("inf")):
        d = allreduce_us(nbytes, n, link)
        start = max(ready[last] if overlap else end_backward, t)
        t = start + d
        comm_total += d
    end = max(end_backward, t)
    return end, comm_total, end - end_backward


def table(t1s, cap_bytes):
    lines = []
    for link_name, link in LINKS.items():
        lines += ["", f"### {link_name} (busbw {link['busbw']:.0f} GB/s, {link['latency_us']:.0f} µs per "
                  f"all-reduce; buckets of {cap_bytes / 2**20:.0f} MiB)", "",
                  "| model | params | per-GPU batch | GPUs | step µs (modelled) | all-reduce µs | not hidden µs "
                  "| speed-up (samples/s vs 1 GPU) | efficiency | without overlap: speed-up |",
                  "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
        for name, m in MODELS.items():
            t1 = t1s[name]
            params = sum(p for p, _ in m["layers"])
            for n in (1, 2, 4, 8):
                s, c, exposed = step_us(m, t1, n, link, cap_bytes)
                s0, _, _ = step_us(m, t1, n, link, cap_bytes, overlap=False)
                lines.append(f"| {name} | {params / 1e6:.2f}M | {m['batch']} | {n} | {s:.1f} | {c:.1f} | "
                             f"{exposed:.1f} | {n * t1 / s:.2f}x | {100 * t1 / s:.0f}% | {n * t1 / s0:.2f}x |")
    return lines


def measured_mlp_us(directory):
    us = []
    for path in glob.glob(os.path.join(directory, "mlp_gpu_m*.jsonl")):
        for line in open(path):
            if line.startswith("{"):
                r = json.loads(line)
                if r.get("contender") == "mirrored" and r.get("batch") == 64:
                    us.append(r["us_per_step"])
    return statistics.median(us) if us else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--from", dest="src")
    ap.add_argument("--bucket-mb", type=float, default=25.0)
    ap.add_argument("--output")
    a = ap.parse_args()
    t1s = {name: single_gpu_us(m) for name, m in MODELS.items()}
    source = {name: f"modelled: {FLOOR_US:.0f} µs + flops / ({EFFICIENCY:.0%} of {PEAK_TFLOPS:.0f} TFLOP/s)"
              for name in MODELS}
    if a.src:
        us = measured_mlp_us(a.src)
        if us is not None:
            name = next(iter(MODELS))
            t1s[name] = us
            source[name] = f"measured: bench/mlp_gpu, mirrored at batch 64 ({a.src})"
    lines = ["<!-- scaling-model:begin -->", "Single-GPU step t1 (the input of the model):", "",
             "| model | t1 µs | from |", "| --- | --- | --- |"]
    lines += [f"| {name} | {t1s[name]:.1f} | {source[name]} |" for name in MODELS]
    lines += table(t1s, int(a.bucket_mb * 2**20))
    lines.append("<!-- scaling-model:end -->")
    text = "\n".join(lines) + "\n"
    if a.output:
        path = a.output
        doc = open(path).read()
        b, e = doc.index("<!-- scaling-model:begin -->"), doc.index("<!-- scaling-model:end -->")
        doc = doc[:b] + text.rstrip("\n") + doc[e + len("<!-- scaling-model:end -->"):]
        open(path, "w").write(doc)
    print(text, end="")


if __name__ == "__main__":
    main()
