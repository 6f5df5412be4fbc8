#!/usr/bin/env python3
"""bench/cnn_gpu: keras3's MNIST convnet (bench/cnn_cpu's model) on one GPU, ms/step at batch
128, mirrored (`gpu:0`) against PyTorch (cuda:0, channels_last and NCHW, FP32 with TF32 off),
interleaved runs; writes the cnn_gpu section of BENCHMARKS.md. Needs a GPU, R with mirrored
built with CUDA, and PyTorch (tools/gpu-check.sh packs and runs it on the lent GPU machine):

    python3 bench/cnn_gpu/run.py --n 3
"""
import os
import runpy
import sys

sys.argv[1:1] = ["--device", "gpu"]
runpy.run_path(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "cnn_cpu", "run.py"),
               run_name="__main__")
