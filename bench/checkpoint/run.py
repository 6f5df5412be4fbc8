#!/usr/bin/env python3
"""bench/checkpoint: save and load throughput (MB/s of .keras file) of
mirrored's save_model()/load_model() against Keras 3's model.save() /
keras.saving.load_model() on the same ~100 MB model (784-4096-4096-1024-10
Dense stack, 24.2 M float32 parameters, compiled with SGD so the file holds
the weights), in the same run and on the same disk. Each side saves and
loads `--n` times; the medians are reported. mirrored's save includes an
fsync of the file and of its directory (Keras' does not).

    python3 bench/checkpoint/run.py [--n 3] [--dir /tmp] [--no-write]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from report import REPO, provenance, publish  # noqa: E402

UNITS = [4096, 4096, 1024, 10]

R_SCRIPT = r"""
args <- commandArgs(TRUE); dir <- args[1]; n <- as.integer(args[2])
lib <- file.path(args[3], ".lib")
if (dir.exists(lib)) .libPaths(c(lib, .libPaths()))
suppressMessages(library(mirrored))
set_random_seed(1)
inp <- keras_input(shape = 784)
h <- inp
for (u in c(%s)) h <- layer_dense(h, units = u, activation = if (u == 10) NULL else "relu")
m <- keras_model(inp, h)
m |> compile(optimizer = optimizer_sgd(0.01), loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
invisible(get_weights(m))
path <- file.path(dir, "mirrored.keras")
save_t <- load_t <- numeric()
for (i in seq_len(n)) {
  t0 <- Sys.time(); save_model(m, path, overwrite = TRUE); save_t[i] <- as.numeric(Sys.time() - t0, units = "secs")
  t0 <- Sys.time(); m2 <- load_model(path); load_t[i] <- as.numeric(Sys.time() - t0, units = "secs")
  rm(m2); invisible(gc())
}
cat(sprintf('{"save": [%%s], "load": [%%s], "bytes": %%.0f}\n', paste(save_t, collapse = ","),
            paste(load_t, collapse = ","), file.size(path)))
""" % ", ".join(str(u) for u in UNITS)


def run_mirrored(d, n):
    with tempfile.NamedTemporaryFile("w", suffix=".R", delete=False) as f:
        f.write(R_SCRIPT)
    out = subprocess.run(["Rscript", f.name, d, str(n), REPO], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def run_keras(d, n):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    import keras
    keras.utils.set_random_seed(1)
    inp = keras.Input(shape=(784,))
    h = inp
    for u in UNITS:
        h = keras.layers.Dense(u, activation=None if u == 10 else "relu")(h)
    m = keras.Model(inp, h)
    m.compile(optimizer=keras.optimizers.SGD(0.01),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    path = os.path.join(d, "keras.keras")
    save_t, load_t = [], []
    for _ in range(n):
        t0 = time.perf_counter()
        m.save(path)
        save_t.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        m2 = keras.saving.load_model(path)
        load_t.append(time.perf_counter() - t0)
        del m2
    return {"save": save_t, "load": load_t, "bytes": os.path.getsize(path), "version": keras.__version__}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=3)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--output", default=os.path.join(REPO, "BENCHMARKS.md"))
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    d = a.dir or tempfile.mkdtemp(prefix="mirrored-bench-ckpt-")
    mr = run_mirrored(d, a.n)
    kr = run_keras(d, a.n)
    rows = []
    for name, r in [("mirrored", mr), (f"Keras {kr['version']} (TF backend)", kr)]:
        mb = r["bytes"] / 1e6
        s, l = statistics.median(r["save"]), statistics.median(r["load"])
        rows.append(f"| {name} | {mb:.1f} | {s:.3f} | {mb / s:.0f} | {l:.3f} | {mb / l:.0f} |")
    lines = [
        "## checkpoint: .keras save / load throughput",
        "",
        f"A 784-4096-4096-1024-10 Dense model (24.2 M float32 parameters, SGD), saved to and loaded from "
        f"`{d}`; medians of {a.n} runs; MB = 10^6 bytes of the .keras file.",
        "",
        *provenance("python3 bench/checkpoint/run.py"),
        "",
        "| writer | file MB | save s | save MB/s | load s | load MB/s |",
        "|---|---:|---:|---:|---:|---:|",
        *rows,
        "",
        "mirrored's save fsyncs the file and its directory (atomic write); Keras' does not. "
        "Load times include rebuilding the model from config.json.",
    ]
    publish("checkpoint", lines, a.output, write=not a.no_write)


if __name__ == "__main__":
    main()
