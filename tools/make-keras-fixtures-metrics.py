#!/usr/bin/env python3
"""Writes the Keras 3 fixtures of metrics that tests/testthat/test-metrics.R
compares against (tests/testthat/fixtures/metrics/<case>.csv).

Each case is a Dense layer with weights set here on fixed inputs (so its
predictions are known), targets, sample weights, and the metric's results
computed by Keras 3 with update_state() over batches of 8 rows: `value`
without weights, `value_w` with them. The "fit" case also has the per-epoch
logs of a two-epoch fit (SGD, batch 8, no shuffle) with sample weights.

Long-format CSV, one value per line: name,row,col,value (0-based row and
column; vectors have col 0). Names: x, kernel, bias, y, sample_weight,
value, value_w (a vector for per-class F-scores), and for "fit"
log_<key> (row = epoch). Needs keras 3 (any backend) and numpy.

    python3 tools/make-keras-fixtures-metrics.py [OUT_DIR]
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import keras  # noqa: E402
from keras import metrics as M  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "tests", "testthat", "fixtures", "metrics")
ROWS = 21  # three batches of 8, the last one short
BATCH = 8


def write(name, arrays):
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, name + ".csv"), "w") as f:
        f.write("name,row,col,value\n")
        for key, a in arrays:
            a = np.asarray(a, dtype="float64")
            a = a.reshape(a.shape[0], -1) if a.ndim >= 1 else a.reshape(1, 1)
            for i in range(a.shape[0]):
                for j in range(a.shape[1]):
                    f.write("%s,%d,%d,%.10g\n" % (key, i, j, a[i, j]))


def targets(rng, kind, units):
    if kind == "binary":
        return (rng.uniform(size=(ROWS, units)) > 0.5).astype("float32")
    if kind == "onehot":
        return np.eye(units, dtype="float32")[rng.integers(0, units, ROWS)]
    if kind == "sparse":
        return rng.integers(0, units, (ROWS, 1)).astype("float32")
    return rng.standard_normal((ROWS, units)).astype("float32")


def dense(units, activation):
    inp = keras.Input(shape=(3,))
    return keras.Model(inp, keras.layers.Dense(units, activation=activation)(inp))


def result(metric, y, p, w):
    for b in range(0, ROWS, BATCH):
        metric.update_state(y[b:b + BATCH], p[b:b + BATCH],
                            sample_weight=None if w is None else w[b:b + BATCH])
    return np.asarray(metric.result())


def case(name, rng, units, activation, kind, make_metric, weights=None):
    model = dense(units, activation)
    x = rng.standard_normal((ROWS, 3)).astype("float32")
    kernel = rng.uniform(-1.5, 1.5, (3, units)).astype("float32")
    bias = rng.uniform(-0.5, 0.5, (units,)).astype("float32")
    model.set_weights([kernel, bias])
    p = np.asarray(model.predict(x, verbose=0))
    y = targets(rng, kind, units)
    w = weights if weights is not None else rng.uniform(0.0, 2.0, ROWS).astype("float32")
    write(name, [("x", x), ("kernel", kernel), ("bias", bias), ("y", y), ("sample_weight", w),
                 ("value", result(make_metric(), y, p, None)),
                 ("value_w", result(make_metric(), y, p, w))])


def fit_case(rng):
    model = dense(1, "sigmoid")
    x = rng.standard_normal((ROWS, 3)).astype("float32")
    kernel = rng.uniform(-1.5, 1.5, (3, 1)).astype("float32")
    bias = rng.uniform(-0.5, 0.5, (1,)).astype("float32")
    model.set_weights([kernel, bias])
    y = targets(rng, "binary", 1)
    w = rng.uniform(0.0, 2.0, ROWS).astype("float32")
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="binary_crossentropy",
                  metrics=["auc", M.Precision(name="precision"), "mse"], weighted_metrics=["auc", "mse"])
    hist = model.fit(x, y, sample_weight=w, batch_size=BATCH, epochs=2, shuffle=False, verbose=0)
    arrays = [("x", x), ("kernel", kernel), ("bias", bias), ("y", y), ("sample_weight", w)]
    arrays += [("log_" + k, np.asarray(v)) for k, v in sorted(hist.history.items())]
    write("fit", arrays)


def main():
    rng = np.random.default_rng(13)
    case("auc_roc", rng, 1, "sigmoid", "binary", lambda: M.AUC())
    case("auc_pr", rng, 1, "sigmoid", "binary", lambda: M.AUC(curve="PR", num_thresholds=50))
    case("auc_minoring_logits", rng, 2, None, "binary",
         lambda: M.AUC(summation_method="minoring", from_logits=True))
    case("precision", rng, 3, "sigmoid", "binary", lambda: M.Precision())
    case("precision_class_id", rng, 4, "softmax", "onehot",
         lambda: M.Precision(thresholds=0.3, class_id=1))
    case("recall_top_k", rng, 4, "softmax", "onehot", lambda: M.Recall(top_k=2))
    case("f1_none", rng, 4, "softmax", "onehot", lambda: M.F1Score())
    case("f1_macro", rng, 4, "softmax", "onehot", lambda: M.F1Score(average="macro", threshold=0.3))
    case("f1_micro", rng, 3, "sigmoid", "binary", lambda: M.F1Score(average="micro", threshold=0.5))
    case("fbeta_weighted", rng, 4, "softmax", "onehot",
         lambda: M.FBetaScore(average="weighted", beta=2.0, threshold=0.25))
    # Whole and fractional weights: Keras' MeanIoU counts in int64.
    case("mean_iou", rng, 4, "softmax", "sparse",
         lambda: M.MeanIoU(num_classes=4, sparse_y_pred=False),
         weights=rng.integers(0, 5, ROWS).astype("float32") * 0.5)
    case("top_k", rng, 5, "softmax", "onehot", lambda: M.TopKCategoricalAccuracy(k=2))
    case("sparse_top_k", rng, 5, "softmax", "sparse", lambda: M.SparseTopKCategoricalAccuracy(k=3))
    case("mse", rng, 2, None, "real", lambda: M.MeanSquaredError())
    case("rmse", rng, 2, None, "real", lambda: M.RootMeanSquaredError())
    case("mape", rng, 2, None, "real", lambda: M.MeanAbsolutePercentageError())
    case("bce", rng, 2, "sigmoid", "binary", lambda: M.BinaryCrossentropy(label_smoothing=0.1))
    case("cce_logits", rng, 4, None, "onehot",
         lambda: M.CategoricalCrossentropy(from_logits=True, label_smoothing=0.2))
    case("scce", rng, 4, "softmax", "sparse", lambda: M.SparseCategoricalCrossentropy())
    fit_case(rng)


if __name__ == "__main__":
    main()
