"""A MODEL, NOT A MEASUREMENT: data-parallel (weak) scaling of the project's MNIST convnet
(bench/cnn_cpu) over 2, 4 and 8 nodes x 8 H100 GPUs, from a single-GPU step time and the
ring all-reduce time of its gradients at NCCL's published inter-node bus bandwidth.

Per-GPU step on n GPUs = t1 (the compute, the same on every GPU: the per-GPU batch stays 128)
+ the all-reduce time not hidden behind the backward pass. All-reduce of S bytes on n GPUs:
latency + 2 (n - 1) / n * S / busbw (nccl-tests' definition of the bus bandwidth).
Efficiency = t1 / t_n (samples per second per GPU against one GPU).

Every input is stated in INPUTS and in the section's text; bench/allreduce_multiworker/run.py
prints the tables into BENCHMARKS.md.
"""
import os
import re
import shutil
import subprocess

# The convnet of bench/cnn_cpu (common_cnn.py, mirrored.R): conv 3x3x1->32, maxpool 2,
# conv 3x3x32->64, maxpool 2, flatten (5x5x64), dropout, dense 1600->10.
LAYERS = {"conv1": 3 * 3 * 1 * 32 + 32, "conv2": 3 * 3 * 32 * 64 + 64, "dense": 5 * 5 * 64 * 10 + 10}
PARAMS = sum(LAYERS.values())

INPUTS = {
    # H100 SXM FP32 (non-tensor-core) peak, NVIDIA's H100 datasheet (as docs/scaling-model.md).
    "gpu_fp32_tflops": 67.0,
    # 8 x ConnectX-7 NDR 400 Gb/s per node: NVIDIA's NCCL team expects 46-48 GB/s of
    # all-reduce bus bandwidth per NDR NIC (nccl-tests#290), 368-384 GB/s for 8; NVIDIA's
    # GTC 2024 figure quoted in nccl#1649: ~380 GB/s multi-node without SHARP, 370-380 with
    # NVLS+Tree; 365.8 GB/s measured on 4 nodes x 8 H100 x 8 NDR NICs (nccl-tests#309).
    "internode_busbw_GBps": 370.0,
    # One node, 8 H100 SXM on NVLink 4 + NVSwitch (NVLink SHARP): 476 GB/s, "in the expected
    # range for H100" per NVIDIA's NCCL team (nccl-tests#290); for the hierarchical column.
    "intranode_busbw_GBps": 476.0,
    # Time of a small (4 B .. 1 KB) all-reduce on 2 nodes x 8 H20 GPUs with 16 NDR NICs,
    # NCCL 2.21.5 (nccl#1244): 46-48 us. Taken as the latency of one all-reduce on 2, 4 and
    # 8 nodes alike (optimistic at 8 nodes: tree latency grows with log2(nodes)).
    "latency_us": 46.0,
    "gpus_per_node": 8,
    # Share of t1 spent in the backward pass (dense and convolution layers: 2 flops per
    # weight and sample forward, 4 backward).
    "backward_share": 2.0 / 3.0,
}

SOURCES = [
    ("nccl-tests#290 (NVIDIA: 46-48 GB/s per NDR 400 Gb/s NIC; 476 GB/s on one 8 x H100 node)",
     "https://github.com/NVIDIA/nccl-tests/issues/290"),
    ("nccl#1649 (NVIDIA GTC 2024 figure: multi-node all-reduce busbw ~380 GB/s without SHARP)",
     "https://github.com/NVIDIA/nccl/issues/1649"),
    ("nccl-tests#309 (365.8 GB/s measured, 4 nodes x 8 H100, 8 NDR NICs each)",
     "https://github.com/NVIDIA/nccl-tests/issues/309"),
    ("nccl#1244 (46-48 us small all-reduce, 2 nodes x 8 H20, 16 NDR NICs)",
     "https://github.com/NVIDIA/nccl/issues/1244"),
    ("nccl-tests doc/PERFORMANCE.md (busbw = algbw x 2(n-1)/n for an all-reduce)",
     "https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md"),
]


