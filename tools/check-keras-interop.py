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
Then models of the convolution, pooling, shape, merge, normalization and
activation layers and a two-input, two-output model with a shared layer,
trained and saved by mirrored, must load in Keras 3 and predict the same.
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

# Models of issue 12's layers, built and trained by mirrored: a residual CNN
# (Conv2D, BatchNormalization, Add, pooling), a 1-D convnet with the shape,
# normalization and activation layers, and a two-input, two-output model with
# a shared layer, and models nested as layers. Each writes <name>.keras, its inputs <name>_x<k>.csv (rows,
# flattened) with their per-sample shapes and mirrored's predictions
# <name>_pred<k>.csv.
R_LAYERS = r"""
args <- commandArgs(TRUE); out <- args[1]
lib <- file.path(args[2], ".lib")
if (dir.exists(lib)) .libPaths(c(lib, .libPaths()))
library(mirrored)
set.seed(2); set_random_seed(2)
write_io <- function(name, model, xs) {
  save_model(model, file.path(out, paste0(name, ".keras")))
  pred <- predict(model, if (length(xs) == 1) xs[[1]] else xs, verbose = 0)
  if (!is.list(pred)) pred <- list(pred)
  for (k in seq_along(xs)) {
    x <- xs[[k]]
    write.table(matrix(x, nrow = dim(x)[1]), file.path(out, sprintf("%s_x%d.csv", name, k)),
                sep = ",", row.names = FALSE, col.names = FALSE)
    writeLines(paste(dim(x)[-1], collapse = " "), file.path(out, sprintf("%s_x%d_shape.txt", name, k)))
  }
  for (k in seq_along(pred)) {
    write.table(matrix(pred[[k]], nrow = dim(pred[[k]])[1]), file.path(out, sprintf("%s_pred%d.csv", name, k)),
                sep = ",", row.names = FALSE, col.names = FALSE)
  }
}
# A residual CNN.
x <- array(runif(32 * 10 * 10 * 3), c(32, 10, 10, 3))
y <- sample(0:2, 32, replace = TRUE)
inp <- keras_input(shape = c(10, 10, 3))
h <- inp |> layer_conv_2d(8, 3, padding = "same") |> layer_batch_normalization() |> layer_activation("relu")
r <- h |> layer_conv_2d(8, 3, padding = "same", activation = "relu") |> layer_conv_2d(8, 3, padding = "same")
h <- layer_add(list(h, r)) |> layer_activation("relu") |> layer_max_pooling_2d(2)
h <- h |> layer_conv_2d(12, 3, strides = 2, padding = "same", groups = 4) |> layer_average_pooling_2d(2, padding = "same")
out_t <- h |> layer_global_average_pooling_2d() |> layer_dropout(0.2) |> layer_dense(3)
m <- keras_model(inp, out_t)
m |> compile(optimizer = "adam", loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
fit(m, x, y, epochs = 2, batch_size = 8, verbose = 0)
write_io("residual_cnn", m, list(x))
# A 1-D convnet with the shape, normalization and activation layers.
x <- array(rnorm(32 * 12 * 2), c(32, 12, 2))
inp <- keras_input(shape = c(12, 2))
h <- inp |> layer_rescaling(0.5, offset = 0.1) |> layer_conv_1d(6, 3, padding = "same", dilation_rate = 2, activation = "elu") |>
  layer_max_pooling_1d(2) |> layer_layer_normalization() |> layer_zero_padding_1d(1) |> layer_cropping_1d(c(0, 1)) |>
  layer_upsampling_1d(2) |> layer_permute(c(2, 1)) |> layer_reshape(c(-1)) |> layer_dense(4, activation = "mish") |>
  layer_repeat_vector(3) |> layer_global_max_pooling_1d()
h2 <- layer_concatenate(list(h, h |> layer_activation_leaky_relu(0.2)))
m <- keras_model(inp, h2 |> layer_dense(2, activation = "softplus"))
m |> compile(optimizer = "adam", loss = "mse")
fit(m, x, matrix(runif(64), 32), epochs = 2, batch_size = 8, verbose = 0)
write_io("conv1d_shapes", m, list(x))
# Two inputs, two outputs, a shared layer.
a <- keras_input(shape = 6, name = "a"); b <- keras_input(shape = 6, name = "b")
shared <- layer_dense(units = 5, activation = "tanh", name = "shared")
ha <- shared(a); hb <- shared(b)
o1 <- layer_subtract(list(ha, hb)) |> layer_dense(1, name = "diff")
o2 <- layer_concatenate(list(ha, hb, layer_multiply(list(ha, hb)))) |> layer_dense(3, activation = "softmax", name = "cls")
m <- keras_model(list(a, b), list(o1, o2))
m |> compile(optimizer = "adam", loss = list("mse", "categorical_crossentropy"), loss_weights = list(1, 0.5))
xa <- matrix(runif(64 * 6), 64); xb <- matrix(runif(64 * 6), 64)
ycls <- to_categorical(sample(0:2, 64, replace = TRUE), 3)
fit(m, list(xa, xb), list(matrix(rowSums(xa - xb), 64), ycls), epochs = 2, batch_size = 16, verbose = 0)
write_io("multi_io_shared", m, list(xa, xb))
# Models nested as layers: a functional model called on a tensor and a
# sequential model called on its output.
inner_in <- keras_input(shape = 4)
inner <- keras_model(inner_in, inner_in |> layer_dense(3, activation = "relu") |> layer_dense(2), name = "inner")
tail_seq <- keras_model_sequential(input_shape = 2, name = "tail", layers = list(layer_dense(units = 2)))
x_in <- keras_input(shape = 4)
h <- inner(x_in)
m <- keras_model(x_in, layer_add(list(h, tail_seq(h))))
m |> compile(optimizer = "adam", loss = "mse")
x <- matrix(runif(32 * 4), 32)
fit(m, x, matrix(runif(64), 32), epochs = 2, batch_size = 8, verbose = 0)
write_io("nested_models", m, list(x))
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

    check_layer_models(keras, np)
    check_metrics(keras, np)

    print(f"{'OK' if not failures else 'FAILED'}: {len(failures)} failure(s)")
    return 1 if failures else 0


def check_layer_models(keras, np):
    """Keras loads mirrored's models of issue 12's layers and predicts the same."""
    tmp = tempfile.mkdtemp(prefix="mirrored-interop-layers-")
    rfile = os.path.join(tmp, "make.R")
    with open(rfile, "w") as f:
        f.write(R_LAYERS)
    subprocess.run(["Rscript", rfile, tmp, ROOT], check=True)
    for name in ["residual_cnn", "conv1d_shapes", "multi_io_shared", "nested_models"]:
        xs, k = [], 1
        while os.path.exists(os.path.join(tmp, f"{name}_x{k}.csv")):
            shape = [int(v) for v in open(os.path.join(tmp, f"{name}_x{k}_shape.txt")).read().split()]
            x = np.loadtxt(os.path.join(tmp, f"{name}_x{k}.csv"), delimiter=",", dtype="float32", ndmin=2)
            # R writes arrays column-major: rows, then the per-sample axes in Fortran order.
            xs.append(x.reshape([x.shape[0]] + shape[::-1]).transpose([0] + list(range(len(shape), 0, -1))))
            k += 1
        try:
            model = keras.saving.load_model(os.path.join(tmp, name + ".keras"))
        except Exception as e:  # noqa: BLE001 - any failure to load is the finding
            check(False, f"{name}: keras.saving.load_model() failed: {type(e).__name__}: {str(e)[:300]}")
            continue
        classes = sorted({type(layer).__name__ for layer in model.layers})
        print(f"  {name}: keras built {', '.join(classes)}")
        pred = model.predict(xs[0] if len(xs) == 1 else xs, verbose=0)
        pred = pred if isinstance(pred, (list, tuple)) else [pred]
        for j, p in enumerate(pred, start=1):
            want = np.loadtxt(os.path.join(tmp, f"{name}_pred{j}.csv"), delimiter=",", dtype="float32", ndmin=2)
            p2 = np.asarray(p).reshape(p.shape[0], -1)
            # mirrored flattened its prediction column-major too.
            want = want.reshape([want.shape[0]] + list(p.shape[1:])[::-1]).transpose(
                [0] + list(range(p.ndim - 1, 0, -1))).reshape(p.shape[0], -1)
            diff = float(np.max(np.abs(p2 - want)))
            check(diff <= 1e-4, f"{name}: output {j} predicted the same by Keras (max abs diff {diff:.2e})")


# Issue 13's metrics: a model compiled by mirrored with metrics and
# weighted_metrics of every kind, saved; Keras loads it, compiles it from the
# file and evaluates it with sample weights. Then the reverse: a model Keras
# compiled and saved, loaded and evaluated by mirrored. The logs must agree.
R_METRICS = r"""
args <- commandArgs(TRUE); out <- args[1]
lib <- file.path(args[2], ".lib")
if (dir.exists(lib)) .libPaths(c(lib, .libPaths()))
library(mirrored)
set.seed(3)
x <- as.matrix(read.csv(file.path(out, "x.csv"), header = FALSE))
y <- as.matrix(read.csv(file.path(out, "y.csv"), header = FALSE))
w <- read.csv(file.path(out, "w.csv"), header = FALSE)[[1]]
m <- keras_model_sequential(input_shape = 3) |> layer_dense(4, activation = "softmax")
m |> compile(optimizer = "adam", loss = "categorical_crossentropy",
             metrics = list("auc", metric_precision(class_id = 1), metric_recall(top_k = 2),
                            metric_f1_score(average = "macro"), metric_fbeta_score(beta = 2, threshold = 0.3),
                            metric_mean_iou(num_classes = 4, sparse_y_true = FALSE, sparse_y_pred = FALSE),
                            "top_k_categorical_accuracy", "mse", metric_root_mean_squared_error(), "mape",
                            metric_categorical_crossentropy(label_smoothing = 0.1)),
             weighted_metrics = list("auc", "accuracy", metric_auc(curve = "PR", num_thresholds = 50)))
