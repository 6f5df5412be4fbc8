"""Keras 3 (TensorFlow backend) peer of bench/cnn_cpu: keras3's MNIST convnet example, compile()
and fit() on the CPU with 2 intra-op threads.

Prints one JSON line (mlp_cpu/common.emit). Run: python3 bench/cnn_cpu/peer_keras.py [--seed N]
"""

import argparse
import os
import sys

import common_cnn as cc
from common_cnn import common

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "mlp_cpu"))
from peer_keras import EpochTimer, blas_info, ftz_effective, keras, tf  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--epochs", type=int, default=cc.EPOCHS)
    args = p.parse_args()
    tf.config.threading.set_intra_op_parallelism_threads(common.THREADS)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    keras.utils.set_random_seed(args.seed)
    x, y = cc.load()
    n_steps = (x.shape[0] + cc.BATCH - 1) // cc.BATCH
    ftz = ftz_effective(False)
    L = keras.layers
    model = keras.Sequential([
        keras.Input(shape=(28, 28, 1)),
        L.Conv2D(32, kernel_size=(3, 3), activation="relu"), L.MaxPooling2D(pool_size=(2, 2)),
        L.Conv2D(64, kernel_size=(3, 3), activation="relu"), L.MaxPooling2D(pool_size=(2, 2)),
        L.Flatten(), L.Dropout(0.5), L.Dense(cc.CLASSES, activation="softmax"),
    ])
    model.compile(loss="categorical_crossentropy", metrics=["accuracy"], jit_compile=False,
                  optimizer=keras.optimizers.Adam(learning_rate=cc.LEARNING_RATE, epsilon=cc.EPSILON))
    timer = EpochTimer()
    hist = model.fit(x, keras.utils.to_categorical(y, cc.CLASSES), batch_size=cc.BATCH,
                     epochs=args.epochs, verbose=0, callbacks=[timer])
    common.emit(
        peer="keras",
        version=f"keras {keras.__version__}, tensorflow {tf.__version__}",
        blas=blas_info(),
        ftz=ftz,
        epoch_s=timer.times,
        n_steps=n_steps,
        final_loss=hist.history["loss"][-1],
        final_acc=hist.history["accuracy"][-1],
    )


if __name__ == "__main__":
    main()
