#!/usr/bin/env python3
"""Writes the Keras 3 fixtures of the optimizer side of training
(tests/testthat/fixtures/optimizers/): for each optimizer (defaults and a
non-default config), each learning rate schedule, clipnorm / clipvalue /
global_clipnorm, gradient accumulation and EMA, a small model with fixed
initial weights trained on fixed data for two epochs of four steps, and its
final weights (optimizers.json). Each case names the R call that builds the
same optimizer. Also two .keras files trained by Keras (their optimizer
state included) and the weights after one more epoch, for the loading test.
Needs keras 3 with the TensorFlow backend and numpy.

    KERAS_BACKEND=tensorflow python3 tools/make-keras-fixtures-optimizers.py [OUT_DIR]
"""
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
import numpy as np  # noqa: E402
import keras  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "tests", "testthat", "fixtures", "optimizers")

O = keras.optimizers
S = keras.optimizers.schedules

# (name, Keras optimizer factory, the R call that makes the same optimizer)
CASES = [
    ("adagrad_default", lambda: O.Adagrad(), "optimizer_adagrad()"),
    ("adagrad", lambda: O.Adagrad(0.05, initial_accumulator_value=0.5, epsilon=1e-4),
     "optimizer_adagrad(0.05, initial_accumulator_value = 0.5, epsilon = 1e-4)"),
    ("adadelta_default", lambda: O.Adadelta(), "optimizer_adadelta()"),
    ("adadelta", lambda: O.Adadelta(1.0, rho=0.9, epsilon=1e-5),
     "optimizer_adadelta(1, rho = 0.9, epsilon = 1e-5)"),
    ("adamax_default", lambda: O.Adamax(), "optimizer_adamax()"),
    ("adamax", lambda: O.Adamax(0.02, beta_1=0.8, beta_2=0.99, weight_decay=0.01),
     "optimizer_adamax(0.02, beta_1 = 0.8, beta_2 = 0.99, weight_decay = 0.01)"),
    ("nadam_default", lambda: O.Nadam(), "optimizer_nadam()"),
    ("nadam", lambda: O.Nadam(0.02, beta_1=0.85, beta_2=0.99, epsilon=1e-6),
     "optimizer_nadam(0.02, beta_1 = 0.85, beta_2 = 0.99, epsilon = 1e-6)"),
    ("ftrl_default", lambda: O.Ftrl(), "optimizer_ftrl()"),
    ("ftrl", lambda: O.Ftrl(0.1, learning_rate_power=-0.6, initial_accumulator_value=0.2,
                            l1_regularization_strength=0.001, l2_regularization_strength=0.01,
                            l2_shrinkage_regularization_strength=0.02, beta=0.5),
     "optimizer_ftrl(0.1, learning_rate_power = -0.6, initial_accumulator_value = 0.2, "
     "l1_regularization_strength = 0.001, l2_regularization_strength = 0.01, "
     "l2_shrinkage_regularization_strength = 0.02, beta = 0.5)"),
    ("lion_default", lambda: O.Lion(), "optimizer_lion()"),
    ("lion", lambda: O.Lion(0.01, beta_1=0.8, beta_2=0.95, weight_decay=0.05),
     "optimizer_lion(0.01, beta_1 = 0.8, beta_2 = 0.95, weight_decay = 0.05)"),
    ("lamb_default", lambda: O.Lamb(), "optimizer_lamb()"),
    ("lamb", lambda: O.Lamb(0.02, beta_1=0.8, beta_2=0.99, epsilon=1e-6, weight_decay=0.01),
     "optimizer_lamb(0.02, beta_1 = 0.8, beta_2 = 0.99, epsilon = 1e-6, weight_decay = 0.01)"),
    # Clipping (gradients of this problem have norms around 1).
    ("sgd_clipnorm", lambda: O.SGD(0.1, clipnorm=0.3), "optimizer_sgd(0.1, clipnorm = 0.3)"),
    ("sgd_clipvalue", lambda: O.SGD(0.1, clipvalue=0.05), "optimizer_sgd(0.1, clipvalue = 0.05)"),
    ("sgd_global_clipnorm", lambda: O.SGD(0.1, global_clipnorm=0.4),
     "optimizer_sgd(0.1, global_clipnorm = 0.4)"),
    ("adam_global_clipnorm", lambda: O.Adam(0.01, global_clipnorm=0.2),
     "optimizer_adam(0.01, global_clipnorm = 0.2)"),
    # Gradient accumulation (the iterations and the schedule count every step).
    ("sgd_accumulation", lambda: O.SGD(0.1, momentum=0.5, gradient_accumulation_steps=2),
     "optimizer_sgd(0.1, momentum = 0.5, gradient_accumulation_steps = 2)"),
    ("adam_accumulation", lambda: O.Adam(0.01, gradient_accumulation_steps=4),
     "optimizer_adam(0.01, gradient_accumulation_steps = 4)"),
    ("nadam_accumulation_clip", lambda: O.Nadam(0.01, gradient_accumulation_steps=2, clipnorm=0.5),
     "optimizer_nadam(0.01, gradient_accumulation_steps = 2, clipnorm = 0.5)"),
    # EMA: the weights take their averages at the end of fit().
    ("adam_ema", lambda: O.Adam(0.01, use_ema=True, ema_momentum=0.9),
     "optimizer_adam(0.01, use_ema = TRUE, ema_momentum = 0.9)"),
    ("sgd_ema_overwrite", lambda: O.SGD(0.1, use_ema=True, ema_momentum=0.8, ema_overwrite_frequency=3),
     "optimizer_sgd(0.1, use_ema = TRUE, ema_momentum = 0.8, ema_overwrite_frequency = 3)"),
    ("rmsprop_ema_accumulation", lambda: O.RMSprop(0.01, use_ema=True, gradient_accumulation_steps=3),
     "optimizer_rmsprop(0.01, use_ema = TRUE, gradient_accumulation_steps = 3)"),
    # Schedules.
    ("schedule_exponential", lambda: O.SGD(S.ExponentialDecay(0.2, 3, 0.5)),
     "optimizer_sgd(learning_rate_schedule_exponential_decay(0.2, 3, 0.5))"),
    ("schedule_exponential_staircase", lambda: O.Adam(S.ExponentialDecay(0.02, 3, 0.5, staircase=True)),
     "optimizer_adam(learning_rate_schedule_exponential_decay(0.02, 3, 0.5, staircase = TRUE))"),
    ("schedule_inverse_time", lambda: O.SGD(S.InverseTimeDecay(0.2, 2, 0.7)),
     "optimizer_sgd(learning_rate_schedule_inverse_time_decay(0.2, 2, 0.7))"),
    ("schedule_piecewise", lambda: O.SGD(S.PiecewiseConstantDecay([2, 5], [0.2, 0.1, 0.02])),
     "optimizer_sgd(learning_rate_schedule_piecewise_constant_decay(c(2, 5), c(0.2, 0.1, 0.02)))"),
    ("schedule_polynomial", lambda: O.SGD(S.PolynomialDecay(0.2, 5, end_learning_rate=0.01, power=2.0)),
     "optimizer_sgd(learning_rate_schedule_polynomial_decay(0.2, 5, end_learning_rate = 0.01, power = 2))"),
    ("schedule_polynomial_cycle", lambda: O.SGD(S.PolynomialDecay(0.2, 3, cycle=True)),
     "optimizer_sgd(learning_rate_schedule_polynomial_decay(0.2, 3, cycle = TRUE))"),
    ("schedule_cosine", lambda: O.SGD(S.CosineDecay(0.2, 6, alpha=0.1)),
     "optimizer_sgd(learning_rate_schedule_cosine_decay(0.2, 6, alpha = 0.1))"),
    ("schedule_cosine_warmup", lambda: O.SGD(S.CosineDecay(0.0, 4, warmup_target=0.2, warmup_steps=3)),
     "optimizer_sgd(learning_rate_schedule_cosine_decay(0, 4, warmup_target = 0.2, warmup_steps = 3))"),
    ("schedule_cosine_restarts", lambda: O.SGD(S.CosineDecayRestarts(0.2, 2, t_mul=2.0, m_mul=0.5, alpha=0.05)),
     "optimizer_sgd(learning_rate_schedule_cosine_decay_restarts(0.2, 2, t_mul = 2, m_mul = 0.5, alpha = 0.05))"),
    ("schedule_accumulation", lambda: O.SGD(S.ExponentialDecay(0.2, 2, 0.5), gradient_accumulation_steps=2),
     "optimizer_sgd(learning_rate_schedule_exponential_decay(0.2, 2, 0.5), gradient_accumulation_steps = 2)"),
]


