"""bench/pipeline, tf.data's side: the throughput pipeline of mirrored.R in tf.data.

    python3 bench/pipeline/peer_tf.py [epochs]
"""
import gzip
import json
import os
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(os.path.dirname(os.path.dirname(HERE)), "inst", "extdata", "mnist")


def idx(path):
    with gzip.open(path, "rb") as f:
        b = f.read()
    nd = b[3]
    dims = [int.from_bytes(b[4 + 4 * i: 8 + 4 * i], "big") for i in range(nd)]
    return np.frombuffer(b, dtype=np.uint8, offset=4 + 4 * nd).reshape(dims)


def main():
    epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    x = idx(os.path.join(DATA, "sample10k-images-idx3-ubyte.gz")).reshape(-1, 784)
    y = idx(os.path.join(DATA, "sample10k-labels-idx1-ubyte.gz")).astype(np.int32)
    scale = lambda a, b: (tf.cast(a, tf.float32) / 255.0, b)  # noqa: E731
    base = tf.data.Dataset.from_tensor_slices((x, y))
    pipes = {
        "shuffle": base.shuffle(10000, seed=1).batch(64).map(scale).prefetch(tf.data.AUTOTUNE),
        "plain": base.batch(64).map(scale).prefetch(tf.data.AUTOTUNE),
    }
    # The same digits as 10 TFRecord files (one record per digit), read every
    # pass: tf.data's way of reading a dataset stored in files.
    tmp = tempfile.mkdtemp(prefix="tfrec")
    files = []
    for i in range(10):
        path = os.path.join(tmp, f"part-{i:02d}.tfrecord")
        with tf.io.TFRecordWriter(path) as w:
            for r in range(i * 1000, (i + 1) * 1000):
                ex = tf.train.Example(features=tf.train.Features(feature={
                    "x": tf.train.Feature(bytes_list=tf.train.BytesList(value=[x[r].tobytes()])),
                    "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(y[r])]))}))
                w.write(ex.SerializeToString())
        files.append(path)
    spec = {"x": tf.io.FixedLenFeature([], tf.string), "y": tf.io.FixedLenFeature([], tf.int64)}

    def parse(batch):
        f = tf.io.parse_example(batch, spec)
        return tf.cast(tf.io.decode_raw(f["x"], tf.uint8), tf.float32) / 255.0, f["y"]

    pipes["parts"] = tf.data.TFRecordDataset(files).batch(64).map(parse).prefetch(tf.data.AUTOTUNE)
    for name, ds in pipes.items():
        for _ in ds:  # warm up (tracing)
            pass
        n, s = 0, 0.0
        for _ in range(epochs):
            t0 = time.perf_counter()
            for _ in ds:
                n += 1
            s += time.perf_counter() - t0
        print(json.dumps({"kind": "throughput", "pipeline": name, "batches": n, "seconds": s,
                          "batches_per_s": n / s, "tf": tf.__version__}))


if __name__ == "__main__":
    main()
