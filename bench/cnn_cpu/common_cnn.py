"""Shared pieces of the cnn_cpu peers: the model's settings and its FLOP count.

keras3's "Simple MNIST convnet": 28x28x1 -> Conv2D(32, 3x3, relu) -> MaxPool 2 ->
Conv2D(64, 3x3, relu) -> MaxPool 2 -> Flatten -> Dropout 0.5 -> Dense(10, softmax),
categorical cross-entropy, Adam (lr 1e-3, eps 1e-7), batch 128, inputs scaled to 0..1,
2 epochs on the 10,000 bundled training digits (79 steps per epoch, the last of 16).
The data loading, thread settings and the result line come from bench/mlp_cpu/common.py.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "mlp_cpu"))
import common  # noqa: E402,F401  (re-exported: load_mnist, thread_env, emit, THREADS)

BATCH = 128
EPOCHS = 2
LEARNING_RATE = 1e-3
EPSILON = 1e-7
CLASSES = 10


def conv_flops(batch=BATCH):
    """Multiply-adds x 2 of each convolution per training step: forward, filter gradient and
    (second conv only: the first one's input needs none) data gradient."""
    c1 = 2 * batch * 26 * 26 * 32 * (3 * 3 * 1)
    c2 = 2 * batch * 11 * 11 * 64 * (3 * 3 * 32)
    return {"conv1": 2 * c1, "conv2": 3 * c2}


def load(data="sample10k"):
    """Images (n, 28, 28, 1) float32 in 0..1 and int64 labels."""
    x, y = common.load_mnist(data)
    return (x / 255.0).reshape(-1, 28, 28, 1), y
