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
trained and saved by mirrored, must load in Keras 3 and predict the same; a
model with regularizers and constraints must also evaluate to the same loss.
Models compiled with the optimizers, schedules, clipping, EMA and gradient
accumulation of issue 13, trained and saved by mirrored, must load in Keras 3
with their optimizer state: one more epoch in Keras gives the weights
mirrored reaches (max abs difference <= 1e-5).
Then a model with frozen layers round-trips both ways with its trainable
flags and the optimizer variables of its trainable variables only.
A model compiled with every loss of issue 13 must load in Keras 3 with
each loss's class and arguments. Mixed precision (issue 14): a
mixed_bfloat16 model and a mixed_float16 model with a LossScaleOptimizer,
trained and saved by mirrored, load in Keras 3 with the same layer policies,
optimizer, loss-scale settings and state (dynamic_scale, step_counter,
iterations) and predict the same within bf16 / f16
tolerance; a mixed_bfloat16 model saved by Keras loads in mirrored with its
policies and predicts what Keras predicts. Variable-length inputs (issue 28): a
model on Input(shape=(None,)) saved by Keras loads in mirrored, predicts what
Keras predicts at two lengths and trains on batches of lengths 7, 19 and 3
to Keras' weights; mirrored's saved model loads in Keras with its None axis.
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
# Regularizers and constraints (issue 13): Keras must rebuild them from the
# configs and report the same evaluation loss, regularization included.
x <- array(runif(32 * 5 * 5 * 2), c(32, 5, 5, 2))
inp <- keras_input(shape = c(5, 5, 2))
h <- inp |> layer_conv_2d(3, 2, kernel_regularizer = regularizer_l1_l2(0.01, 0.02),
                          activity_regularizer = regularizer_l2(0.001),
                          kernel_constraint = constraint_maxnorm(1.5, axis = 1:3)) |> layer_flatten()
h <- h |> layer_dense(4, activation = "tanh", kernel_regularizer = regularizer_orthogonal(0.1),
                      bias_regularizer = "l1", bias_constraint = constraint_nonneg(),
                      kernel_constraint = constraint_minmaxnorm(0.2, 0.9, rate = 0.5))
m <- keras_model(inp, h |> layer_dense(1, kernel_constraint = constraint_unitnorm()))
m |> compile(optimizer = "sgd", loss = "mse")
yr <- matrix(runif(32), 32)
fit(m, x, yr, epochs = 2, batch_size = 8, verbose = 0)
write_io("regularized", m, list(x))
write.table(yr, file.path(out, "regularized_y.csv"), sep = ",", row.names = FALSE, col.names = FALSE)
writeLines(format(evaluate(m, x, yr, batch_size = 32, verbose = 0)$loss, digits = 10),
           file.path(out, "regularized_eval.txt"))
"""

# Issue 13's losses: a model with one output per loss, compiled by mirrored
# with every new loss and its arguments (and label_smoothing, ignore_class),
# saved; Keras must load it and rebuild each loss with the same class and
# arguments.
R_LOSSES = r"""
args <- commandArgs(TRUE); out <- args[1]
lib <- file.path(args[2], ".lib")
if (dir.exists(lib)) .libPaths(c(lib, .libPaths()))
library(mirrored)
losses <- list(
  loss_huber(delta = 0.5), "mae", loss_mean_absolute_percentage_error(), "msle", loss_log_cosh(),
  loss_kl_divergence(), loss_poisson(name = "pois"), loss_cosine_similarity(), loss_hinge(),
  loss_squared_hinge(), loss_categorical_hinge(),
  loss_binary_focal_crossentropy(apply_class_balancing = TRUE, alpha = 0.3, gamma = 1.5,
                                 from_logits = TRUE, label_smoothing = 0.1),
  loss_categorical_focal_crossentropy(alpha = 0.4, gamma = 3, label_smoothing = 0.2),
  loss_binary_crossentropy(label_smoothing = 0.2),
  loss_categorical_crossentropy(from_logits = TRUE, label_smoothing = 0.1),
  loss_sparse_categorical_crossentropy(from_logits = TRUE, ignore_class = -1L))