def r_param_count(repo):
    """count_params() of the convnet built with the installed package (None when R or the
    package in <repo>/.lib is not there)."""
    lib = os.path.join(repo, ".lib")
    if not shutil.which("Rscript") or not os.path.isdir(os.path.join(lib, "mirrored")):
        return None
    code = (
        "suppressPackageStartupMessages(library(mirrored, lib.loc = '%s'));"
        "m <- keras_model_sequential(input_shape = c(28, 28, 1)) |>"
        " layer_conv_2d(filters = 32, kernel_size = c(3, 3), activation = 'relu') |>"
        " layer_max_pooling_2d(pool_size = c(2, 2)) |>"
        " layer_conv_2d(filters = 64, kernel_size = c(3, 3), activation = 'relu') |>"
        " layer_max_pooling_2d(pool_size = c(2, 2)) |> layer_flatten() |>"
        " layer_dropout(rate = 0.5) |> layer_dense(units = 10, activation = 'softmax');"
        "cat(count_params(m))" % lib)
    out = subprocess.run(["Rscript", "-e", code], capture_output=True, text=True)
    try:
        return int(out.stdout.strip().split()[-1])
    except (ValueError, IndexError):
        return None


def cpu_step(benchmarks_md):
    """mirrored's measured cnn_cpu step (ms, epoch 2 median) and the 2-thread FMA ceiling
    (GFLOP/s) that the cnn_cpu section of BENCHMARKS.md states, with its date line."""
    text = open(benchmarks_md).read()
    b, e = text.find("<!-- cnn_cpu:begin -->"), text.find("<!-- cnn_cpu:end -->")
    if b < 0 or e < 0:
        raise SystemExit(f"{benchmarks_md} has no cnn_cpu section: run bench/cnn_cpu/run.py first")
    sec = text[b:e]
    ms = re.search(r"^\| mirrored \| [^|]+\| [^|]+\| \d+ \| \w+ \| ([0-9.]+) \(", sec, re.M)
    ceiling = re.search(r"([0-9.]+) on 2\)", sec)
    date = re.search(r"^- date: ([^;]+);", sec, re.M)
    if not ms or not ceiling:
        raise SystemExit("could not read mirrored's ms/step or the FMA ceiling in the cnn_cpu section")
    return float(ms.group(1)), float(ceiling.group(1)), date.group(1) if date else "?"


