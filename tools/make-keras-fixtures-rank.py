#!/usr/bin/env python3
"""Writes the Keras 3 fixtures of losses and metrics on outputs of rank > 2
(tests/testthat/fixtures/rank/): per case, a Dense layer applied to the last
axis of sequences (samples x steps x features) or images (samples x height x
width x channels), with fixed initial weights, trained by SGD for STEPS
full-batch steps; the loss and every metric of each step (Keras' history) and
the final weights. Keras reduces a loss over the last axis and divides by the
number of loss values (samples x positions), and "temporal" sample weights
weigh each position. tests/testthat/test-losses-rank.R trains the same model
in mirrored on 1 and 3 replicas and compares.

Files per case: <case>_x.csv (samples x features per sample, row-major),
<case>_y.csv, <case>_sw.csv (when weighted), <case>_kernel0.csv,
<case>_bias0.csv, <case>_history.csv (a header of Keras' log names, one row
per step), <case>_kernel.csv, <case>_bias.csv. cases.csv lists the cases.
Needs keras 3 with the TensorFlow backend, and numpy.

    python3 tools/make-keras-fixtures-rank.py [OUT_DIR]
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
import numpy as np  # noqa: E402
import keras  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "tests", "testthat", "fixtures", "rank")
ROWS, STEPS = 12, 4
L, M = keras.losses, keras.metrics

# (case, per-sample input shape, units, activation, loss, target kind,
#  sample weights: None | "sample" | "position", metrics, weighted metrics, lr)
CASES = [
    ("seq_mse", (5, 3), 2, "linear", "mse", "real", "sample", ["mae"], [], 0.1),
    ("seq_huber", (5, 3), 2, "linear", L.Huber(delta=0.6), "real", None,
     ["mse", M.RootMeanSquaredError()], [], 0.1),
    ("seq_sparse_temporal", (5, 3), 4, "softmax", L.SparseCategoricalCrossentropy(), "labels",
     "position", [M.SparseCategoricalAccuracy()], [M.SparseCategoricalAccuracy(name="wacc")],
     0.5),
    ("seq_sparse_ignore", (6, 2), 3, "linear",
     L.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1), "labels_void", None,
     [], [], 0.5),
    ("pixel_cce", (4, 3, 2), 3, "softmax", L.CategoricalCrossentropy(), "onehot", "position",
     [M.CategoricalAccuracy()], [], 0.5),
    ("pixel_bce", (4, 3, 2), 1, "sigmoid", L.BinaryCrossentropy(), "binary", "sample",
     [M.BinaryAccuracy(), M.Precision(), M.Recall()], [], 0.5),
]


def targets(kind, rng, lead, units):
    shape = (ROWS,) + lead
    if kind == "real":
        return rng.standard_normal(shape + (units,))
    if kind == "binary":
        return (rng.uniform(size=shape + (units,)) > 0.5).astype("float64")
    if kind == "onehot":
        return np.eye(units)[rng.integers(0, units, shape)]
    if kind == "labels":
        return rng.integers(0, units, shape).astype("float64")
    if kind == "labels_void":
        y = rng.integers(0, units, shape).astype("float64")
        y[rng.uniform(size=shape) < 0.3] = -1
        return y
    raise ValueError(kind)


def write(name, a):
    a = np.asarray(a, dtype="float64")
    np.savetxt(os.path.join(OUT, name + ".csv"), a.reshape(a.shape[0], -1), delimiter=",",
               fmt="%.17g")


def main():
    os.makedirs(OUT, exist_ok=True)
    rows = ["case,shape,units,activation,weights,learning_rate,steps,rows"]
    for i, (case, shape, units, act, loss, kind, weights, metrics, wmetrics, lr) in \
            enumerate(CASES):
        rng = np.random.default_rng(100 + i)
        x = rng.standard_normal((ROWS,) + shape)
        y = targets(kind, rng, shape[:-1], units)
        feats = shape[-1]
        k0 = rng.uniform(-0.6, 0.6, (feats, units))
        b0 = rng.uniform(-0.2, 0.2, (units,))
        inp = keras.Input(shape)
        model = keras.Model(inp, keras.layers.Dense(units, activation=act)(inp))
        model.set_weights([k0, b0])
        model.compile(optimizer=keras.optimizers.SGD(lr), loss=loss, metrics=metrics,
                      weighted_metrics=wmetrics)
        sw = None
        if weights == "sample":
            # Keras broadcasts per-sample weights over the positions only
            # when given with a trailing axis of 1 per position axis (an
            # (n,) vector is a shape error there); mirrored takes both.
            sw = rng.uniform(0.2, 2.0, (ROWS,) + (1,) * (len(shape) - 1))
        elif weights == "position":
            sw = rng.uniform(0.0, 2.0, (ROWS,) + shape[:-1])
        h = model.fit(x, y, sample_weight=sw, batch_size=ROWS, epochs=STEPS, shuffle=False,
                      verbose=0)
        keys = list(h.history.keys())
        hist = np.column_stack([h.history[k] for k in keys])
        np.savetxt(os.path.join(OUT, case + "_history.csv"), hist, delimiter=",", fmt="%.17g",
                   header=",".join(keys), comments="")
        write(case + "_x", x)
        write(case + "_y", y)
        if sw is not None:
            write(case + "_sw", sw)
        write(case + "_kernel0", k0)
        write(case + "_bias0", b0.reshape(1, -1))
        k, b = model.get_weights()
        write(case + "_kernel", k)
        write(case + "_bias", b.reshape(1, -1))
        rows.append(f"{case},{' '.join(map(str, shape))},{units},{act},{weights or 'none'},"
                    f"{lr},{STEPS},{ROWS}")
    with open(os.path.join(OUT, "cases.csv"), "w") as f:
        f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