inp <- keras_input(shape = 3)
outs <- lapply(seq_along(losses), function(k) inp |> layer_dense(3, name = paste0("out", k)))
m <- keras_model(inp, outs)
m |> compile(optimizer = "sgd", loss = losses)
save_model(m, file.path(out, "losses.keras"))
"""

# What Keras must rebuild from R_LOSSES' file, output by output: the class
# and the config entries to compare (name and arguments).
LOSS_EXPECT = [
    ("Huber", {"name": "huber_loss", "delta": 0.5}),
    ("mean_absolute_error", {}),
    ("MeanAbsolutePercentageError", {"name": "mean_absolute_percentage_error"}),
    ("mean_squared_logarithmic_error", {}),
    ("LogCosh", {"name": "log_cosh"}),
    ("KLDivergence", {"name": "kl_divergence"}),
    ("Poisson", {"name": "pois"}),
    ("CosineSimilarity", {"name": "cosine_similarity"}),
    ("Hinge", {"name": "hinge"}),
    ("SquaredHinge", {"name": "squared_hinge"}),
    ("CategoricalHinge", {"name": "categorical_hinge"}),
    ("BinaryFocalCrossentropy", {"apply_class_balancing": True, "alpha": 0.3, "gamma": 1.5,
                                 "from_logits": True, "label_smoothing": 0.1}),
    ("CategoricalFocalCrossentropy", {"alpha": 0.4, "gamma": 3.0, "label_smoothing": 0.2,
                                      "from_logits": False}),
    ("BinaryCrossentropy", {"label_smoothing": 0.2, "from_logits": False}),
    ("CategoricalCrossentropy", {"label_smoothing": 0.1, "from_logits": True}),
    ("SparseCategoricalCrossentropy", {"ignore_class": -1, "from_logits": True}),
]

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
    check_optimizer_models(keras, np)
    check_frozen_model(keras, np)
    check_losses(keras)
    check_metrics(keras, np)
    check_mixed_precision(keras, np)
    check_variable_length(keras, np)

    print(f"{'OK' if not failures else 'FAILED'}: {len(failures)} failure(s)")
    return 1 if failures else 0


def check_layer_models(keras, np):
    """Keras loads mirrored's models of issue 12's layers and predicts the same."""
    tmp = tempfile.mkdtemp(prefix="mirrored-interop-layers-")
    rfile = os.path.join(tmp, "make.R")
    with open(rfile, "w") as f:
        f.write(R_LAYERS)
    subprocess.run(["Rscript", rfile, tmp, ROOT], check=True)
    for name in ["residual_cnn", "conv1d_shapes", "multi_io_shared", "nested_models", "regularized"]:
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
        if name == "regularized":
            check_regularized(keras, np, tmp, model, xs[0])


def check_regularized(keras, np, tmp, model, x):
    """Keras rebuilt mirrored's regularizers and constraints and its evaluation
    loss (data loss plus regularization losses) equals mirrored's."""
    conv, dense = model.layers[1], model.layers[3]
    found = [type(o).__name__ for o in (conv.kernel_regularizer, conv.activity_regularizer,
                                        conv.kernel.constraint, dense.kernel_regularizer,
                                        dense.bias_regularizer, dense.bias.constraint,
                                        dense.kernel.constraint, model.layers[4].kernel.constraint)]
    want = ["L1L2", "L2", "MaxNorm", "OrthogonalRegularizer", "L1", "NonNeg", "MinMaxNorm", "UnitNorm"]
    check(found == want, f"regularized: keras rebuilt {found}")
    check(conv.kernel.constraint.axis == [0, 1, 2], f"regularized: MaxNorm axis {conv.kernel.constraint.axis}")
    y = np.loadtxt(os.path.join(tmp, "regularized_y.csv"), delimiter=",", dtype="float32", ndmin=2)
    model.compile(optimizer="sgd", loss="mse")
    ours = float(open(os.path.join(tmp, "regularized_eval.txt")).read())
    theirs = float(model.evaluate(x, y, batch_size=32, verbose=0))
    check(abs(ours - theirs) <= 1e-5 * max(1.0, abs(theirs)),
          f"regularized: evaluation loss with regularization, mirrored {ours:.7f}, keras {theirs:.7f}")


