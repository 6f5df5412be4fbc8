#!/usr/bin/env python3
"""PyTorch peer of bench_mlp_gpu: the vignette's model (784-256-256-10, Adam,
cross-entropy from logits) on cuda:0 at batch 64, 512 and 4096, µs per
training step, eager and with the whole step captured in a CUDA graph (the
PyTorch docs' whole-network capture, Adam with capturable=True). FP32 matmuls
(TF32 off) unless --tf32. Prints one JSON object per line.

    python3 bench/mlp_gpu/torch_peer.py [--steps 500] [--warm 50] [--tf32]
"""
import argparse
import json
import time

import torch


def model():
    return torch.nn.Sequential(
        torch.nn.Linear(784, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 256), torch.nn.ReLU(),
        torch.nn.Linear(256, 10)).cuda()


def eager(batch, steps, warm):
    m = model()
    opt = torch.optim.Adam(m.parameters(), lr=1e-3, eps=1e-7)
    x = torch.rand(batch, 784, device="cuda")
    y = (torch.arange(batch, device="cuda") % 10)
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(m(x), y)
        loss.backward()
        opt.step()
        return loss

    for _ in range(warm):
        step()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / steps * 1e6


def graphed(batch, steps, warm):
    m = model()
    opt = torch.optim.Adam(m.parameters(), lr=1e-3, eps=1e-7, capturable=True)
    x = torch.rand(batch, 784, device="cuda")
    y = (torch.arange(batch, device="cuda") % 10)
    loss_fn = torch.nn.CrossEntropyLoss()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm-up on a side stream, as the docs require
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            loss_fn(m(x), y).backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(g):
        loss = loss_fn(m(x), y)
        loss.backward()
        opt.step()
    for _ in range(warm):
        g.replay()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        g.replay()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) / steps * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--warm", type=int, default=50)
    ap.add_argument("--tf32", action="store_true")
    a = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    for batch in (64, 512, 4096):
        for name, fn in (("torch_eager", eager), ("torch_cuda_graph", graphed)):
            us = fn(batch, a.steps, a.warm)
            print(json.dumps({"contender": name, "batch": batch, "us_per_step": round(us, 3),
                              "torch": torch.__version__, "tf32": a.tf32}), flush=True)


if __name__ == "__main__":
    main()
