#!/usr/bin/env python3
"""Writes the Keras 3 fixtures of the losses (tests/testthat/fixtures/losses/):
for each case, a one-layer model (Dense(units, activation) on 3 inputs) with
fixed initial weights trained by SGD for STEPS full-batch steps on fixed data,
with the loss of each step and the final weights. tests/testthat/test-losses.R
trains the same model with the same loss in mirrored and compares.

Files: x.csv (the inputs, shared), and per case <case>_y.csv (targets),
<case>_sw.csv (sample weights, when the case has them), <case>_kernel0.csv /
<case>_bias0.csv (initial weights), <case>_loss.csv (the loss of each step,
Keras' history) and <case>_kernel.csv / <case>_bias.csv (final weights).
cases.csv lists the cases with their units, activation and learning rate.
keras_losses.keras: a model compiled by Keras with every loss (one output
each, KERAS_WRITTEN), which mirrored must load with the same losses.
Needs keras 3 with the TensorFlow backend, and numpy.

    python3 tools/make-keras-fixtures-losses.py [OUT_DIR]
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
import numpy as np  # noqa: E402
import keras  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "tests", "testthat", "fixtures", "losses")
ROWS, STEPS = 16, 5
L = keras.losses


def targets(kind, rng, units):
    """Targets of ROWS samples for a model of `units` outputs."""
    if kind == "real":
        return rng.standard_normal((ROWS, units))
    if kind == "positive":
        return rng.uniform(0.2, 3.0, (ROWS, units))
    if kind == "counts":
        return rng.poisson(1.5, (ROWS, units)).astype("float64")
    if kind == "binary":
        return (rng.uniform(size=(ROWS, units)) > 0.5).astype("float64")
    if kind == "signed":
        return np.where(rng.uniform(size=(ROWS, units)) > 0.5, 1.0, -1.0)
    if kind == "onehot":
        return np.eye(units)[rng.integers(0, units, ROWS)]
    if kind == "probs":
        p = rng.uniform(0.05, 1.0, (ROWS, units))
        return p / p.sum(axis=1, keepdims=True)
    if kind == "labels":
        return rng.integers(0, units, (ROWS, 1)).astype("float64")
    if kind == "labels_void":  # labels with some -1 ("void") rows
        y = rng.integers(0, units, (ROWS, 1)).astype("float64")
        y[rng.uniform(size=(ROWS, 1)) < 0.3] = -1
        return y
    raise ValueError(kind)


# (case, loss, units, activation, target kind, learning rate, sample weights?)
CASES = [
    ("huber", L.Huber(), 2, "linear", "real", 0.1, False),
    ("huber_delta", L.Huber(delta=0.5), 2, "linear", "real", 0.1, False),
    ("mae", "mae", 2, "linear", "real", 0.1, False),
    ("mape", L.MeanAbsolutePercentageError(), 2, "linear", "positive", 0.01, False),
    ("msle", "msle", 2, "softplus", "positive", 0.5, False),
    ("log_cosh", L.LogCosh(), 2, "linear", "real", 0.1, False),
    ("kld", L.KLDivergence(), 3, "softmax", "probs", 0.5, False),
    ("poisson", "poisson", 2, "softplus", "counts", 0.1, False),
    ("cosine_similarity", L.CosineSimilarity(), 3, "linear", "real", 0.5, False),
    ("hinge", L.Hinge(), 2, "tanh", "binary", 0.1, False),
    ("hinge_signed", "hinge", 2, "tanh", "signed", 0.1, False),
    ("squared_hinge", L.SquaredHinge(), 2, "tanh", "binary", 0.1, False),
    ("categorical_hinge", L.CategoricalHinge(), 3, "linear", "onehot", 0.1, False),
    ("binary_focal", L.BinaryFocalCrossentropy(), 2, "sigmoid", "binary", 0.5, False),
    ("binary_focal_balanced", L.BinaryFocalCrossentropy(
        apply_class_balancing=True, alpha=0.3, gamma=1.5, label_smoothing=0.1), 2, "sigmoid",
     "binary", 0.5, False),
    ("binary_focal_logits", L.BinaryFocalCrossentropy(from_logits=True, gamma=3.0), 2, "linear",
     "binary", 0.5, False),
    ("categorical_focal", L.CategoricalFocalCrossentropy(), 3, "softmax", "onehot", 0.5, False),
    ("categorical_focal_logits", L.CategoricalFocalCrossentropy(
        from_logits=True, alpha=0.5, gamma=1.0, label_smoothing=0.1), 3, "linear", "onehot", 0.5,
     False),
    ("bce_smoothing", L.BinaryCrossentropy(label_smoothing=0.2), 2, "sigmoid", "binary", 0.5,
     False),
    ("bce_logits_smoothing", L.BinaryCrossentropy(from_logits=True, label_smoothing=0.1), 2,
     "linear", "binary", 0.5, False),
    ("cce_smoothing", L.CategoricalCrossentropy(label_smoothing=0.1), 3, "softmax", "onehot", 0.5,
     False),
    ("cce_logits_smoothing", L.CategoricalCrossentropy(from_logits=True, label_smoothing=0.2), 3,
     "linear", "onehot", 0.5, False),
    ("sparse_ignore", L.SparseCategoricalCrossentropy(ignore_class=2), 4, "softmax", "labels",
     0.5, False),
    ("sparse_ignore_void", L.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1), 4,
     "linear", "labels_void", 0.5, False),
    ("mse_weighted", "mse", 2, "linear", "real", 0.1, True),
    ("sparse_weighted", L.SparseCategoricalCrossentropy(from_logits=True), 4, "linear", "labels",
     0.5, True),
    ("huber_weighted", L.Huber(delta=0.7), 2, "linear", "real", 0.1, True),
    ("sparse_ignore_weighted", L.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1),
     4, "linear", "labels_void", 0.5, True),
]


def write(name, a):
    a = np.asarray(a, dtype="float64")
    np.savetxt(os.path.join(OUT, name + ".csv"), a.reshape(a.shape[0], -1), delimiter=",",
               fmt="%.17g")


# Losses of a Keras-written model (keras_losses.keras): one Dense output per
# loss, so that one file carries every loss class with arguments.
KERAS_WRITTEN = [
    L.Huber(delta=0.5), "mae", L.MeanAbsolutePercentageError(), "msle", L.LogCosh(),
    L.KLDivergence(), L.Poisson(name="pois"), L.CosineSimilarity(), L.Hinge(), L.SquaredHinge(),
    L.CategoricalHinge(),
    L.BinaryFocalCrossentropy(apply_class_balancing=True, alpha=0.3, gamma=1.5, from_logits=True,
                              label_smoothing=0.1),
    L.CategoricalFocalCrossentropy(alpha=0.4, gamma=3.0, label_smoothing=0.2),
    L.BinaryCrossentropy(label_smoothing=0.2),
    L.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1),
    L.SparseCategoricalCrossentropy(from_logits=True, ignore_class=-1),
]


def save_keras_written(rng):
    inp = keras.Input(shape=(3,))
    outs = [keras.layers.Dense(3, name=f"out{k + 1}")(inp) for k in range(len(KERAS_WRITTEN))]
    model = keras.Model(inp, outs)
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss=KERAS_WRITTEN)
    x = rng.standard_normal((4, 3)).astype("float32")
    ys = [np.eye(3)[[0, 1, 2, 0]].astype("float32") for _ in KERAS_WRITTEN]
    ys[-1] = np.array([[0], [2], [-1], [1]], dtype="float32")
    model.fit(x, ys, epochs=1, verbose=0)
    model.save(os.path.join(OUT, "keras_losses.keras"))


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(13)
    x = rng.standard_normal((ROWS, 3)).astype("float32")
    write("x", x)
    index = ["case,units,activation,learning_rate,steps,weighted"]
    for case, loss, units, act, tkind, lr, weighted in CASES:
        y = targets(tkind, rng, units).astype("float32")
        sw = rng.uniform(0.0, 2.0, ROWS).astype("float32") if weighted else None
        k0 = (rng.standard_normal((3, units)) * 0.5).astype("float32")
        b0 = (rng.standard_normal(units) * 0.1).astype("float32")
        model = keras.Sequential([keras.Input(shape=(3,)), keras.layers.Dense(units, activation=act)])
        model.set_weights([k0, b0])
        model.compile(optimizer=keras.optimizers.SGD(learning_rate=lr), loss=loss)
        hist = model.fit(x, y, sample_weight=sw, batch_size=ROWS, epochs=STEPS, shuffle=False,
                         verbose=0)
        k, b = model.get_weights()
        write(case + "_y", y)
        if weighted:
            write(case + "_sw", sw.reshape(-1, 1))
        write(case + "_kernel0", k0)
        write(case + "_bias0", b0.reshape(1, -1))
        write(case + "_loss", np.array(hist.history["loss"]).reshape(-1, 1))
        write(case + "_kernel", k)
        write(case + "_bias", b.reshape(1, -1))
        index.append(f"{case},{units},{act},{lr!r},{STEPS},{str(weighted).upper()}")
    with open(os.path.join(OUT, "cases.csv"), "w") as f:
        f.write("\n".join(index) + "\n")
    save_keras_written(rng)
    print(f"wrote {len(CASES)} cases and keras_losses.keras to {OUT}")


if __name__ == "__main__":
    main()