fit(m, x, y, sample_weight = w, epochs = 1, batch_size = 8, verbose = 0)
save_model(m, file.path(out, "metrics.keras"))
ev <- evaluate(m, x, y, sample_weight = w, batch_size = 8, verbose = 0)
write.csv(data.frame(key = names(ev), value = unlist(ev)), file.path(out, "metrics_eval.csv"), row.names = FALSE)
k <- load_model(file.path(out, "keras_metrics.keras"))
ev <- evaluate(k, x, y, sample_weight = w, batch_size = 8, verbose = 0)
write.csv(data.frame(key = names(ev), value = unlist(ev)), file.path(out, "keras_metrics_eval.csv"), row.names = FALSE)
"""


def check_metrics(keras, np):
    tmp = tempfile.mkdtemp(prefix="mirrored-interop-metrics-")
    rng = np.random.default_rng(5)
    x = rng.standard_normal((30, 3)).astype("float32")
    y = np.eye(4, dtype="float32")[rng.integers(0, 4, 30)]
    w = rng.uniform(0, 2, 30).astype("float32")
    for name, a in [("x", x), ("y", y), ("w", w.reshape(-1, 1))]:
        np.savetxt(os.path.join(tmp, name + ".csv"), a, delimiter=",", fmt="%.9g")
    k = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="softmax")])
    k.compile(optimizer="adam", loss="categorical_crossentropy",
              metrics=["auc", keras.metrics.Precision(class_id=2, name="precision"),
                       keras.metrics.F1Score(average="weighted", threshold=0.4), "mape",
                       keras.metrics.TopKCategoricalAccuracy(k=3)],
              weighted_metrics=["auc", keras.metrics.MeanSquaredError()])
    k.fit(x, y, sample_weight=w, epochs=1, batch_size=8, verbose=0)
    k.save(os.path.join(tmp, "keras_metrics.keras"))
    want_k = k.evaluate(x, y, sample_weight=w, batch_size=8, verbose=0, return_dict=True)
    rfile = os.path.join(tmp, "make.R")
    with open(rfile, "w") as f:
        f.write(R_METRICS)
    subprocess.run(["Rscript", rfile, tmp, ROOT], check=True)

    def read(name):
        out = {}
        for line in open(os.path.join(tmp, name)).read().splitlines()[1:]:
            key, value = line.rsplit(",", 1)
            out[key.strip('"')] = float(value)
        return out

    ours = read("metrics_eval.csv")
    try:
        model = keras.saving.load_model(os.path.join(tmp, "metrics.keras"))
    except Exception as e:  # noqa: BLE001 - any failure to load is the finding
        check(False, f"metrics: keras.saving.load_model() failed: {type(e).__name__}: {str(e)[:300]}")
        return
    got = model.evaluate(x, y, sample_weight=w, batch_size=8, verbose=0, return_dict=True)
    # A per-class score (F-beta with average=None) logs one key per class in
    # mirrored: "<name>_<class>".
    flat = {}
    for key, v in got.items():
        v = np.asarray(v).reshape(-1)
        flat.update({key: float(v[0])} if v.size == 1 else {f"{key}_{i}": float(a) for i, a in enumerate(v)})
    got = flat
    check(sorted(got) == sorted(ours), f"metrics: Keras logs {sorted(got)}, mirrored {sorted(ours)}")
    for key in sorted(set(got) & set(ours)):
        diff = abs(float(np.asarray(got[key])) - ours[key])
        check(diff <= 1e-5 * max(1.0, abs(ours[key])), f"metrics: {key} Keras {float(got[key]):.7g} "
              f"mirrored {ours[key]:.7g}")
    theirs = read("keras_metrics_eval.csv")
    check(sorted(theirs) == sorted(want_k), f"keras_metrics: mirrored logs {sorted(theirs)}, Keras {sorted(want_k)}")
    for key in sorted(set(theirs) & set(want_k)):
        diff = abs(float(np.asarray(want_k[key])) - theirs[key])
        check(diff <= 1e-5 * max(1.0, abs(theirs[key])), f"keras_metrics: {key} Keras "
              f"{float(want_k[key]):.7g} mirrored {theirs[key]:.7g}")


if __name__ == "__main__":
    sys.exit(main())