def flop_model_us(repo):
    """The convnet's t1 in tools/scaling-model.py's flop model (None when it is missing)."""
    import importlib.util
    path = os.path.join(repo, "tools", "scaling-model.py")
    if not os.path.exists(path):
        return None
    spec = importlib.util.spec_from_file_location("scaling_model", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    convnet = next((m for name, m in mod.MODELS.items() if "convnet" in name), None)
    return mod.single_gpu_us(convnet) if convnet else None


def allreduce_us(nbytes, n, latency_us, busbw):
    return latency_us + 2 * (n - 1) / n * nbytes / (busbw * 1e9) * 1e6


def hierarchical_us(nbytes, nodes, p):
    """Bandwidth term of a two-level all-reduce: reduce-scatter + all-gather inside each node
    over NVLink, and between them each GPU's 1/g share in a ring across the nodes over its
    own NIC (busbw / g per GPU): 2(g-1)/g S / B_nvlink + 2(m-1)/m S / B_ib."""
    g, m = p["gpus_per_node"], nodes
    return (2 * (g - 1) / g * nbytes / (p["intranode_busbw_GBps"] * 1e9)
            + 2 * (m - 1) / m * nbytes / (p["internode_busbw_GBps"] * 1e9)) * 1e6


def section(repo, benchmarks_md):
    """The lines of the model's part of the section."""
    p = INPUTS
    cpu_ms, cpu_gflops, cpu_date = cpu_step(benchmarks_md)
    scale = p["gpu_fp32_tflops"] * 1e3 / cpu_gflops
    t1 = cpu_ms * 1e3 / scale
    nbytes = 4 * PARAMS
    from_r = r_param_count(repo)
    if from_r is not None and from_r != PARAMS:
        raise SystemExit(f"count_params() says {from_r}, the architecture {PARAMS}: fix LAYERS")
    count_src = ("count_params() of the model built with the installed package agrees"
                 if from_r is not None else "from the architecture (R check not run: no installed package)")
    back = p["backward_share"] * t1
    flop_t1 = flop_model_us(repo)
    lines = [
        "",
        "### Modelled scaling of the convnet over nodes — MODEL, NOT MEASURED",
        "",
        "**Model, not measured**: no GPU and no second machine were used. Inputs:",
        "",
        f"- the model: bench/cnn_cpu's MNIST convnet, {PARAMS:,} parameters ({count_src}), so "
        f"S = {nbytes:,} bytes of float32 gradients per step; per-GPU batch 128 on every GPU "
        "(weak scaling: the global batch grows with the GPUs);",
        f"- t1, the single-GPU step: **assumed** {t1:.1f} µs = mirrored's CPU step measured in "
        f"the cnn_cpu section ({cpu_ms:.3f} ms, {cpu_date}) x (2-core FMA ceiling {cpu_gflops:.1f} "
        f"GFLOP/s / H100 SXM FP32 peak {p['gpu_fp32_tflops']:.0f} TFLOP/s), i.e. the assumption "
        "that the GPU reaches the same share of its FP32 peak as 2 CPU cores do of theirs "
        "(docs/gpu-runs.md has no measured GPU step yet"
        + (f"; tools/scaling-model.py's flop model gives {flop_t1:.1f} µs);" if flop_t1 else ");"),
        f"- all-reduce of S bytes on n GPUs: latency + 2(n-1)/n x S / busbw, with busbw = "
        f"{p['internode_busbw_GBps']:.0f} GB/s (8 x 400 Gb/s NDR InfiniBand per node; a ring "
        "over several nodes is limited by the NICs, not by NVLink) and latency = "
        f"{p['latency_us']:.0f} µs, or 0 in the bandwidth-only columns (the bare formula); the "
        "two-level column is the bandwidth term of a hierarchical all-reduce instead (NVLink "
        f"inside the node at {p['intranode_busbw_GBps']:.0f} GB/s, then each GPU's 1/8 across the "
        "nodes over its own NIC), for comparison only;",
        f"- overlap: none (the all-reduce starts after backward) or full (it runs during the "
        f"backward pass, {p['backward_share']:.0%} of t1 = {back:.1f} µs, and only what exceeds "
        "it adds to the step). For this model full overlap is out of reach: its gradients "
        "make one bucket, ready only when backward ends; \"none\" is the realistic column;",
        "- efficiency = t1 / t_n (per-GPU throughput against one GPU; speed-up = GPUs x efficiency).",
        "",
        "Published figures used:",
        "",
        *[f"- [{name}]({url})" for name, url in SOURCES],
        "",
        "| nodes x GPUs | GPUs | all-reduce µs, bandwidth only | (two-level: NVLink, then IB) "
        "| all-reduce µs, with latency "
        "| efficiency: bandwidth only, no overlap | bandwidth only, full overlap "
        "| with latency, no overlap | with latency, full overlap | speed-up with latency, no overlap |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for nodes in (2, 4, 8):
        n = nodes * p["gpus_per_node"]
        bw = allreduce_us(nbytes, n, 0.0, p["internode_busbw_GBps"])
        lat = allreduce_us(nbytes, n, p["latency_us"], p["internode_busbw_GBps"])
        eff = [t1 / (t1 + bw), t1 / (t1 + max(0.0, bw - back)),
               t1 / (t1 + lat), t1 / (t1 + max(0.0, lat - back))]
        lines.append(f"| {nodes} x {p['gpus_per_node']} | {n} | {bw:.2f} | "
                     f"{hierarchical_us(nbytes, nodes, p):.2f} | {lat:.1f} | "
                     + " | ".join(f"{100 * e:.1f}%" for e in eff) + f" | {n * eff[2]:.1f}x |")
    worst = t1 / (t1 + allreduce_us(nbytes, 8 * p["gpus_per_node"], p["latency_us"],
                                    p["internode_busbw_GBps"]))
    lines += [
        "",
        f"Reading (model): the convnet's {nbytes / 1e3:.0f} KB of gradients cross the network in "
        f"about {allreduce_us(nbytes, 64, 0.0, p['internode_busbw_GBps']):.1f} µs at "
        f"{p['internode_busbw_GBps']:.0f} GB/s; the all-reduce's fixed latency "
        f"({p['latency_us']:.0f} µs against a {t1:.0f} µs step) is what costs: without overlap "
        f"each GPU keeps {100 * worst:.0f}% of its single-GPU throughput at 8 nodes. That this "
        "does not fall further with the node count comes from holding the latency constant; a "
        "larger per-GPU batch (a longer t1) or a larger model would dilute it.",
    ]
    return lines
