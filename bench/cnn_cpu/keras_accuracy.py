"""Test accuracy of keras3's "Simple MNIST convnet" in Keras 3 (TensorFlow backend) on the digits
mirrored bundles: the 10,000 training digits (the last 10% held out by validation_split), batch 128,
12 epochs, the canonical 10,000-digit test set; one line per seed. The reference the convnets
vignette quotes.

    python3 bench/cnn_cpu/keras_accuracy.py [--seeds 1 2 3]
"""
import argparse
import json

import common_cnn as cc
from common_cnn import common

common.thread_env()
from peer_keras import keras, tf  # noqa: E402,F401  (bench/mlp_cpu: threads, CPU only)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    args = p.parse_args()
    x, y = cc.load("sample10k")
    xt, yt = cc.load("t10k")
    L = keras.layers
    for seed in args.seeds:
        keras.utils.set_random_seed(seed)
        model = keras.Sequential([
            keras.Input(shape=(28, 28, 1)),
            L.Conv2D(32, kernel_size=(3, 3), activation="relu"), L.MaxPooling2D(pool_size=(2, 2)),
            L.Conv2D(64, kernel_size=(3, 3), activation="relu"), L.MaxPooling2D(pool_size=(2, 2)),
            L.Flatten(), L.Dropout(0.5), L.Dense(10, activation="softmax"),
        ])
        model.compile(loss="categorical_crossentropy", optimizer="adam", metrics=["accuracy"])
        model.fit(x, keras.utils.to_categorical(y, 10), batch_size=128, epochs=12, validation_split=0.1,
                  verbose=0)
        loss, acc = model.evaluate(xt, keras.utils.to_categorical(yt, 10), verbose=0)
        print(json.dumps({"seed": seed, "test_loss": round(loss, 4), "test_accuracy": round(acc, 4),
                          "keras": keras.__version__, "tensorflow": tf.__version__}), flush=True)


if __name__ == "__main__":
    main()