R_OPTIMIZERS = r"""
args <- commandArgs(TRUE); out <- args[1]
lib <- file.path(args[2], ".lib")
if (dir.exists(lib)) .libPaths(c(lib, .libPaths()))
library(mirrored)
set.seed(3)
x <- matrix(rnorm(16 * 3), 16); y <- matrix(rnorm(16 * 2), 16)
write.table(x, file.path(out, "x.csv"), sep = ",", row.names = FALSE, col.names = FALSE)
write.table(y, file.path(out, "y.csv"), sep = ",", row.names = FALSE, col.names = FALSE)
opts <- list(
  nadam_schedule_clipnorm = optimizer_nadam(learning_rate_schedule_cosine_decay(0.02, 10, alpha = 0.1), clipnorm = 0.5),
  lamb_ema_accumulation = optimizer_lamb(0.01, use_ema = TRUE, ema_momentum = 0.9, gradient_accumulation_steps = 2),
  ftrl_piecewise = optimizer_ftrl(learning_rate_schedule_piecewise_constant_decay(c(3, 6), c(0.1, 0.05, 0.01)),
                                  l1_regularization_strength = 0.01, l2_shrinkage_regularization_strength = 0.01),
  adagrad_global_clipnorm = optimizer_adagrad(0.05, global_clipnorm = 0.3),
  adadelta = optimizer_adadelta(1, rho = 0.9),
  adamax_clipvalue = optimizer_adamax(0.01, clipvalue = 0.1),
  lion_exponential = optimizer_lion(learning_rate_schedule_exponential_decay(0.01, 4, 0.5), weight_decay = 0.01))
for (name in names(opts)) {
  m <- keras_model_sequential(input_shape = 3) |> layer_dense(4, activation = "tanh") |> layer_dense(2)
  m |> compile(optimizer = opts[[name]], loss = "mse")
  fit(m, x, y, batch_size = 4, epochs = 2, shuffle = FALSE, verbose = 0)
  save_model(m, file.path(out, paste0(name, ".keras")))
  fit(m, x, y, batch_size = 4, epochs = 1, shuffle = FALSE, verbose = 0)
  w <- get_weights(m)
  writeLines(vapply(w, function(a) paste(sprintf("%.9g", as.numeric(if (is.matrix(a)) t(a) else a)), collapse = ","), ""),
             file.path(out, paste0(name, "_after.txt")))
}
writeLines(names(opts), file.path(out, "names.txt"))
"""


def check_optimizer_models(keras, np):
    """Keras loads mirrored's optimizers (slots, schedule, EMA, accumulators)
    and one more epoch in Keras gives mirrored's weights."""
    tmp = tempfile.mkdtemp(prefix="mirrored-interop-optimizers-")
    rfile = os.path.join(tmp, "make.R")
    with open(rfile, "w") as f:
        f.write(R_OPTIMIZERS)
    subprocess.run(["Rscript", rfile, tmp, ROOT], check=True)
    x = np.loadtxt(os.path.join(tmp, "x.csv"), delimiter=",", dtype="float32")
    y = np.loadtxt(os.path.join(tmp, "y.csv"), delimiter=",", dtype="float32")
    for name in open(os.path.join(tmp, "names.txt")).read().split():
        try:
            model = keras.saving.load_model(os.path.join(tmp, name + ".keras"))
        except Exception as e:  # noqa: BLE001 - any failure to load is the finding
            check(False, f"{name}: keras.saving.load_model() failed: {type(e).__name__}: {str(e)[:300]}")
            continue
        opt = model.optimizer
        # The raw step count (Keras' iterations divides it under accumulation).
        check(int(opt._iterations.numpy()) == 8, f"{name}: keras restored {type(opt).__name__} "
              f"with its step count {int(opt._iterations.numpy())}")
        model.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
        want = [np.array([float(v) for v in line.split(",")])
                for line in open(os.path.join(tmp, name + "_after.txt")).read().split()]
        got = [np.asarray(w, dtype="float64").ravel() for w in model.get_weights()]
        diff = max(float(np.max(np.abs(g - w))) for g, w in zip(got, want))
        check(diff <= 1e-5, f"{name}: one more epoch in Keras gives mirrored's weights (max abs diff {diff:.2e})")


