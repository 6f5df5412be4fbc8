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
    """<name>.keras, the input flattened to rows (<name>_x.csv), its per-sample
    shape (<name>_xshape.txt) and Keras' predictions flattened (<name>_y.csv)."""
    os.makedirs(OUT, exist_ok=True)
    model.save(os.path.join(OUT, name + ".keras"))
    flat = x.reshape(x.shape[0], -1)
    np.savetxt(os.path.join(OUT, name + "_x.csv"), flat, delimiter=",", fmt="%.9g")
    with open(os.path.join(OUT, name + "_xshape.txt"), "w") as f:
        f.write(" ".join(str(d) for d in x.shape[1:]) + "\n")
    pred = model.predict(x, verbose=0)
    np.savetxt(os.path.join(OUT, name + "_y.csv"), pred.reshape(pred.shape[0], -1), delimiter=",",
               fmt="%.9g")


def trained(model, x, y, loss="mse"):
    """One short fit, so that no weight is left at its initial value."""
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss=loss)
    model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    return model


def layer_fixtures(rng):
    """One model per family of the layers issue 12 adds (file names layers_*)."""
    L = keras.layers
    # Convolution and pooling, 2-D: both paddings, strides, dilation, groups.
    x = rng.standard_normal((24, 9, 9, 2)).astype("float32")
    inp = keras.Input(shape=(9, 9, 2))
    h = L.Conv2D(4, 3, padding="same", activation="relu")(inp)
    h = L.Conv2D(6, (3, 2), strides=(2, 1), padding="valid")(h)
    h = L.Conv2D(6, 2, dilation_rate=2, padding="same", groups=2, activation="tanh")(h)
    a = L.MaxPooling2D(2, padding="same")(h)
    b = L.AveragePooling2D((2, 3), strides=1, padding="same")(h)
    b = L.AveragePooling2D(2)(b)
    h = L.Concatenate()([L.GlobalAveragePooling2D()(a), L.GlobalMaxPooling2D()(b)])
    m = keras.Model(inp, L.Dense(3)(h))
    save("layers_conv2d", trained(m, x, rng.standard_normal((24, 3))), x)

    # Convolution and pooling, 1-D.
    x = rng.standard_normal((24, 12, 3)).astype("float32")
    inp = keras.Input(shape=(12, 3))
    h = L.Conv1D(5, 3, padding="same", dilation_rate=2, activation="relu")(inp)
    h = L.Conv1D(4, 2, strides=2, use_bias=False)(h)
    a = L.GlobalMaxPooling1D()(L.MaxPooling1D(2)(h))
    b = L.GlobalAveragePooling1D(keepdims=True)(L.AveragePooling1D(3, strides=1, padding="same")(h))
    h = L.Concatenate()([a, L.Flatten()(b)])
    m = keras.Model(inp, L.Dense(2)(h))
    save("layers_conv1d", trained(m, x, rng.standard_normal((24, 2))), x)

    # Shape layers.
    x = rng.standard_normal((24, 12)).astype("float32")
    inp = keras.Input(shape=(12,))
    h = L.Reshape((3, 4))(L.Dense(12)(inp))
    h = L.Permute((2, 1))(h)                      # (4, 3)
    h = L.ZeroPadding1D((1, 2))(h)                # (7, 3)
    h = L.Cropping1D((2, 1))(h)                   # (4, 3)
    h = L.UpSampling1D(2)(h)                      # (8, 3)
    h = L.Reshape((4, 2, 3))(h)
    h = L.ZeroPadding2D(((1, 0), (2, 1)))(h)      # (5, 5, 3)
    h = L.Cropping2D(((0, 1), (1, 1)))(h)         # (4, 3, 3)
    h = L.UpSampling2D((1, 2))(h)                 # (4, 6, 3)
    h = L.Reshape((-1,))(h)
    h = L.RepeatVector(2)(L.Dense(3)(h))          # (2, 3)
    m = keras.Model(inp, L.Flatten()(h))
    save("layers_reshaping", trained(m, x, rng.standard_normal((24, 6))), x)

    # Merge layers, on branches of one input.
    inp = keras.Input(shape=(12,))
    a = L.Dense(5)(inp)
    b = L.Dense(5, activation="tanh")(inp)
    c = L.Dense(5)(inp)
    merged = [L.Subtract()([a, b]), L.Multiply()([a, b, c]), L.Average()([a, b, c]),
              L.Maximum()([a, b]), L.Minimum()([b, c]), L.Dot(axes=1)([a, c]),
              L.Dot(axes=1, normalize=True)([b, c])]
    h = L.Concatenate(axis=-1)(merged)
    m = keras.Model(inp, L.Dense(2)(h))
    save("layers_merging", trained(m, x, rng.standard_normal((24, 2))), x)

    # Activations: every name, and the parametrised layers.
    inp = keras.Input(shape=(12,))
    outs = []
    for act in ["elu", "selu", "silu", "swish", "leaky_relu", "relu6", "softplus", "softsign",
                "hard_sigmoid", "hard_silu", "exponential", "mish", "log_softmax"]:
        outs.append(L.Dense(3, activation=act)(inp))
    h = L.Dense(4)(inp)
    outs += [L.ReLU(max_value=1.5, negative_slope=0.1, threshold=0.2)(h), L.LeakyReLU(0.3)(h),
             L.ELU(alpha=0.7)(h), L.Softmax()(h)]
    m = keras.Model(inp, L.Concatenate()(outs))
    save("layers_activations", trained(m, x * 0.5, rng.standard_normal((24, 3 * 13 + 16)) * 0.1), x * 0.5)

    # Normalization and scaling.
    x3 = (rng.standard_normal((24, 4, 3)) * 3 + 1).astype("float32")
    norm = L.Normalization(axis=-1)
    norm.adapt(x3)
    inp = keras.Input(shape=(4, 3))
    h = L.Rescaling(0.5, offset=0.25)(norm(inp))
    h = L.LayerNormalization(epsilon=1e-3)(L.Dense(6)(h))
    h = L.LayerNormalization(center=False, rms_scaling=True)(L.Dense(5)(h))
    h = L.Normalization(mean=[1.0, 2.0], variance=[4.0, 0.25], invert=True)(L.Dense(2)(L.Flatten()(h)))
    m = keras.Model(inp, h)
    save("layers_normalization", trained(m, x3, rng.standard_normal((24, 2))), x3)

    # Embedding: integer indices in, vectors out.
    xi = rng.integers(0, 20, (24, 5)).astype("float32")
    inp = keras.Input(shape=(5,))
    h = L.Embedding(20, 4)(inp)
    m = keras.Model(inp, L.Dense(2)(L.Flatten()(h)))
    save("layers_embedding", trained(m, xi, rng.standard_normal((24, 2))), xi)


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

    layer_fixtures(np.random.default_rng(12))


if __name__ == "__main__":
    main()
