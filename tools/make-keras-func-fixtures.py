#!/usr/bin/env python3
"""Writes the Keras-written .keras fixtures of the functional API that the R
suite loads (tests/testthat/fixtures/keras/func_*): a model of two inputs and
two outputs, one with a shared layer (one Dense called three times), one
with dict outputs, and models nested in models (a Functional model of two
outputs called twice and a Sequential model, in a Functional model; a
Sequential model in a Sequential model), each trained a little, with their inputs (<name>_x<k>.csv) and Keras'
predictions (<name>_y<k>.csv). Needs keras 3 (any backend) and numpy.

    python3 tools/make-keras-func-fixtures.py [OUT_DIR]
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import keras  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "tests", "testthat", "fixtures", "keras")


def save(name, model, xs):
    os.makedirs(OUT, exist_ok=True)
    model.save(os.path.join(OUT, name + ".keras"))
    for k, x in enumerate(xs, 1):
        np.savetxt(os.path.join(OUT, f"{name}_x{k}.csv"), x, delimiter=",", fmt="%.9g")
    ys = model.predict(xs if len(xs) > 1 else xs[0], verbose=0)
    if not isinstance(ys, (list, tuple)):
        ys = [ys]
    for k, y in enumerate(ys, 1):
        np.savetxt(os.path.join(OUT, f"{name}_y{k}.csv"), y, delimiter=",", fmt="%.9g")


def main():
    keras.utils.set_random_seed(11)
    rng = np.random.default_rng(11)
    n = 16
    xa = rng.random((n, 3)).astype("float32")
    xb = rng.random((n, 2)).astype("float32")

    a = keras.Input(shape=(3,), name="in_a")
    b = keras.Input(shape=(2,), name="in_b")
    h = keras.layers.Dense(4, activation="tanh", name="h_a")(a)
    g = keras.layers.Dense(4, name="h_b")(b)
    s = keras.layers.Add(name="sum")([h, g])
    reg = keras.layers.Dense(2, name="reg")(s)
    cls = keras.layers.Dense(3, name="cls")(h)
    m = keras.Model([a, b], [reg, cls], name="two_io")
    m.compile(optimizer=keras.optimizers.Adam(0.01), loss=["mse", keras.losses.SparseCategoricalCrossentropy(from_logits=True)],
              metrics=[["mae"], ["accuracy"]], loss_weights=[0.5, 2.0])
    m.fit([xa, xb], [rng.random((n, 2)), rng.integers(0, 3, n)], epochs=2, batch_size=8, verbose=0)
    save("func_two_io", m, [xa, xb])

    x = keras.Input(shape=(3,), name="x")
    x2 = keras.Input(shape=(3,), name="x2")
    d = keras.layers.Dense(3, activation="tanh", name="shared")
    y = keras.layers.Add(name="add")([d(d(x)), d(x2)])
    out = keras.layers.Dense(2, name="head")(y)
    m = keras.Model([x, x2], out, name="shared_model")
    m.compile(optimizer="sgd", loss="mse")
    m.fit([xa, xa[::-1]], rng.random((n, 2)), epochs=2, batch_size=8, verbose=0)
    save("func_shared", m, [xa, xa[::-1].copy()])

    # Dict outputs: named by their keys, compiled with a dict of losses.
    x = keras.Input(shape=(3,), name="x")
    m = keras.Model(x, {"p": keras.layers.Dense(2, name="d1")(x), "q": keras.layers.Dense(1, name="d2")(x)})
    m.compile(optimizer="sgd", loss={"p": "mse", "q": "mse"}, loss_weights={"p": 1.0, "q": 3.0})
    m.fit(xa, {"p": rng.random((n, 2)), "q": rng.random((n, 1))}, epochs=1, verbose=0)
    os.makedirs(OUT, exist_ok=True)
    m.save(os.path.join(OUT, "func_dict_outputs.keras"))
    np.savetxt(os.path.join(OUT, "func_dict_outputs_x1.csv"), xa, delimiter=",", fmt="%.9g")
    ys = m.predict(xa, verbose=0)
    for k in ("p", "q"):
        np.savetxt(os.path.join(OUT, f"func_dict_outputs_{k}.csv"), ys[k], delimiter=",", fmt="%.9g")

    # Nested models: the inner Functional model is called twice (its second
    # output is a model output: output_layers ["inner", 2, 1], Keras counting
    # a Functional model's calls from 1 there), then a nested Sequential one.
    i = keras.Input(shape=(3,), name="in_inner")
    h = keras.layers.Dense(4, activation="tanh", name="inner_h")(i)
    inner = keras.Model(i, [keras.layers.Dense(2, name="inner_a")(h), keras.layers.Dense(1, name="inner_b")(h)],
                        name="inner")
    head = keras.Sequential([keras.Input(shape=(2,)), keras.layers.Dense(2, activation="relu", name="head_d")],
                            name="head")
    x = keras.Input(shape=(3,), name="x")
    x2 = keras.Input(shape=(3,), name="x2")
    a1, _ = inner(x)
    a2, b2 = inner(x2)
    out = head(keras.layers.Add(name="add")([a1, a2]))
    m = keras.Model([x, x2], [out, b2], name="nested")
    m.compile(optimizer="sgd", loss=["mse", "mse"])
    m.fit([xa, xa[::-1]], [rng.random((n, 2)), rng.random((n, 1))], epochs=2, batch_size=8, verbose=0)
    save("func_nested", m, [xa, xa[::-1].copy()])

    m = keras.Sequential([keras.Input(shape=(3,), name="sx"),
                          keras.Sequential([keras.layers.Dense(4, activation="relu", name="body_d")], name="body"),
                          keras.layers.Dense(2, name="out_d")], name="nested_seq")
    m.compile(optimizer="adam", loss="mse")
    m.fit(xa, rng.random((n, 2)), epochs=2, batch_size=8, verbose=0)
    save("func_nested_seq", m, [xa])


if __name__ == "__main__":
    main()