def data():
    rng = np.random.default_rng(13)
    x = rng.standard_normal((16, 3)).astype("float32")
    y = rng.standard_normal((16, 2)).astype("float32")
    w = [rng.standard_normal((3, 4)).astype("float32") * 0.5,
         rng.standard_normal(4).astype("float32") * 0.1,
         rng.standard_normal((4, 2)).astype("float32") * 0.5,
         rng.standard_normal(2).astype("float32") * 0.1]
    return x, y, w


def model(w):
    m = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4, activation="tanh"),
                          keras.layers.Dense(2)])
    m.set_weights(w)
    return m


def lists(ws):
    return [np.asarray(a, dtype="float64").ravel().tolist() for a in ws]


def main():
    os.makedirs(OUT, exist_ok=True)
    x, y, w0 = data()
    out = {"x": x.ravel().tolist(), "y": y.ravel().tolist(), "weights": lists(w0),
           "shapes": [list(a.shape) for a in w0], "batch_size": 4, "epochs": 2, "cases": []}
    for name, make, r_call in CASES:
        m = model(w0)
        m.compile(optimizer=make(), loss="mse")
        m.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
        out["cases"].append({"name": name, "r": r_call, "weights": lists(m.get_weights()),
                             "iterations": int(m.optimizer.iterations.numpy())})
    # Keras-written files with optimizer state: trained 2 epochs, saved, then
    # one more epoch (the weights the R side must reach after loading).
    saved = [("nadam_schedule", lambda: O.Nadam(S.CosineDecay(0.02, 10, alpha=0.1), clipnorm=0.5)),
             ("adagrad_ema_accumulation",
              lambda: O.Adagrad(0.05, use_ema=True, ema_momentum=0.9, gradient_accumulation_steps=2)),
             ("lamb", lambda: O.Lamb(0.01, weight_decay=0.01))]
    out["saved"] = []
    for name, make in saved:
        m = model(w0)
        m.compile(optimizer=make(), loss="mse")
        m.fit(x, y, batch_size=4, epochs=2, shuffle=False, verbose=0)
        m.save(os.path.join(OUT, name + ".keras"))
        m.fit(x, y, batch_size=4, epochs=1, shuffle=False, verbose=0)
        out["saved"].append({"name": name, "weights": lists(m.get_weights()),
                             "iterations": int(m.optimizer.iterations.numpy())})
    with open(os.path.join(OUT, "optimizers.json"), "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