R_FROZEN = r"""
args <- commandArgs(TRUE); out <- args[1]
lib <- file.path(args[2], ".lib")
if (dir.exists(lib)) .libPaths(c(lib, .libPaths()))
library(mirrored)
if (identical(args[3], "write")) {
  set.seed(3)
  x <- matrix(rnorm(48 * 5), ncol = 5)
  y <- matrix(rnorm(48 * 2), ncol = 2)
  inp <- keras_input(shape = 5)
  h <- inp |> layer_dense(6, activation = "relu", name = "base", trainable = FALSE) |>
    layer_batch_normalization(name = "bn") |> layer_dense(4, activation = "tanh", name = "mid")
  m <- keras_model(inp, h |> layer_dense(2, name = "head"))
  freeze_weights(m, which = c("bn"))
  base <- get_layer(m, "base")
  base$trainable <- FALSE
  m |> compile(optimizer = optimizer_adam(0.01), loss = "mse")
  fit(m, x, y, epochs = 2, batch_size = 16, verbose = 0)
  save_model(m, file.path(out, "frozen.keras"))
  write.table(x, file.path(out, "frozen_x.csv"), sep = ",", row.names = FALSE, col.names = FALSE)
  write.table(predict(m, x, verbose = 0), file.path(out, "frozen_pred.csv"), sep = ",",
              row.names = FALSE, col.names = FALSE)
} else {
  m <- load_model(file.path(out, "frozen_keras.keras"))
  flags <- vapply(m$layers, function(l) l$trainable, logical(1))
  names(flags) <- vapply(m$layers, function(l) l$name, "")
  w <- get_weights(m)
  writeLines(c(paste(names(flags), flags), paste("iterations", m$optimizer$iterations)),
             file.path(out, "frozen_back.txt"))
  write.table(unlist(lapply(w, as.vector)), file.path(out, "frozen_back_w.csv"),
              row.names = FALSE, col.names = FALSE)
}
"""


