#!/bin/sh
# Builds conv_ops.cpp against mirrored's CPU backend sources and oneDNN, then
# prints the op-level table (im2col + gemm, oneDNN, PyTorch) for
# docs/convolution.md. Run from the repository root after configure (make install
# writes src/mr/build_config.h; with MR_WITH_DNNL the backend's oneDNN path is timed
# too): sh bench/conv_ops/run.sh
set -eu
out=${TMPDIR:-/tmp}/mr_conv_ops
EIGEN=$(Rscript -e "cat(system.file('include', package = 'RcppEigen'))")
M=src/mr
${BUILD_LOCK:-} g++ -std=c++17 -O3 -fno-math-errno -mavx512f -mavx512dq -mavx512vl -mavx512bw -mavx2 -mfma \
  -DEIGEN_ENABLE_AVX512 -DEIGEN_MAX_ALIGN_BYTES=64 -I$M -isystem "$EIGEN" \
  bench/conv_ops/conv_ops.cpp $M/backends/cpu/*.cpp \
  $M/core/thread_team.cpp $M/core/fp_mode.cpp $M/core/error.cpp $M/core/backend.cpp $M/core/wait.cpp -ldnnl -fopenmp -lpthread -o "$out"
lscpu | grep 'Model name'
OMP_NUM_THREADS=2 "$out"
python3 bench/conv_ops/torch_conv.py
