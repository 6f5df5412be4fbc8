#!/usr/bin/env python3
"""Interoperability check of mirrored's .keras files against independent
readers: Python's zipfile, h5py and Keras 3 itself.

Runs Rscript (mirrored must be installed, e.g. `make install` puts it in
./.lib) to train and save a Functional and a Sequential model, then checks:
  * zipfile: the members, stored uncompressed, valid JSON;
  * h5py: Keras' weights layout (layers/<class>[_k]/vars/<i>, `name`
    attributes, optimizer/vars: int64 iteration, float32 learning rate, slots);
  * keras.saving.load_model(): loads the file, predicts the same outputs as
    mirrored (max abs difference <= 1e-5), and restores the optimizer's
    iteration count; keras loads the .weights.h5 file too.
Exit status 0 when every check passes.

    python3 tools/check-keras-interop.py
"""
import json
import os
import subprocess
import sys
import tempfile
import zipfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")

R_SCRIPT = r"""
args <- commandArgs(TRUE); out <- args[1]
lib <- file.path(args[2], ".lib")
if (dir.exists(lib)) .libPaths(c(lib, .libPaths()))
library(mirrored)
set.seed(1)
x <- matrix(runif(64 * 6), ncol = 6)
y <- as.integer(x[, 1] > x[, 2]) + as.integer(x[, 3] > 0.5)
inp <- keras_input(shape = 6)
h <- inp |> layer_dense(16, activation = "relu") |> layer_dropout(0.3) |> layer_activation("tanh")
h <- h |> layer_dense(8, use_bias = FALSE)
h <- layer_add(list(h |> layer_batch_normalization(momentum = 0.9), h))
f <- keras_model(inp, h |> layer_dense(3))
f |> compile(optimizer = optimizer_adam(0.01, amsgrad = TRUE),
             loss = loss_sparse_categorical_crossentropy(from_logits = TRUE),
             metrics = list("accuracy", metric_sparse_categorical_accuracy()))
fit(f, x, y, epochs = 2, batch_size = 16, verbose = 0)
save_model(f, file.path(out, "functional.keras"))
save_model_weights(f, file.path(out, "functional.weights.h5"))
s <- keras_model_sequential(input_shape = c(2, 3)) |> layer_flatten() |>
  layer_dense(5, activation = "sigmoid") |> layer_dense(3, activation = "softmax")
s |> compile(optimizer = optimizer_rmsprop(0.01, momentum = 0.5, centered = TRUE),
             loss = "categorical_crossentropy", metrics = "accuracy")
xs <- array_reshape(x, c(64, 2, 3))
fit(s, xs, diag(3)[y + 1, ], epochs = 2, batch_size = 16, verbose = 0)
save_model(s, file.path(out, "sequential.keras"))
write.table(x, file.path(out, "x.csv"), sep = ",", row.names = FALSE, col.names = FALSE)
write.table(predict(f, x, verbose = 0), file.path(out, "functional_pred.csv"), sep = ",",
            row.names = FALSE, col.names = FALSE)
write.table(predict(s, xs, verbose = 0), file.path(out, "sequential_pred.csv"), sep = ",",
            row.names = FALSE, col.names = FALSE)
writeLines(as.character(c(f$optimizer$iterations, s$optimizer$iterations)), file.path(out, "iterations.txt"))
"""

failures = []


def check(cond, what):
    print(("PASS " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def main():
    import h5py
    import numpy as np
    import keras

    tmp = tempfile.mkdtemp(prefix="mirrored-interop-")
    rfile = os.path.join(tmp, "make.R")
    with open(rfile, "w") as f:
        f.write(R_SCRIPT)
    subprocess.run(["Rscript", rfile, tmp, ROOT], check=True)
    iters = [int(float(v)) for v in open(os.path.join(tmp, "iterations.txt")).read().split()]
    x = np.loadtxt(os.path.join(tmp, "x.csv"), delimiter=",", dtype="float32")
    print(f"keras {keras.__version__}, h5py {h5py.__version__}")

    for name, xin, n_iter in [("functional", x, iters[0]), ("sequential", x.reshape(-1, 2, 3), iters[1])]:
        path = os.path.join(tmp, name + ".keras")
        z = zipfile.ZipFile(path)
        names = [i.filename for i in z.infolist()]
        check(names[:3] == ["metadata.json", "config.json", "model.weights.h5"],
              f"{name}: zip members {names}")
        check(all(i.compress_type == zipfile.ZIP_STORED for i in z.infolist()), f"{name}: members stored")
        check(z.testzip() is None, f"{name}: CRCs valid")
        meta = json.loads(z.read("metadata.json"))
        cfg = json.loads(z.read("config.json"))
        check(meta["keras_version"].startswith("3."), f"{name}: metadata.json {meta}")
        check(cfg["class_name"] == ("Functional" if name == "functional" else "Sequential"),
              f"{name}: config.json class_name {cfg['class_name']}")
        with z.open("model.weights.h5") as fh, h5py.File(fh, "r") as h:
            groups = sorted(h["layers"].keys())
            print(f"  {name}: layers/ = {groups}")
            dense = sorted(g for g in groups if g.startswith("dense"))
            check(dense == ["dense", "dense_1", "dense_2"][:len(dense)] and len(dense) >= 2,
                  f"{name}: Dense groups named by class with counters")
            check(h["layers/dense/vars"].attrs["name"] is not None, f"{name}: vars groups carry `name`")
            check(h["layers/dense/vars/0"].dtype == np.float32 and h["layers/dense/vars/0"].ndim == 2,
                  f"{name}: layers/dense/vars/0 float32 kernel {h['layers/dense/vars/0'].shape}")
            ov = h["optimizer/vars"]
            check(ov["0"].dtype == np.int64 and ov["0"].shape == () and int(ov["0"][()]) == n_iter,
                  f"{name}: optimizer/vars/0 int64 iteration = {int(ov['0'][()])}")
            check(ov["1"].dtype == np.float32 and ov["1"].shape == (), f"{name}: optimizer/vars/1 float32 lr")
            if name == "functional":
                check("input_layer" in groups and len(h["layers/input_layer/vars"]) == 0,
                      "functional: empty layers/input_layer/vars")
        model = keras.saving.load_model(path)
        pred = model.predict(xin, verbose=0)
        want = np.loadtxt(os.path.join(tmp, name + "_pred.csv"), delimiter=",", dtype="float32")
        diff = float(np.max(np.abs(pred - want)))
        check(diff <= 1e-5, f"{name}: keras.saving.load_model() predicts the same (max abs diff {diff:.2e})")
        check(int(model.optimizer.iterations.numpy()) == n_iter,
              f"{name}: keras restored the optimizer iterations ({int(model.optimizer.iterations.numpy())})")
        n_vars = len(model.optimizer.variables)
        print(f"  {name}: keras optimizer has {n_vars} variables: {type(model.optimizer).__name__}")

    # The weights file into a model Keras builds from the same config.
    m = keras.saving.load_model(os.path.join(tmp, "functional.keras"))
    before = m.predict(x, verbose=0)
    for v in m.weights:
        v.assign(np.zeros(v.shape, dtype=v.dtype))
    m.load_weights(os.path.join(tmp, "functional.weights.h5"))
    diff = float(np.max(np.abs(m.predict(x, verbose=0) - before)))
    check(diff == 0.0, f"functional.weights.h5 loads with keras Model.load_weights() (max abs diff {diff})")

    print(f"{'OK' if not failures else 'FAILED'}: {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
