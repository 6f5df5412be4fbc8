"""PyTorch peer of bench/cnn_cpu: the MNIST convnet on the CPU, 2 threads, flush-to-zero,
fused Adam, in channels_last (NHWC, oneDNN's preferred layout) or NCHW memory format.

Prints one JSON line (mlp_cpu/common.emit). Run:
    python3 bench/cnn_cpu/peer_torch.py [--format channels_last|nchw] [--seed N]
"""

import argparse
import os
import sys
import time

import common_cnn as cc
from common_cnn import common

common.thread_env()  # before torch loads its OpenMP runtime

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "mlp_cpu"))
from peer_torch import blas_info, ftz_effective  # noqa: E402  (bench/mlp_cpu's probes)


def keras_init(m):
    """Keras' defaults: glorot_uniform kernels, zero biases."""
    if isinstance(m, (nn.Conv2d, nn.Linear)):
        nn.init.xavier_uniform_(m.weight)
        nn.init.zeros_(m.bias)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--epochs", type=int, default=cc.EPOCHS)
    p.add_argument("--format", choices=["channels_last", "nchw"], default="channels_last")
    p.add_argument("--device", default="cpu", help="cpu, or cuda for bench/cnn_gpu (FP32: TF32 off)")
    args = p.parse_args()
    dev = torch.device(args.device)
    if dev.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = True
    ftz_set = torch.set_flush_denormal(True)
    torch.set_num_threads(common.THREADS)
    torch.set_num_interop_threads(1)
    torch.manual_seed(args.seed)
    fmt = torch.channels_last if args.format == "channels_last" else torch.contiguous_format

    x_np, y_np = cc.load()
    x = torch.from_numpy(x_np).permute(0, 3, 1, 2).contiguous(memory_format=fmt).to(dev)  # N, C, H, W
    y = torch.from_numpy(y_np).to(dev)
    n = x.shape[0]
    n_steps = (n + cc.BATCH - 1) // cc.BATCH

    model = nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Dropout(0.5), nn.Linear(1600, cc.CLASSES),
    )
    model.apply(keras_init)
    model = model.to(dev, memory_format=fmt)
    opt = torch.optim.Adam(model.parameters(), lr=cc.LEARNING_RATE, eps=cc.EPSILON, fused=True)
    gen = torch.Generator().manual_seed(args.seed)
    ftz = ftz_set and ftz_effective()

    epoch_s = []
    loss_mean = acc = float("nan")
    model.train()
    for _ in range(args.epochs):
        t0 = time.perf_counter()
        order = torch.randperm(n, generator=gen).to(dev)
        loss_sum = torch.zeros((), dtype=torch.float64, device=dev)
        correct = torch.zeros((), dtype=torch.int64, device=dev)
        for i in range(0, n, cc.BATCH):
            idx = order[i : i + cc.BATCH]
            xb = x.index_select(0, idx).contiguous(memory_format=fmt)
            yb = y.index_select(0, idx)
            logits = model(xb)
            loss = F.cross_entropy(logits, yb)  # softmax + categorical cross-entropy
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            with torch.no_grad():
                loss_sum += loss.detach() * idx.shape[0]
                correct += (logits.argmax(1) == yb).sum()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        epoch_s.append(time.perf_counter() - t0)
        loss_mean = loss_sum.item() / n
        acc = correct.item() / n

    common.emit(
        peer=f"torch-{args.format}",
        version=torch.__version__,
        blas=blas_info() if dev.type == "cpu" else f"cuDNN {torch.backends.cudnn.version()}, "
        f"{torch.cuda.get_device_name(0)}",
        ftz=ftz,
        epoch_s=epoch_s,
        n_steps=n_steps,
        final_loss=loss_mean,
        final_acc=acc,
        memory_format=args.format,
        device=args.device,
        adam="fused",
    )


if __name__ == "__main__":
    main()
