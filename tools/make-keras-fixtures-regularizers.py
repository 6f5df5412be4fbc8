#!/usr/bin/env python3
"""Writes the Keras 3 fixtures of the regularizer and constraint tests
(tests/testthat/fixtures/regularizers/): small models with weight and
activity regularizers and weight constraints, saved untrained (<name>.keras),
then trained by Keras from those weights on fixed data (<name>_x.csv,
<name>_y.csv; no shuffling). Keras' per-epoch logged losses go to
<name>_loss.csv and its final weights to <name>_weights.txt (one weight per
line, flattened in row-major order, in get_weights() order). The optimizer
and batch size of each case are in CASES below and in test-regularizers.R.
Needs keras 3 (TensorFlow backend) and numpy.

    python3 tools/make-keras-fixtures-regularizers.py [OUT_DIR]
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
import numpy as np  # noqa: E402
import keras  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "tests", "testthat", "fixtures",
    "regularizers")
L = keras.layers
R = keras.regularizers
C = keras.constraints


def dense_penalties():
    inp = keras.Input(shape=(5,))
    h = L.Dense(4, activation="tanh", kernel_regularizer=R.L2(0.05), bias_regularizer=R.L1(0.02),
                activity_regularizer=R.L1L2(l1=0.01, l2=0.02))(inp)
    out = L.Dense(2, kernel_regularizer=R.L1L2(l1=0.01, l2=0.03), activity_regularizer="l2")(h)
    return keras.Model(inp, out), (5,), 2, keras.optimizers.SGD(0.1), 5


def dense_orthogonal():
    inp = keras.Input(shape=(5,))
    h = L.Dense(6, activation="relu",
                kernel_regularizer=R.OrthogonalRegularizer(factor=0.1, mode="rows"))(inp)
    out = L.Dense(3, kernel_regularizer=R.OrthogonalRegularizer(factor=0.05, mode="columns"))(h)
    return keras.Model(inp, out), (5,), 3, keras.optimizers.Adam(0.01), 12


def dense_constraints():
    inp = keras.Input(shape=(5,))
    h = L.Dense(4, activation="tanh", kernel_constraint=C.MaxNorm(0.5),
                bias_constraint=C.NonNeg())(inp)
    out = L.Dense(3, kernel_constraint=C.UnitNorm(axis=1),
                  bias_constraint=C.MinMaxNorm(min_value=0.2, max_value=0.6, rate=0.5))(h)
    return keras.Model(inp, out), (5,), 3, keras.optimizers.SGD(0.1, momentum=0.9), 5


def conv2d():
    inp = keras.Input(shape=(4, 4, 2))
    h = L.Conv2D(3, 2, activation="relu", kernel_regularizer=R.L2(0.01),
                 bias_regularizer=R.L1(0.01), activity_regularizer=R.L2(0.001),
                 kernel_constraint=C.MaxNorm(1.0, axis=[0, 1, 2]))(inp)
    out = L.Dense(2)(L.Flatten()(h))
    return keras.Model(inp, out), (4, 4, 2), 2, keras.optimizers.Adam(0.01), 5


def embedding():
    inp = keras.Input(shape=(3,))
    h = L.Embedding(10, 4, embeddings_regularizer=R.L2(0.02),
                    embeddings_constraint=C.UnitNorm(axis=1), activity_regularizer=R.L1(0.01))(inp)
    out = L.Dense(1, kernel_regularizer="l1")(L.Flatten()(h))
    return keras.Model(inp, out), (3,), 1, keras.optimizers.SGD(0.2), 5


CASES = {
    "dense_penalties": dense_penalties,
    "dense_orthogonal": dense_orthogonal,
    "dense_constraints": dense_constraints,
    "conv2d": conv2d,
    "embedding": embedding,
}
ROWS, EPOCHS = 12, 3


def main():
    os.makedirs(OUT, exist_ok=True)
    for i, (name, build) in enumerate(CASES.items()):
        keras.utils.set_random_seed(100 + i)
        model, shape, outs, opt, batch = build()
        rng = np.random.default_rng(200 + i)
        if name == "embedding":
            x = rng.integers(0, 10, size=(ROWS,) + shape).astype("float32")
        else:
            x = rng.standard_normal((ROWS,) + shape).astype("float32")
        y = rng.standard_normal((ROWS, outs)).astype("float32")
        model.save(os.path.join(OUT, name + ".keras"))
        model.compile(optimizer=opt, loss="mse")
        hist = model.fit(x, y, epochs=EPOCHS, batch_size=batch, shuffle=False, verbose=0)
        np.savetxt(os.path.join(OUT, name + "_x.csv"), x.reshape(ROWS, -1), delimiter=",",
                   fmt="%.9g")
        np.savetxt(os.path.join(OUT, name + "_y.csv"), y, delimiter=",", fmt="%.9g")
        np.savetxt(os.path.join(OUT, name + "_loss.csv"), np.array(hist.history["loss"]),
                   fmt="%.9g")
        with open(os.path.join(OUT, name + "_weights.txt"), "w") as f:
            for w in model.get_weights():
                f.write(" ".join("%.9g" % v for v in w.reshape(-1)) + "\n")
        print(name, "batch", batch, "losses", hist.history["loss"])


if __name__ == "__main__":
    main()
