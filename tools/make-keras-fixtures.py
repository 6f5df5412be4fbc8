#!/usr/bin/env python3
"""Writes the Keras-written .keras fixtures that the R suite loads
(tests/testthat/fixtures/keras/): small trained models of the layers mirrored
supports, each with an input matrix (<name>_x.csv) and Keras' predictions
(<name>_y.csv). Needs keras 3 (any backend) and numpy.

    python3 tools/make-keras-fixtures.py [OUT_DIR]
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import keras  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "tests", "testthat", "fixtures", "keras")


def save(name, model, x):
    os.makedirs(OUT, exist_ok=True)
    model.save(os.path.join(OUT, name + ".keras"))
    flat = x.reshape(x.shape[0], -1)
    np.savetxt(os.path.join(OUT, name + "_x.csv"), flat, delimiter=",", fmt="%.9g")
    np.savetxt(os.path.join(OUT, name + "_y.csv"), model.predict(x, verbose=0), delimiter=",", fmt="%.9g")


def main():
    keras.utils.set_random_seed(7)
    rng = np.random.default_rng(7)
    x = rng.random((32, 4)).astype("float32")
    y = (x[:, 0] > x[:, 1]).astype("int32") + (x[:, 2] > 0.5).astype("int32")

    inp = keras.Input(shape=(4,))
    h = keras.layers.Dense(8, activation="relu")(inp)
    h = keras.layers.Dropout(0.2, seed=3)(h)
    h = keras.layers.Activation("tanh")(h)
    out = keras.layers.Dense(3)(h)
    m = keras.Model(inp, out)
    m.compile(optimizer=keras.optimizers.Adam(0.01, amsgrad=True),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=["accuracy", keras.metrics.SparseCategoricalAccuracy()])
    m.fit(x, y, epochs=2, batch_size=8, verbose=0)
    save("functional_adam", m, x)

    xs = x.reshape(32, 2, 2)
    s = keras.Sequential([keras.Input(shape=(2, 2)), keras.layers.Flatten(),
                          keras.layers.Dense(6, activation="sigmoid"),
                          keras.layers.Dense(3, activation="softmax", use_bias=False)])
    s.compile(optimizer=keras.optimizers.RMSprop(0.01, momentum=0.5, centered=True),
              loss="categorical_crossentropy", metrics=[keras.metrics.CategoricalAccuracy()])
    s.fit(xs, np.eye(3)[y], epochs=2, batch_size=8, verbose=0)
    save("sequential_rmsprop", s, xs)

    inp = keras.Input(shape=(4,))
    out = keras.layers.Dense(1)(keras.layers.Dense(5, activation="gelu")(inp))
    g = keras.Model(inp, out)
    g.compile(optimizer=keras.optimizers.SGD(0.05, momentum=0.9, nesterov=True), loss="mse", metrics=["mae"])
    g.fit(x, x[:, :1] + x[:, 1:2], epochs=2, batch_size=8, verbose=0)
    save("functional_sgd", g, x)

    # BatchNormalization (moving statistics, non-trainable weights) and Add
    # (a layer of two inputs).
    inp = keras.Input(shape=(4,))
    h = keras.layers.Dense(6)(inp)
    h = keras.layers.BatchNormalization(momentum=0.8)(h)
    h = keras.layers.Activation("relu")(h)
    skip = keras.layers.Dense(6, use_bias=False)(inp)
    h = keras.layers.Add()([h, skip])
    out = keras.layers.Dense(3)(h)
    b = keras.Model(inp, out)
    b.compile(optimizer=keras.optimizers.Adam(0.01),
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    b.fit(x, y, epochs=3, batch_size=8, verbose=0)
    save("functional_bn", b, x)


if __name__ == "__main__":
    main()
