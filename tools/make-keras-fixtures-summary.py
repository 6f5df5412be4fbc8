#!/usr/bin/env python3
"""Writes the fixtures of summary()'s arguments (tests/testthat/fixtures/keras/summary_*.txt):
Keras 3's Model.summary() text for a sequential model holding a nested one and a frozen
layer (expand_nested, show_trainable, line_length; positions) and a functional chain
(layer_range). rich cuts its output at the terminal's width when it is not a terminal:
COLUMNS=200 keeps the tables whole.

    COLUMNS=200 KERAS_BACKEND=tensorflow python3 tools/make-keras-fixtures-summary.py [OUT_DIR]
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("COLUMNS", "200")
import keras  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "tests", "testthat", "fixtures", "keras")
L = keras.layers


def write(model, name, **kwargs):
    lines = []
    model.summary(print_fn=lambda s, line_break=False: lines.append(s), **kwargs)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "summary_" + name + ".txt"), "w", encoding="utf-8") as f:
        f.write("\n".join(lines).rstrip("\n") + "\n")


inner = keras.Sequential([keras.Input((4,)), L.Dense(3, name="inner_dense"),
                          L.BatchNormalization(name="bn")], name="inner")
outer = keras.Sequential([keras.Input((4,)), inner, L.Dense(2, name="head")], name="outer")
outer.get_layer("head").trainable = False
write(outer, "expand_trainable", line_length=100, expand_nested=True, show_trainable=True)
write(outer, "positions", line_length=70, positions=[0.5, 0.8, 1.0])
inp = keras.Input((4,), name="x")
chain = L.Dense(1, name="c")(L.Dense(3, name="b")(L.Dense(3, name="a")(inp)))
write(keras.Model(inp, chain, name="f"), "layer_range", layer_range=["a", "b"],
      show_trainable=True, line_length=110)
