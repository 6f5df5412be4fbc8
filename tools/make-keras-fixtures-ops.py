"""Reference values and gradients of Keras 3's ops on the TensorFlow backend
for tests/testthat/test-ops-composed.R: for each element-wise op, its value
and its derivative (tf.GradientTape) at a grid of float32 points, including
the points where the formulas switch branches. Writes
tests/testthat/fixtures/ops/elementwise.csv (op, x, y, dy).

    KERAS_BACKEND=tensorflow python3 tools/make-keras-fixtures-ops.py
"""
import csv
import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
import numpy as np
import tensorflow as tf
from keras import ops

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "testthat", "fixtures", "ops", "elementwise.csv")

grid = np.array([-20, -14, -13.9, -6, -3, -1.5, -1, -0.75, -0.5, -0.3, -1e-4, 0,
                 1e-4, 0.2, 0.5, 0.9, 1, 1.7, 3, 6, 7, 13.9, 14, 20], dtype=np.float32)
pos = np.array([1e-3, 0.1, 0.5, 1, 2, 7.5, 100], dtype=np.float32)

ops_grid = {
    "softplus": ops.softplus, "log_sigmoid": ops.log_sigmoid, "softsign": ops.softsign,
    "relu6": ops.relu6, "hard_sigmoid": ops.hard_sigmoid, "hard_silu": ops.hard_silu,
    "elu": ops.elu, "elu_a": lambda x: ops.elu(x, alpha=0.7), "selu": ops.selu,
    "celu": ops.celu, "celu_a": lambda x: ops.celu(x, alpha=2.0),
    "leaky_relu": ops.leaky_relu, "hard_tanh": ops.hard_tanh, "tanh_shrink": ops.tanh_shrink,
    "soft_shrink": ops.soft_shrink, "hard_shrink": ops.hard_shrink,
    "threshold": lambda x: ops.threshold(x, 0.5, -2.0), "squareplus": ops.squareplus,
    "sparse_plus": ops.sparse_plus, "expm1": ops.expm1, "exp2": ops.exp2,
    "deg2rad": ops.deg2rad, "logaddexp": lambda x: ops.logaddexp(x, 0.5 * x + 1.0),
    "heaviside": lambda x: ops.heaviside(x, 0.5),
}
ops_pos = {"reciprocal": ops.reciprocal, "rsqrt": ops.rsqrt, "log2": ops.log2, "log10": ops.log10}

rows = []
for name, f in list(ops_grid.items()) + list(ops_pos.items()):
    xs = pos if name in ops_pos else grid
    x = tf.constant(xs)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    dy = tape.gradient(y, x)
    dy = np.zeros_like(xs) if dy is None else dy.numpy()
    for xi, yi, gi in zip(xs, np.asarray(y), dy):
        rows.append([name, repr(float(xi)), repr(float(yi)), repr(float(gi))])

with open(OUT, "w", newline="") as fh:
    w = csv.writer(fh)
    w.writerow(["op", "x", "y", "dy"])
    w.writerows(rows)
print("wrote", OUT, len(rows), "rows")
