"""PyTorch peer of bench/mlp_cpu: the vignette's MLP trained on the CPU with 2 threads and FTZ.

Prints one JSON line (see common.emit). Run: python3 bench/mlp_cpu/peer_torch.py [--seed N]
"""

import re
import time

import common

common.thread_env()  # before torch loads its OpenMP runtime

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402


def blas_info():
    """BLAS / LAPACK / MKL / oneDNN lines of torch's build config, joined into one string."""
    cfg = torch.__config__.show()
    parts = []
    for key in ("BLAS_INFO", "LAPACK_INFO"):
        m = re.search(key + r"=([^,\n]+)", cfg)
        if m:
            parts.append(f"{key}={m.group(1).strip()}")
    m = re.search(r"Intel\(R\) (?:oneAPI )?Math Kernel Library Version ([^\n]+)", cfg)
    if m:
        parts.append("MKL " + m.group(1).strip())
    m = re.search(r"Intel\(R\) MKL-DNN (v[^\s]+)|oneDNN (v[^\s]+)", cfg)
    if m:
        parts.append("oneDNN " + (m.group(1) or m.group(2)))
    m = re.search(r"OpenBLAS[^\n]*", cfg)
    if m and not any("openblas" in p.lower() for p in parts):
        parts.append(m.group(0).strip())
    m = re.search(r"CPU capability usage: (\S+)", cfg)
    if m:
        parts.append("CPU capability " + m.group(1))
    parts.append(f"mkl.is_available={torch.backends.mkl.is_available()}")
    parts.append(f"mkldnn.is_available={torch.backends.mkldnn.is_available()}")
    return "; ".join(parts)


def ftz_effective():
    """Whether subnormals are flushed on the threads that compute: a large elementwise op
    (split across the intra-op pool) on subnormal inputs, made by numpy, must give zeros."""
    tiny = torch.from_numpy(np.full(1 << 20, 1e-39, dtype=np.float32))  # subnormal in fp32
    # Compare bit patterns: with DAZ on, a float comparison would read subnormals as zero too.
    return bool(torch.all((tiny * 1.5).view(torch.int32) == 0).item())


def glorot_dense(n_in, n_out):
    """Dense layer with Keras' default init: glorot_uniform kernel, zero bias."""
    layer = nn.Linear(n_in, n_out)
    nn.init.xavier_uniform_(layer.weight)  # U(-sqrt(6/(in+out)), +...), same as glorot_uniform
    nn.init.zeros_(layer.bias)
    return layer


def main():
    args = common.parse_args(
        "PyTorch peer of bench/mlp_cpu",
        lambda p: p.add_argument(
            "--adam",
            choices=["default", "foreach", "fused"],
            default="default",
            help="torch.optim.Adam implementation (default: torch's choice, the per-tensor loop on CPU)",
        ),
    )
    # Flush-to-zero first: worker threads created later inherit the calling thread's MXCSR.
    ftz_set = torch.set_flush_denormal(True)
    torch.set_num_threads(common.THREADS)
    torch.set_num_interop_threads(1)
    torch.manual_seed(args.seed)

    x_np, y_np = common.load_mnist(args.data)
    x = torch.from_numpy(x_np)
    y = torch.from_numpy(y_np)
    n = x.shape[0]
    n_steps = common.steps_per_epoch(n)

    model = nn.Sequential(
        glorot_dense(784, common.HIDDEN),
        nn.ReLU(),
        glorot_dense(common.HIDDEN, common.HIDDEN),
        nn.ReLU(),
        glorot_dense(common.HIDDEN, common.CLASSES),
    )
    impl = {"default": {}, "foreach": {"foreach": True}, "fused": {"fused": True}}[args.adam]
    opt = torch.optim.Adam(model.parameters(), lr=common.LEARNING_RATE, eps=common.EPSILON, **impl)
    gen = torch.Generator().manual_seed(args.seed)
    ftz = ftz_set and ftz_effective()

    epoch_s = []
    loss_mean = acc = float("nan")
    for _ in range(args.epochs):
        t0 = time.perf_counter()
        order = torch.arange(n) if args.no_shuffle else torch.randperm(n, generator=gen)
        # Running loss (batch-size weighted) and accuracy over the epoch, as Keras reports them.
        loss_sum = torch.zeros((), dtype=torch.float64)
        correct = torch.zeros((), dtype=torch.int64)
        for i in range(0, n, common.BATCH):
            idx = order[i : i + common.BATCH]
            xb = x.index_select(0, idx)
            yb = y.index_select(0, idx)
            logits = model(xb)
            loss = F.cross_entropy(logits, yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            with torch.no_grad():
                loss_sum += loss.detach() * idx.shape[0]
                correct += (logits.argmax(1) == yb).sum()
        epoch_s.append(time.perf_counter() - t0)
        loss_mean = loss_sum.item() / n
        acc = correct.item() / n

    common.emit(
        peer="torch" if args.adam == "default" else f"torch-{args.adam}",
        version=torch.__version__,
        blas=blas_info(),
        ftz=ftz,
        epoch_s=epoch_s,
        n_steps=n_steps,
        final_loss=loss_mean,
        final_acc=acc,
        intra_threads=torch.get_num_threads(),
        interop_threads=torch.get_num_interop_threads(),
        adam=args.adam,
    )


if __name__ == "__main__":
    main()
