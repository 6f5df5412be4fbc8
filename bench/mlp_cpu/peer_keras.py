"""Keras 3 (TensorFlow backend) peer of bench/mlp_cpu: the vignette's model, compile() and fit()
on the CPU with 2 intra-op threads. TensorFlow flushes subnormals to zero on its own; the
script checks that rather than assumes it.

Prints one JSON line (see common.emit). Run: python3 bench/mlp_cpu/peer_keras.py [--jit]
"""

import os
import time

import common

common.thread_env()
os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ["CUDA_VISIBLE_DEVICES"] = ""  # CPU only, whatever the wheel can do

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import keras  # noqa: E402


def onednn_state():
    """Whether TensorFlow's oneDNN ops are on (its runtime check, which reads
    TF_ENABLE_ONEDNN_OPTS; TF >= 2.9 on x86 Linux turns them on by default)."""
    built = None
    try:
        from tensorflow.python.util import _pywrap_util_port as port

        for name in ("IsMklEnabled", "IsBuiltWithOneDNN"):
            if hasattr(port, name):
                built = bool(getattr(port, name)())
                break
    except ImportError:
        pass
    env = os.environ.get("TF_ENABLE_ONEDNN_OPTS")
    return built, env


def blas_info():
    info = tf.sysconfig.get_build_info()
    built, env = onednn_state()
    parts = ["Eigen (TensorFlow's CPU kernels)"]
    parts.append(f"oneDNN ops on={built}")
    parts.append(f"TF_ENABLE_ONEDNN_OPTS={env if env is not None else 'unset (default)'}")
    for key in ("cpu_compiler", "is_cuda_build"):
        if key in info:
            parts.append(f"{key}={info[key]}")
    return "; ".join(parts)


def ftz_effective(jit):
    """Subnormal inputs (made by numpy) to a large op, run as a graph (XLA-compiled when the
    model is) on TF's intra-op pool, must give zeros."""
    probe = tf.function(lambda t: t * 1.5, jit_compile=jit)
    tiny = np.full(1 << 20, 1e-39, dtype=np.float32)  # subnormal in fp32
    out = probe(tf.constant(tiny)).numpy()
    # Compare bit patterns: under DAZ a float comparison would read subnormals as zero too.
    return bool(np.all(out.view(np.int32) == 0))


class EpochTimer(keras.callbacks.Callback):
    """Wall time of each epoch, from on_epoch_begin to on_epoch_end (as the vignette's fit sees it)."""

    def __init__(self):
        super().__init__()
        self.times = []
        self._t0 = None

    def on_epoch_begin(self, epoch, logs=None):
        self._t0 = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        self.times.append(time.perf_counter() - self._t0)


def main():
    args = common.parse_args(
        "Keras 3 / TensorFlow peer of bench/mlp_cpu",
        lambda p: p.add_argument("--jit", action="store_true", help="compile(jit_compile = TRUE) (XLA)"),
    )
    jit = args.jit
    tf.config.threading.set_intra_op_parallelism_threads(common.THREADS)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    keras.utils.set_random_seed(args.seed)

    x, y = common.load_mnist(args.data)
    n_steps = common.steps_per_epoch(x.shape[0])
    ftz = ftz_effective(jit)

    inputs = keras.Input(shape=(784,))
    h = keras.layers.Dense(common.HIDDEN, activation="relu")(inputs)
    h = keras.layers.Dense(common.HIDDEN, activation="relu")(h)
    outputs = keras.layers.Dense(common.CLASSES)(h)
    model = keras.Model(inputs, outputs)
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate=common.LEARNING_RATE, epsilon=common.EPSILON),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=[keras.metrics.SparseCategoricalAccuracy()],
        jit_compile=jit,
    )
    timer = EpochTimer()
    hist = model.fit(
        x,
        y.astype(np.int32),
        batch_size=common.BATCH,
        epochs=args.epochs,
        shuffle=not args.no_shuffle,
        verbose=0,
        callbacks=[timer],
    )
    common.emit(
        peer="keras-xla" if jit else "keras",
        version=f"keras {keras.__version__}, tensorflow {tf.__version__}",
        blas=blas_info(),
        ftz=ftz,
        epoch_s=timer.times,
        n_steps=n_steps,
        final_loss=hist.history["loss"][-1],
        final_acc=hist.history["sparse_categorical_accuracy"][-1],
        jit_compile=jit,
        intra_threads=tf.config.threading.get_intra_op_parallelism_threads(),
        interop_threads=tf.config.threading.get_inter_op_parallelism_threads(),
    )


if __name__ == "__main__":
    main()