def check_frozen_model(keras, np):
    """A model with frozen layers round-trips: Keras reads mirrored's flags and
    optimizer variables (only the trainable variables have slots), its frozen
    weights do not move when Keras trains it, and mirrored reads Keras' file
    back with the same flags and weights."""
    import h5py
    tmp = tempfile.mkdtemp(prefix="mirrored-interop-frozen-")
    rfile = os.path.join(tmp, "frozen.R")
    with open(rfile, "w") as f:
        f.write(R_FROZEN)
    subprocess.run(["Rscript", rfile, tmp, ROOT, "write"], check=True)
    path = os.path.join(tmp, "frozen.keras")
    with zipfile.ZipFile(path) as z, z.open("model.weights.h5") as fh, h5py.File(fh, "r") as h:
        n_opt = len(h["optimizer/vars"])
    # iterations, learning rate, then m and v of mid (2) and head (2).
    check(n_opt == 2 + 2 * 4, f"frozen: optimizer/vars holds slots of the trainable variables only ({n_opt})")
    model = keras.saving.load_model(path)
    flags = {layer.name: layer.trainable for layer in model.layers}
    check(flags.get("base") is False and flags.get("bn") is False and flags.get("mid") is True
          and flags.get("head") is True, f"frozen: keras reads the trainable flags {flags}")
    x = np.loadtxt(os.path.join(tmp, "frozen_x.csv"), delimiter=",", dtype="float32", ndmin=2)
    want = np.loadtxt(os.path.join(tmp, "frozen_pred.csv"), delimiter=",", dtype="float32", ndmin=2)
    diff = float(np.max(np.abs(model.predict(x, verbose=0) - want)))
    check(diff <= 1e-5, f"frozen: keras predicts the same (max abs diff {diff:.2e})")
    check(int(model.optimizer.iterations.numpy()) == 6, "frozen: keras restored the optimizer iterations")
    before = {layer.name: [w.copy() for w in layer.get_weights()] for layer in model.layers}
    model.fit(x, np.zeros((x.shape[0], 2), "float32"), epochs=1, batch_size=16, shuffle=False, verbose=0)
    for name in ("base", "bn"):
        after = model.get_layer(name).get_weights()
        check(all(np.array_equal(a, b) for a, b in zip(before[name], after)),
              f"frozen: keras leaves frozen layer {name} unchanged")
    check(not np.array_equal(before["head"][0], model.get_layer("head").get_weights()[0]),
          "frozen: keras trains the head")
    model.save(os.path.join(tmp, "frozen_keras.keras"))
    subprocess.run(["Rscript", rfile, tmp, ROOT, "read"], check=True)
    back = dict(line.split() for line in open(os.path.join(tmp, "frozen_back.txt")).read().splitlines())
    check(back.get("base") == "FALSE" and back.get("bn") == "FALSE" and back.get("head") == "TRUE",
          f"frozen: mirrored reads Keras' trainable flags back {back}")
    check(back.get("iterations") == "9", f"frozen: mirrored restored Keras' iterations ({back.get('iterations')})")
    got = np.loadtxt(os.path.join(tmp, "frozen_back_w.csv"), dtype="float32")
    mine = np.concatenate([np.asarray(w).reshape(-1, order="F") for w in model.get_weights()])
    diff = float(np.max(np.abs(got - mine)))
    check(diff == 0.0, f"frozen: mirrored reads Keras' weights exactly (max abs diff {diff})")



def check_losses(keras):
    """Keras rebuilds every loss of issue 13 from a file mirrored saved."""
    tmp = tempfile.mkdtemp(prefix="mirrored-interop-losses-")
    rfile = os.path.join(tmp, "make.R")
    with open(rfile, "w") as f:
        f.write(R_LOSSES)
    subprocess.run(["Rscript", rfile, tmp, ROOT], check=True)
    path = os.path.join(tmp, "losses.keras")
    try:
        model = keras.saving.load_model(path)
    except Exception as e:  # noqa: BLE001 - any failure to load is the finding
        check(False, f"losses: keras.saving.load_model() failed: {type(e).__name__}: {str(e)[:300]}")
        return
    check(model.compiled, "losses: keras.saving.load_model() compiled the model")
    # Each loss as Keras deserializes it from the file's compile config (the
    # model's get_compile_config() re-serializes them, and Huber's drops delta).
    cfg = json.loads(zipfile.ZipFile(path).read("config.json"))["compile_config"]
    losses = [keras.losses.get(entry) for entry in cfg["loss"]]
    check(len(losses) == len(LOSS_EXPECT), f"losses: {len(losses)} losses in the compile config")
    for loss, (cls, want) in zip(losses, LOSS_EXPECT):
        got_cls = type(loss).__name__ if isinstance(loss, keras.losses.Loss) else loss.__name__
        got = loss.get_config() if isinstance(loss, keras.losses.Loss) else {}
        # Huber's get_config() leaves delta out: read the attribute.
        if cls == "Huber":
            got = dict(got, delta=loss._fn_kwargs["delta"])
        same = got_cls == cls and all(
            (abs(got.get(k, float("nan")) - v) < 1e-7) if isinstance(v, float) else got.get(k) == v
            for k, v in want.items())
        check(same, f"losses: {cls} rebuilt by Keras with {want} (got {got_cls} {got})")


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


