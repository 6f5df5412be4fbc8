#!/usr/bin/env python3
"""Writes the Keras 3 (TensorFlow backend) fixtures of the cross-entropies'
logits semantics (tests/testthat/fixtures/logits/). On TensorFlow, Keras
computes a categorical, sparse categorical or binary cross-entropy from the
logits of the output when the loss receives the output of a softmax or
sigmoid activation itself (Keras' `_keras_logits`): a saturated softmax
model logs its true loss (no clipping of the probabilities at 1e-7) and its
gradient does not vanish. Under a mixed policy the loss's float32 cast of a
float16 output hides the logits and TensorFlow clips.

Per case: a small model with fixed weights made to saturate, trained by SGD
for STEPS full-batch steps; the loss and metrics of each step (Keras'
history) and the final weights. tests/testthat/test-losses-logits.R trains
the same model in mirrored and compares. Files per case: <case>_x.csv,
<case>_y.csv, <case>_w<i>.csv (initial weights), <case>_history.csv,
<case>_final<i>.csv; cases.csv lists the cases.
Needs keras 3 with the TensorFlow backend, and numpy.

    python3 tools/make-keras-fixtures-logits.py [OUT_DIR]
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
import numpy as np  # noqa: E402
import keras  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "tests", "testthat", "fixtures", "logits")
ROWS, STEPS = 8, 3
L, M, layers = keras.losses, keras.metrics, keras.layers


def dense(units, act, dtype=None):
    return lambda x: layers.Dense(units, activation=act, dtype=dtype)(x)


def dense_then(units, layer):
    return lambda x: layer(layers.Dense(units)(x))


# (case, per-sample input shape, output builder, loss, metrics, target kind,
#  weight scale (saturation), learning rate, policy)
CASES = [
    ("softmax_cce", (4,), dense(3, "softmax"), "categorical_crossentropy",
     [M.CategoricalCrossentropy()], "onehot", 40.0, 0.1, None),
    ("softmax_scce", (4,), dense(3, "softmax"), "sparse_categorical_crossentropy",
     [M.SparseCategoricalCrossentropy(), "accuracy"], "labels", 40.0, 0.1, None),
    ("sigmoid_bce", (4,), dense(2, "sigmoid"), "binary_crossentropy",
     [M.BinaryCrossentropy()], "binary", 40.0, 0.1, None),
    ("activation_softmax", (4,), dense_then(3, layers.Activation("softmax")),
     "categorical_crossentropy", [], "onehot", 40.0, 0.1, None),
    ("softmax_layer", (4,), dense_then(3, layers.Softmax()), "sparse_categorical_crossentropy",
     [], "labels", 40.0, 0.1, None),
    ("sigmoid_cce", (4,), dense(3, "sigmoid"), "categorical_crossentropy", [], "onehot", 40.0,
     0.1, None),
    ("softmax_bce", (4,), dense(3, "softmax"), "binary_crossentropy", [], "onehot", 40.0, 0.1,
     None),
    ("sigmoid_focal", (4,), dense(2, "sigmoid"), L.BinaryFocalCrossentropy(gamma=1.5),
     [], "binary", 40.0, 0.1, None),
    ("conv_softmax_seq", (6, 2), lambda x: layers.Conv1D(3, 2, activation="softmax")(x),
     "sparse_categorical_crossentropy", [], "labels_seq", 40.0, 0.1, None),
    ("moderate_softmax_cce", (4,), dense(3, "softmax"), "categorical_crossentropy", [],
     "onehot", 1.0, 0.5, None),
    ("mixed_softmax_cce", (4,), dense(3, "softmax"), "categorical_crossentropy", [], "onehot",
     40.0, 0.1, "mixed_float16"),
    ("mixed_float32_head", (4,), dense(3, "softmax", dtype="float32"),
     "categorical_crossentropy", [], "onehot", 40.0, 0.1, "mixed_float16"),
]


def targets(kind, rng, out_shape):
    units = out_shape[-1]
    lead = (ROWS,) + tuple(out_shape[:-1])
    if kind == "onehot":
        return np.eye(units)[rng.integers(0, units, lead)]
    if kind in ("labels", "labels_seq"):
        return rng.integers(0, units, lead).astype("float64")
    if kind == "binary":
        return (rng.uniform(size=lead + (units,)) > 0.5).astype("float64")
    raise ValueError(kind)


def write(name, a, row=False):
    """a as a CSV of its first axis by the rest (row: a vector as one row)."""
    a = np.asarray(a, dtype="float64")
    if row and a.ndim == 1:
        a = a.reshape(1, -1)
    np.savetxt(os.path.join(OUT, name + ".csv"), a.reshape(a.shape[0], -1), delimiter=",",
               fmt="%.17g")


def main():
    os.makedirs(OUT, exist_ok=True)
    rows = ["case,shape,weights,learning_rate,steps,rows,policy"]
    for i, (case, shape, build, loss, metrics, kind, scale, lr, policy) in enumerate(CASES):
        keras.mixed_precision.set_global_policy(policy or "float32")
        rng = np.random.default_rng(200 + i)
        inp = keras.Input(shape)
        model = keras.Model(inp, build(inp))
        x = rng.standard_normal((ROWS,) + shape)
        y = targets(kind, rng, model.output_shape[1:])
        w0 = [rng.uniform(-1, 1, w.shape) * (scale if w.ndim > 1 else 1.0)
              for w in model.get_weights()]
        model.set_weights(w0)
        model.compile(optimizer=keras.optimizers.SGD(lr), loss=loss, metrics=metrics)
        h = model.fit(x, y, batch_size=ROWS, epochs=STEPS, shuffle=False, verbose=0)
        keys = list(h.history.keys())
        hist = np.column_stack([h.history[k] for k in keys])
        np.savetxt(os.path.join(OUT, case + "_history.csv"), hist, delimiter=",", fmt="%.17g",
                   header=",".join(keys), comments="")
        write(case + "_x", x)
        write(case + "_y", y)
        for j, w in enumerate(w0):
            write(f"{case}_w{j}", w, row=True)
        for j, w in enumerate(model.get_weights()):
            write(f"{case}_final{j}", w, row=True)
        rows.append(f"{case},{' '.join(map(str, shape))},{len(w0)},{lr},{STEPS},{ROWS},"
                    f"{policy or 'float32'}")
    keras.mixed_precision.set_global_policy("float32")
    with open(os.path.join(OUT, "cases.csv"), "w") as f:
        f.write("\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
