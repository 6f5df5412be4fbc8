#!/usr/bin/env python3
"""Writes the fixtures of frozen layers (tests/testthat/fixtures/keras/freeze_*):
for a small MLP and a small convnet, each with some layers frozen (a frozen
BatchNormalization among them), the model before training
(freeze_<name>_init.keras, trainable flags in its config), the data
(freeze_<name>_x.csv rows, freeze_<name>_xshape.txt, freeze_<name>_y.csv) and
the model after Keras 3 trained it (freeze_<name>_trained.keras): Adam, mse,
batch 8, no shuffling, 2 epochs of 32 samples (8 steps). The R suite loads
the first, trains it the same way and compares its weights with the second.

    KERAS_BACKEND=tensorflow python3 tools/make-keras-fixtures-freeze.py [OUT_DIR]
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import keras  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "tests", "testthat", "fixtures", "keras")
L = keras.layers


def write(name, model, x, y, lr):
    os.makedirs(OUT, exist_ok=True)
    base = os.path.join(OUT, "freeze_" + name)
    # Non-trivial moving statistics, so that a BatchNormalization run in
    # training mode by mistake would give other numbers.
    rng = np.random.default_rng(7)
    for layer in model.layers:
        if isinstance(layer, L.BatchNormalization):
            c = layer.moving_mean.shape[0]
            layer.moving_mean.assign(rng.normal(0.0, 0.5, c).astype("float32"))
            layer.moving_variance.assign(rng.uniform(0.5, 2.0, c).astype("float32"))
    model.save(base + "_init.keras")
    np.savetxt(base + "_x.csv", x.reshape(x.shape[0], -1), delimiter=",", fmt="%.9g")
    with open(base + "_xshape.txt", "w") as f:
        f.write(" ".join(str(d) for d in x.shape[1:]) + "\n")
    np.savetxt(base + "_y.csv", y, delimiter=",", fmt="%.9g")
    before = [w.copy() for w in model.get_weights()]
    model.compile(optimizer=keras.optimizers.Adam(lr), loss="mse")
    model.fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0)
    after = model.get_weights()
    # The frozen variables (every variable of a frozen layer) did not move.
    for layer in model.layers:
        if not layer.trainable:
            for v in layer.weights:
                i = [id(w) for w in model.weights].index(id(v))
                assert np.array_equal(before[i], after[i]), (name, v.path)
    model.save(base + "_trained.keras")


def main():
    rng = np.random.default_rng(13)
    keras.utils.set_random_seed(13)

    # MLP: frozen Dense, frozen BatchNormalization, trained Dense, frozen
    # Dense, trained head.
    x = rng.standard_normal((32, 6)).astype("float32")
    y = rng.standard_normal((32, 2)).astype("float32")
    inp = keras.Input(shape=(6,), name="x")
    h = L.Dense(8, activation="relu", name="d1", trainable=False)(inp)
    h = L.BatchNormalization(name="bn", trainable=False)(h)
    h = L.Dense(8, activation="tanh", name="d2")(h)
    h = L.Dense(5, activation="relu", name="d3", trainable=False)(h)
    out = L.Dense(2, name="head")(h)
    write("mlp", keras.Model(inp, out, name="mlp"), x, y, 0.01)

    # Convnet: trained conv, frozen BatchNormalization, frozen conv, a
    # trained BatchNormalization (training mode), trained head.
    x = rng.standard_normal((32, 7, 7, 2)).astype("float32")
    y = rng.standard_normal((32, 3)).astype("float32")
    inp = keras.Input(shape=(7, 7, 2), name="img")
    h = L.Conv2D(4, 3, padding="same", name="c1")(inp)
    h = L.BatchNormalization(name="bn1", trainable=False)(h)
    h = L.Activation("relu", name="r1")(h)
    h = L.Conv2D(5, 3, name="c2", activation="relu", trainable=False)(h)
    h = L.MaxPooling2D(2, name="pool")(h)
    h = L.BatchNormalization(name="bn2")(h)
    h = L.Flatten(name="flat")(h)
    out = L.Dense(3, name="head")(h)
    write("cnn", keras.Model(inp, out, name="cnn"), x, y, 0.005)


if __name__ == "__main__":
    main()
