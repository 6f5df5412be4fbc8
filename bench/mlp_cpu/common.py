"""Shared pieces of the mlp_cpu peers: IDX loading, the run settings, the result line.

Every peer trains the same model on the same data with the same settings, so these live in
one place. The settings mirror the vignette (784-256-256-10, relu, Adam, sparse CE from
logits, batch 64, unscaled 0..255 inputs, 2 epochs); only the data differ (sample10k, the
package's 10,000-digit sample, instead of 50,000 MNIST digits).
"""

import argparse
import gzip
import json
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
MNIST_DIR = os.path.join(REPO, "inst", "extdata", "mnist")

BATCH = 64
EPOCHS = 2
# MR_BENCH_THREADS overrides it (bench/contention runs the peers on 1 and 2).
THREADS = int(os.environ.get("MR_BENCH_THREADS", "2"))
LEARNING_RATE = 1e-3
EPSILON = 1e-7  # Keras' Adam default; torch's default (1e-8) is overridden to match.
HIDDEN = 256
CLASSES = 10


def read_idx(path):
    """Read a gzip'd IDX file (magic 0x0000 0x08 ndim, big-endian dims, uint8 data)."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    zero, dtype, ndim = struct.unpack(">HBB", raw[:4])
    if zero != 0 or dtype != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file (header {zero:#x} {dtype:#x})")
    dims = struct.unpack(">" + "I" * ndim, raw[4 : 4 + 4 * ndim])
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        raise ValueError(f"{path}: {data.size} bytes of data for dims {dims}")
    return data.reshape(dims)


def load_mnist(prefix="sample10k"):
    """Images as float32 (n, 784) with values 0..255 (unscaled, as the vignette), labels int64."""
    x = read_idx(os.path.join(MNIST_DIR, f"{prefix}-images-idx3-ubyte.gz"))
    y = read_idx(os.path.join(MNIST_DIR, f"{prefix}-labels-idx1-ubyte.gz"))
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"{x.shape[0]} images but {y.shape[0]} labels")
    return x.reshape(x.shape[0], -1).astype(np.float32), y.astype(np.int64)


def steps_per_epoch(n, batch=BATCH):
    return (n + batch - 1) // batch


def parse_args(description, extra=None):
    """The peers' common options; extra(parser) adds a peer's own."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--seed", type=int, default=1, help="seed for init and shuffling")
    p.add_argument("--epochs", type=int, default=EPOCHS)
    p.add_argument("--data", default="sample10k", help="IDX file prefix in inst/extdata/mnist")
    p.add_argument(
        "--no-shuffle", action="store_true", help="keep the data order (the vignette's tf.data pipeline does not shuffle)"
    )
    if extra is not None:
        extra(p)
    return p.parse_args()


def thread_env():
    """Pin every threading knob a peer's libraries read to THREADS before they are imported."""
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "TF_NUM_INTRAOP_THREADS"):
        os.environ[var] = str(THREADS)
    os.environ["TF_NUM_INTEROP_THREADS"] = "1"


def emit(peer, version, blas, ftz, epoch_s, n_steps, final_loss, final_acc, **extra):
    """Print the one result line the harness reads (the last line of stdout starting with '{')."""
    rec = {
        "peer": peer,
        "version": version,
        "blas": blas,
        "threads": THREADS,
        "ftz": bool(ftz),
        "steps_per_epoch": n_steps,
        "epoch_s": [round(t, 6) for t in epoch_s],
        "ms_per_step_epoch1": round(1000.0 * epoch_s[0] / n_steps, 4),
        "ms_per_step_epoch2": round(1000.0 * epoch_s[1] / n_steps, 4) if len(epoch_s) > 1 else None,
        "final_loss": float(final_loss),
        "final_acc": float(final_acc),
    }
    rec.update(extra)
    sys.stdout.write(json.dumps(rec) + "\n")
    sys.stdout.flush()