R_MIXED = r"""
args <- commandArgs(TRUE); out <- args[1]
lib <- file.path(args[2], ".lib")
if (dir.exists(lib)) .libPaths(c(lib, .libPaths()))
library(mirrored)
set_random_seed(4)
x <- as.matrix(read.csv(file.path(out, "x.csv"), header = FALSE))
y <- as.integer(read.csv(file.path(out, "y.csv"), header = FALSE)[[1]])
for (policy in c("mixed_bfloat16", "mixed_float16")) {
  config_set_dtype_policy(policy)
  inp <- keras_input(shape = ncol(x))
  h <- inp |> layer_dense(32, activation = "relu") |> layer_dense(16, activation = "relu")
  m <- keras_model(inp, h |> layer_dense(4, dtype = "float32"))
  config_set_dtype_policy("float32")
  opt <- if (policy == "mixed_float16") optimizer_loss_scale(optimizer_adam(0.01), initial_scale = 1024,
                                                             dynamic_growth_steps = 7) else optimizer_adam(0.01)
  suppressMessages(m |> compile(optimizer = opt,
                                loss = loss_sparse_categorical_crossentropy(from_logits = TRUE)))
  suppressMessages(fit(m, x, y, epochs = 2, batch_size = 16, verbose = 0))
  save_model(m, file.path(out, paste0(policy, ".keras")))
  write.table(predict(m, x, verbose = 0), file.path(out, paste0(policy, "_pred.csv")), sep = ",",
              row.names = FALSE, col.names = FALSE)
  if (policy == "mixed_float16") {
    writeLines(format(c(m$optimizer$dynamic_scale, m$optimizer$step_counter, m$optimizer$iterations),
                      digits = 15), file.path(out, "loss_scale.txt"))
  }
}
k <- suppressMessages(load_model(file.path(out, "keras_bf16.keras")))
dense <- Filter(function(l) identical(l$class_name, "Dense"), k$layers)
writeLines(vapply(dense, function(l) l$config$dtype$config$name, ""), file.path(out, "keras_bf16_policies.txt"))
write.table(predict(k, x, verbose = 0), file.path(out, "keras_bf16_pred.csv"), sep = ",",
            row.names = FALSE, col.names = FALSE)
"""


