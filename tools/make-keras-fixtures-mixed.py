#!/usr/bin/env python3
"""Writes the mixed-precision fixtures (tests/testthat/fixtures/mixed/): a Sequential
MLP made by Keras 3 under the "mixed_float16" policy (its last Dense layer float32),
compiled with Adam and auto_scale_loss (so Keras wraps the optimizer in a
LossScaleOptimizer), trained 2 epochs on 32 rows (batch 8) and saved as
keras_f16.keras; the rows (x.csv) and Keras' predictions for them (keras_f16_pred.csv);
and Keras' loss-scale state (keras_f16_state.txt: dynamic_scale, step_counter,
iterations). The R suite loads the model and compares.

    KERAS_BACKEND=tensorflow python3 tools/make-keras-fixtures-mixed.py [OUT_DIR]
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
import numpy as np  # noqa: E402
import keras  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "tests", "testthat", "fixtures", "mixed")


def main():
    os.makedirs(OUT, exist_ok=True)
    keras.utils.set_random_seed(11)
    rng = np.random.default_rng(11)
    x = rng.standard_normal((32, 5)).astype("float32")
    y = rng.standard_normal((32, 3)).astype("float32")
    keras.config.set_dtype_policy("mixed_float16")
    model = keras.Sequential([keras.Input((5,)), keras.layers.Dense(8, activation="relu"),
                              keras.layers.Dense(3, dtype="float32")], name="mixed_f16")
    keras.config.set_dtype_policy("float32")
    model.compile(optimizer=keras.optimizers.Adam(0.01), loss="mse")
    assert type(model.optimizer).__name__ == "LossScaleOptimizer"
    model.fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0)
    model.save(os.path.join(OUT, "keras_f16.keras"))
    np.savetxt(os.path.join(OUT, "x.csv"), x, delimiter=",", fmt="%.9g")
    np.savetxt(os.path.join(OUT, "keras_f16_pred.csv"), np.asarray(model.predict(x, verbose=0)),
               delimiter=",", fmt="%.9g")
    opt = model.optimizer
    with open(os.path.join(OUT, "keras_f16_state.txt"), "w") as f:
        f.write(f"{float(opt.dynamic_scale.numpy()):.9g} {int(opt.step_counter.numpy())} "
                f"{int(opt.iterations.numpy())}\n")


if __name__ == "__main__":
    main()
