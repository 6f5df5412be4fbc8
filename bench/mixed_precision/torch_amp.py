"""PyTorch peer of bench/mixed_precision: the vignette's MLP (bench/mlp_cpu) or the MNIST
convnet (bench/cnn_cpu, channels_last) in float32 or under torch.autocast (bfloat16; float16
with a GradScaler on a GPU), fused Adam, 2 threads, flush-to-zero; then the accuracy on the
10,000 test digits. Prints one JSON line (mlp_cpu/common.emit). Run:
    python3 bench/mixed_precision/torch_amp.py --model mlp|cnn --amp none|bf16|f16 [--device cpu|cuda]
"""

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
BENCH = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(BENCH, "mlp_cpu"))
import common  # noqa: E402

common.thread_env()  # before torch loads its OpenMP runtime

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from peer_torch import blas_info, ftz_effective  # noqa: E402  (bench/mlp_cpu's probes)

AMP = {"none": None, "bf16": torch.bfloat16, "f16": torch.float16}


def keras_init(m):
    """Keras' defaults: glorot_uniform kernels, zero biases."""
    if isinstance(m, (nn.Conv2d, nn.Linear)):
        nn.init.xavier_uniform_(m.weight)
        nn.init.zeros_(m.bias)


def build(kind):
    """(model, batch, input transform) of the MLP (unscaled inputs) or the convnet (0..1)."""
    if kind == "mlp":
        model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(),
                              nn.Linear(256, 10))
        return model, 64, lambda x: x
    model = nn.Sequential(
        nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Dropout(0.5), nn.Linear(1600, 10),
    )
    return model, 128, lambda x: (x / 255.0).reshape(-1, 1, 28, 28)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    p.add_argument("--amp", choices=list(AMP), default="none")
    p.add_argument("--device", default="cpu", help="cpu, or cuda (TF32 off)")
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

    model, batch, prep = build(args.model)
    model.apply(keras_init)
    fmt = torch.channels_last if args.model == "cnn" else torch.contiguous_format
    model = model.to(dev, memory_format=fmt)
    x_np, y_np = common.load_mnist("sample10k")
    xt_np, yt_np = common.load_mnist("t10k")
    x = prep(torch.from_numpy(x_np)).contiguous(memory_format=fmt).to(dev)
    y = torch.from_numpy(y_np).to(dev)
    x_test = prep(torch.from_numpy(xt_np)).contiguous(memory_format=fmt).to(dev)
    y_test = torch.from_numpy(yt_np).to(dev)
    n = x.shape[0]
    n_steps = (n + batch - 1) // batch
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, eps=1e-7, fused=True)
    amp = AMP[args.amp]
    # float16 needs loss scaling (bfloat16 has float32's range); the GradScaler is PyTorch's.
    scaler = torch.amp.GradScaler(dev.type, enabled=amp is torch.float16)
    gen = torch.Generator().manual_seed(args.seed)
    ftz = ftz_set and ftz_effective()

    def forward(xb):
        if amp is None:
            return model(xb)
        with torch.autocast(dev.type, dtype=amp):
            return model(xb)

    epoch_s = []
    loss_mean = acc = float("nan")
    model.train()
    for _ in range(args.epochs):
        t0 = time.perf_counter()
        order = torch.randperm(n, generator=gen).to(dev)
        loss_sum = torch.zeros((), dtype=torch.float64, device=dev)
        correct = torch.zeros((), dtype=torch.int64, device=dev)
        for i in range(0, n, batch):
            idx = order[i : i + batch]
            xb = x.index_select(0, idx).contiguous(memory_format=fmt)
            yb = y.index_select(0, idx)
            logits = forward(xb).float()
            loss = F.cross_entropy(logits, yb)
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            with torch.no_grad():
                loss_sum += loss.detach() * idx.shape[0]
                correct += (logits.argmax(1) == yb).sum()
        if dev.type == "cuda":
            torch.cuda.synchronize()
        epoch_s.append(time.perf_counter() - t0)
        loss_mean = loss_sum.item() / n
        acc = correct.item() / n
    model.eval()
    with torch.no_grad():
        hits = sum((forward(x_test[i : i + 256]).float().argmax(1) == y_test[i : i + 256]).sum().item()
                   for i in range(0, x_test.shape[0], 256))
    common.emit(
        peer=f"torch-{args.amp}",
        version=torch.__version__,
        blas=blas_info() if dev.type == "cpu" else f"cuDNN {torch.backends.cudnn.version()}, "
        f"{torch.cuda.get_device_name(0)}",
        ftz=ftz,
        epoch_s=epoch_s,
        n_steps=n_steps,
        final_loss=loss_mean,
        final_acc=acc,
        test_acc=hits / x_test.shape[0],
        model=args.model,
        amp=args.amp,
        device=args.device,
        adam="fused",
    )


if __name__ == "__main__":
    main()
