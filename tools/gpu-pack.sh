#!/usr/bin/env bash
# Builds, on the development machine (CUDA toolkit, R, no GPU), everything
# tools/gpu-check.sh runs on a GPU machine (CUDA driver, CMake and Python with
# PyTorch, but no R, Eigen, GoogleTest or HDF5), into .gpu/ (ignored by git):
#   .gpu/bin/   mr_tests, bench_mlp_gpu, bench_allreduce_gpu (CMake, MR_CUDA=ON)
#   .gpu/lib/   the shared libraries they load that are not CUDA's or glibc's
#   .gpu/r.tar.xz  R, the installed package (built with CUDA) and testthat,
#               packed by ../shared/tools/pack-r.sh
#   .gpu/mnist/ the MNIST files the R suite reads (../shared does not travel)
# Then, with the device tool: run(command = "bash tools/gpu-check.sh", carry = [".gpu"]).
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >>.git/info/exclude
make --no-print-directory core MR_CUDA=ON
rm -rf .gpu && mkdir -p .gpu/bin .gpu/lib .gpu/rlib
cp build/mr_tests build/bench_mlp_gpu build/bench_allreduce_gpu .gpu/bin/
# CUDA's libraries come from the GPU machine (same major version); glibc too.
ldd .gpu/bin/* | awk '/=> \//{print $3}' | sort -u |
  grep -v -E '/usr/local/cuda|/libc\.so|/libm\.so|/libpthread\.so|/libdl\.so|/librt\.so|/ld-linux' |
  xargs -r cp -L -t .gpu/lib
R CMD INSTALL --no-test-load --library=.gpu/rlib . >/dev/null
../shared/tools/pack-r.sh .gpu/r.tar.xz .gpu/rlib testthat
rm -rf .gpu/rlib
cp -r ../shared/data/mnist .gpu/mnist
du -sh .gpu