def check_mixed_precision(keras, np):
    tmp = tempfile.mkdtemp(prefix="mirrored-interop-mixed-")
    rng = np.random.default_rng(9)
    x = rng.standard_normal((64, 6)).astype("float32")
    y = rng.integers(0, 4, 64)
    np.savetxt(os.path.join(tmp, "x.csv"), x, delimiter=",", fmt="%.9g")
    np.savetxt(os.path.join(tmp, "y.csv"), y, fmt="%d")
    # Keras' side: a mixed_bfloat16 model saved by Keras, for mirrored to load.
    old = keras.config.dtype_policy()
    keras.config.set_dtype_policy("mixed_bfloat16")
    inp = keras.Input((6,))
    h = keras.layers.Dense(16, activation="relu")(inp)
    km = keras.Model(inp, keras.layers.Dense(4, dtype="float32")(h))
    keras.config.set_dtype_policy(old)
    km.compile(optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    km.fit(x, y, epochs=1, batch_size=16, verbose=0)
    km.save(os.path.join(tmp, "keras_bf16.keras"))
    want_k = np.asarray(km.predict(x, verbose=0), dtype="float32")
    rfile = os.path.join(tmp, "make.R")
    with open(rfile, "w") as f:
        f.write(R_MIXED)
    subprocess.run(["Rscript", rfile, tmp, ROOT], check=True)
    for policy, tol in [("mixed_bfloat16", 3e-2), ("mixed_float16", 5e-3)]:
        ours = np.loadtxt(os.path.join(tmp, policy + "_pred.csv"), delimiter=",", dtype="float32")
        try:
            model = keras.saving.load_model(os.path.join(tmp, policy + ".keras"))
        except Exception as e:  # noqa: BLE001 - any failure to load is the finding
            check(False, f"{policy}: keras.saving.load_model() failed: {type(e).__name__}: {str(e)[:300]}")
            continue
        dense = [layer for layer in model.layers if isinstance(layer, keras.layers.Dense)]
        got = [layer.dtype_policy.name for layer in dense]
        check(got == [policy, policy, "float32"], f"{policy}: Keras reads the Dense policies {got}")
        pred = np.asarray(model.predict(x, verbose=0), dtype="float32")
        diff = float(np.max(np.abs(pred - ours)) / max(1.0, float(np.max(np.abs(ours)))))
        check(diff <= tol, f"{policy}: Keras' predictions match mirrored's within {tol} (relative {diff:.2e})")
        if policy == "mixed_float16":
            opt = model.optimizer
            check(type(opt).__name__ == "LossScaleOptimizer", f"{policy}: Keras' optimizer {type(opt).__name__}")
            if type(opt).__name__ == "LossScaleOptimizer":
                check(float(opt.initial_scale) == 1024.0 and int(opt.dynamic_growth_steps) == 7,
                      f"{policy}: initial_scale {opt.initial_scale}, dynamic_growth_steps {opt.dynamic_growth_steps}")
                check(type(opt.inner_optimizer).__name__ == "Adam",
                      f"{policy}: inner optimizer {type(opt.inner_optimizer).__name__}")
                # The optimizer's variables in Keras' layout for a LossScaleOptimizer.
                scale, counter, iters = [float(v) for v in open(os.path.join(tmp, "loss_scale.txt")).read().split()]
                ks, kc = float(np.asarray(opt.dynamic_scale)), float(np.asarray(opt.step_counter))
                check((ks, kc) == (scale, counter), f"{policy}: Keras' dynamic_scale / step_counter {ks} / {kc},"
                      f" mirrored's {scale} / {counter}")
                ki = int(np.asarray(opt.iterations))
                check(ki == int(iters), f"{policy}: iterations Keras {ki}, mirrored {int(iters)}")
    policies = open(os.path.join(tmp, "keras_bf16_policies.txt")).read().split()
    check(policies == ["mixed_bfloat16", "float32"], f"keras_bf16: mirrored reads the Dense policies {policies}")
    theirs = np.loadtxt(os.path.join(tmp, "keras_bf16_pred.csv"), delimiter=",", dtype="float32")
    diff = float(np.max(np.abs(theirs - want_k)) / max(1.0, float(np.max(np.abs(want_k)))))
    check(diff <= 3e-2, f"keras_bf16: mirrored's predictions match Keras' within 3e-2 (relative {diff:.2e})")


R_VARIABLE = r"""
args <- commandArgs(TRUE); out <- args[1]
lib <- file.path(args[2], ".lib")
if (dir.exists(lib)) .libPaths(c(lib, .libPaths()))
library(mirrored)
read <- function(name, dims) {
  v <- scan(file.path(out, name), quiet = TRUE)
  aperm(array(v, rev(dims)), rev(seq_along(dims)))  # numpy writes row-major
}
write <- function(a, name) {
  if (is.null(dim(a))) dim(a) <- length(a)
  cat(as.vector(aperm(a, rev(seq_along(dim(a))))), file = file.path(out, name), sep = "\n")
}
m <- load_model(file.path(out, "keras_variable.keras"))
writeLines(as.character(is.na(m$input$shape)), file.path(out, "variable_input.txt"))
for (len in c(7, 3)) {
  x <- read(paste0("x", len, ".txt"), c(5, len))
  write(predict(m, x, verbose = 0), paste0("ours_pred", len, ".txt"))
}
m |> compile(optimizer = optimizer_sgd(0.5), loss = "mse")
for (len in c(7, 19, 3)) {
  train_on_batch(m, read(paste0("x", len, ".txt"), c(5, len)), read(paste0("y", len, ".txt"), c(5, len, 3)))
}
w <- get_weights(m)
write(w[[1]], "ours_embeddings.txt")
write(w[[2]], "ours_kernel.txt")
save_model(m, file.path(out, "ours_variable.keras"))
"""


def check_variable_length(keras, np):
    """A model on a variable-length input (Input(shape=(None,))): saved by
    Keras, mirrored loads it, predicts what Keras predicts at two lengths and
    trains on batches of lengths 7, 19 and 3 to Keras' weights; the model
    mirrored saves loads in Keras with its None axis."""
    tmp = tempfile.mkdtemp(prefix="mirrored-interop-variable-")
    rng = np.random.default_rng(4)
    xs, ys = {}, {}
    for n in (7, 19, 3):
        xs[n] = rng.integers(0, 10, (5, n)).astype("int32")
        ys[n] = rng.standard_normal((5, n, 3)).astype("float32")
        np.savetxt(os.path.join(tmp, f"x{n}.txt"), xs[n].reshape(-1), fmt="%d")
        np.savetxt(os.path.join(tmp, f"y{n}.txt"), ys[n].reshape(-1), fmt="%.9g")
    inp = keras.Input(shape=(None,), dtype="int32")
    h = keras.layers.Embedding(10, 4)(inp)
    km = keras.Model(inp, keras.layers.Dense(3, activation="tanh")(h))
    km.save(os.path.join(tmp, "keras_variable.keras"))
    want = {n: np.asarray(km.predict(xs[n], verbose=0)) for n in (7, 3)}
    km.compile(optimizer=keras.optimizers.SGD(0.5), loss="mse")
    for n in (7, 19, 3):
        km.train_on_batch(xs[n], ys[n])
    rfile = os.path.join(tmp, "make.R")
    with open(rfile, "w") as f:
        f.write(R_VARIABLE)
    subprocess.run(["Rscript", rfile, tmp, ROOT], check=True)
    check(open(os.path.join(tmp, "variable_input.txt")).read().split() == ["TRUE"],
          "variable length: mirrored loads Keras' Input(shape=(None,)) with its None axis")
    for n in (7, 3):
        ours = np.loadtxt(os.path.join(tmp, f"ours_pred{n}.txt")).reshape(want[n].shape)
        diff = float(np.max(np.abs(ours - want[n])))
        check(diff <= 1e-5, f"variable length: mirrored predicts Keras' outputs at length {n} (max abs diff {diff:.2e})")
    emb, kernel = [np.asarray(v) for v in km.weights[:2]]
    for name, theirs in [("embeddings", emb), ("kernel", kernel)]:
        ours = np.loadtxt(os.path.join(tmp, f"ours_{name}.txt")).reshape(theirs.shape)
        diff = float(np.max(np.abs(ours - theirs)))
        check(diff <= 1e-5, f"variable length: after lengths 7, 19, 3 the {name} match Keras' (max abs diff {diff:.2e})")
    back = keras.saving.load_model(os.path.join(tmp, "ours_variable.keras"))
    check(tuple(back.input.shape) == (None, None),
          f"variable length: Keras loads mirrored's model with input shape {tuple(back.input.shape)}")
    diff = float(np.max(np.abs(np.asarray(back.predict(xs[19], verbose=0)) - np.asarray(km.predict(xs[19], verbose=0)))))
    check(diff <= 1e-5, f"variable length: Keras predicts with mirrored's trained model at length 19 (max abs diff {diff:.2e})")


if __name__ == "__main__":
    sys.exit(main())
