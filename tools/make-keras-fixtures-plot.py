#!/usr/bin/env python3
"""Writes the fixtures of plot()'s DOT text (tests/testthat/fixtures/keras/plot_*.dot):
Keras 3's keras.utils.model_to_dot() for a few small models (a sequential chain with
every label flag on, a functional model with two inputs and a merge, a model nesting a
sequential and a functional model, drawn with and without expand_nested). Keras names the
nodes by Python object ids; these are replaced by the layers' names (quoted) so that the
files are stable and the tests can match nodes by name. Needs pydot (`pip install pydot`),
not Graphviz.

    KERAS_BACKEND=tensorflow python3 tools/make-keras-fixtures-plot.py [OUT_DIR]
"""
import os
import re
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import keras  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "tests", "testthat", "fixtures", "keras")
L = keras.layers


def all_layers(model):
    out = [model]
    for layer in getattr(model, "_operations", None) or model.layers:
        out.extend(all_layers(layer) if isinstance(layer, keras.Model) else [layer])
    return out


def write(model, name, **kwargs):
    text = keras.utils.model_to_dot(model, **kwargs).to_string()
    ids = {str(id(layer)): layer.name for layer in all_layers(model)}
    text = re.sub(r"\b\d{6,}\b", lambda m: '"%s"' % ids.get(m.group(0), m.group(0)), text)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "plot_" + name + ".dot"), "w", encoding="utf-8") as f:
        f.write(text)


# A sequential chain; "out" frozen.
seq = keras.Sequential([keras.Input((8,)), L.Dense(4, activation="relu", name="hidden"),
                        L.Dropout(0.5, name="drop"), L.Dense(2, activation="softmax", name="out")],
                       name="seq")
seq.get_layer("out").trainable = False
write(seq, "sequential_all", show_shapes=True, show_dtype=True, show_layer_names=True,
      show_layer_activations=True, show_trainable=True)
write(seq, "sequential_default", show_layer_names=False)
write(seq, "sequential_lr", show_layer_names=False, rankdir="LR", dpi=96)

# Two inputs and a merge.
x1 = keras.Input((4,), name="x1")
x2 = keras.Input((3,), name="x2")
a = L.Dense(5, activation="relu", name="a")(x1)
merged = L.Concatenate(name="merge")([a, x2])
y = L.Dense(1, name="y")(merged)
write(keras.Model([x1, x2], y, name="two_inputs"), "merge", show_shapes=True,
      show_layer_names=True, show_layer_activations=True)

# A sequential model and a functional model nested in a functional one.
inner_seq = keras.Sequential([keras.Input((4,)), L.Dense(3, name="inner_a"),
                              L.Dense(3, name="inner_b")], name="inner_seq")
fin = keras.Input((3,), name="fin")
inner_fun = keras.Model(fin, L.Dense(2, name="fdense")(fin), name="inner_fun")
x = keras.Input((4,), name="x")
z = L.Dense(1, name="head")(inner_fun(inner_seq(x)))
outer = keras.Model(x, z, name="outer")
write(outer, "nested_expanded", show_layer_names=True, show_shapes=True, expand_nested=True)
write(outer, "nested_collapsed", show_layer_names=True, show_shapes=True, expand_nested=False)

# A sequential model nested in a sequential one (expanded), with non-trainable weights.
inner = keras.Sequential([keras.Input((4,)), L.Dense(3, name="inner_dense"),
                          L.BatchNormalization(name="bn")], name="inner")
seq_outer = keras.Sequential([keras.Input((4,)), inner, L.Dense(2, name="head")], name="outer")
seq_outer.get_layer("head").trainable = False
write(seq_outer, "sequential_nested", show_layer_names=True, expand_nested=True, show_trainable=True)

# A layer called twice (its shapes and dtype are "?").
i1 = keras.Input((3,), name="i1")
i2 = keras.Input((3,), name="i2")
shared = L.Dense(2, name="shared")
write(keras.Model([i1, i2], L.Add(name="add")([shared(i1), shared(i2)]), name="siam"), "shared",
      show_shapes=True, show_dtype=True, show_layer_names=True)
