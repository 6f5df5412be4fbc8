#!/usr/bin/env python3
"""Writes the Keras 3 fixtures of sample weights and class weights that
tests/testthat/test-sample-weights.R compares against
(tests/testthat/fixtures/weights/<case>.csv): a small model trained several
steps with `sample_weight` or `class_weight`, from initial weights set here.

Each file is long-format CSV, one value per line: name,row,col,value (0-based
row and column; vectors have col 0). Names: x, y, sample_weight (when given),
class_weight (row = class), init_<k> and final_<k> (the k-th weight array of
model.get_weights(), kernels in_dim x out_dim), loss (row = epoch: Keras'
logged epoch loss), and eval_loss with eval_sample_weight (evaluate() of the
final model with those weights). Needs keras 3 (any backend) and numpy.

    python3 tools/make-keras-fixtures-weights.py [OUT_DIR]
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import keras  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "tests", "testthat", "fixtures", "weights")


def write(name, arrays):
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, name + ".csv"), "w") as f:
        f.write("name,row,col,value\n")
        for key, a in arrays:
            a = np.asarray(a, dtype="float64")
            a = a.reshape(a.shape[0], -1) if a.ndim >= 1 else a.reshape(1, 1)
            for i in range(a.shape[0]):
                for j in range(a.shape[1]):
                    f.write("%s,%d,%d,%.9g\n" % (key, i, j, a[i, j]))


def model_of(units_out, activation=None):
    inp = keras.Input(shape=(5,))
    h = keras.layers.Dense(4, activation="tanh")(inp)
    return keras.Model(inp, keras.layers.Dense(units_out, activation=activation)(h))


def run(name, rng, model, loss, optimizer, y, sample_weight=None, class_weight=None, epochs=3):
    x = rng.standard_normal((22, 5)).astype("float32")
    init = [rng.uniform(-0.6, 0.6, w.shape).astype("float32") for w in model.get_weights()]
    model.set_weights(init)
    model.compile(optimizer=optimizer, loss=loss)
    hist = model.fit(x, y, batch_size=8, epochs=epochs, shuffle=False, verbose=0,
                     sample_weight=sample_weight, class_weight=class_weight)
    eval_sw = rng.uniform(0.0, 2.0, (x.shape[0],)).astype("float32")
    eval_loss = model.evaluate(x, y, sample_weight=eval_sw, batch_size=8, verbose=0)
    arrays = [("x", x), ("y", y)]
    if sample_weight is not None:
        arrays.append(("sample_weight", sample_weight))
    if class_weight is not None:
        table = np.ones(max(class_weight) + 1)
        for c, w in class_weight.items():
            table[c] = w
        arrays.append(("class_weight", table))
    arrays += [("init_%d" % k, w) for k, w in enumerate(init)]
    arrays += [("final_%d" % k, w) for k, w in enumerate(model.get_weights())]
    arrays += [("loss", np.array(hist.history["loss"])), ("eval_sample_weight", eval_sw),
               ("eval_loss", np.array([eval_loss]))]
    write(name, arrays)


def main():
    keras.utils.set_random_seed(7)
    rng = np.random.default_rng(13)
    n = 22  # batches of 8, 8 and 6
    y3 = rng.integers(0, 3, n).astype("float32")
    # Weights in [0, 2] with a zero and a negative one (Keras does not check
    # their sign).
    sw = rng.uniform(0.0, 2.0, n).astype("float32")
    sw[3] = 0.0
    sw[10] = -0.5
    run("sw_sgd_sparse", rng, model_of(3),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        keras.optimizers.SGD(0.1), y3, sample_weight=sw)
    run("sw_adam_mse", rng, model_of(2), keras.losses.MeanSquaredError(),
        keras.optimizers.Adam(0.01), rng.standard_normal((n, 2)).astype("float32"),
        sample_weight=sw)
    # class_weight: sparse labels, one-hot targets (argmax), binary targets
    # of one column (rounded); class 1 of the first two is left out (weight 1).
    run("cw_sgd_sparse", rng, model_of(3),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        keras.optimizers.SGD(0.1), y3, class_weight={0: 0.5, 2: 3.0})
    onehot = np.eye(3, dtype="float32")[y3.astype(int)]
    run("cw_adam_onehot", rng, model_of(3),
        keras.losses.CategoricalCrossentropy(from_logits=True),
        keras.optimizers.Adam(0.01), onehot, class_weight={0: 0.5, 2: 3.0})
    yb = rng.integers(0, 2, (n, 1)).astype("float32")
    run("cw_sgd_binary", rng, model_of(1, "sigmoid"), keras.losses.BinaryCrossentropy(),
        keras.optimizers.SGD(0.2), yb, class_weight={0: 1.0, 1: 4.0})


if __name__ == "__main__":
    main()
