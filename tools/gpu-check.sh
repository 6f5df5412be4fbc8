#!/usr/bin/env bash
# The GPU checks, run on the GPU machine from the repository root after
# tools/gpu-pack.sh built .gpu/gpu.tar.xz here (device tool: carry [".gpu"]).
# Leaves at most 3 files under $OUT (or /tmp/gpu-out): summary.txt (the lines
# printed below), logs.tar.xz (every log and result: meta-smi.txt, meta.txt,
# cxx.log, cxx.xml, r.log, mlp_gpu_*.jsonl, mlp_gpu_bf16.err, allreduce_gpu.txt, cnn_gpu.md,
# cnn_gpu-runs.jsonl, mixed_precision_gpu.md, mixed_precision_gpu-runs.jsonl,
# bench.err) and
# nothing else. Steps:
#   1. nvidia-smi and the topology;
#   2. the C++ suite with MIRRORED_TEST_CUDA=1 (a skip for want of a GPU is a
#      failure): every op on the GPU against the CPU, events and lanes, typed
#      ops, 5 training steps of the vignette's model, a 1-rank NCCL
#      all-reduce, 2 logical GPUs on one GPU through the fallbacks, and NCCL
#      over 2+ GPUs when there are several;
#   3. the R suite and the vignette's code block, on the GPU;
#   4. bench/mlp_gpu (mirrored with CUDA graphs on and off, cuBLAS alone on
#      the step's GEMMs, PyTorch eager / CUDA graph; 5 runs each, then one
#      bf16 run, which says "needs mixed precision" until the core has it;
#      the table and issue 14's goals, met or missed, printed from them),
#      bench/allreduce_gpu and bench/cnn_gpu (the MNIST convnet, 3 runs each,
#      its section in cnn_gpu.md), and bench/mixed_precision --device gpu (the MLP
#      and the convnet in float32, mixed_bfloat16 and mixed_float16 against
#      PyTorch autocast; its section in mixed_precision_gpu.md).
# Record the run in docs/gpu-runs.md; unpack logs.tar.xz into DIR, then
# `python3 bench/mlp_gpu/run.py --from DIR` writes BENCHMARKS.md's section.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
G=/tmp/gpu-pack
logs=$(mktemp -d)
mkdir -p "$G" && tar -xJf .gpu/gpu.tar.xz -C "$G"
export LD_LIBRARY_PATH="$G/r/libs:${LD_LIBRARY_PATH:-}"
status=0
{
  { nvidia-smi; nvidia-smi topo -m; } >"$logs/meta-smi.txt" 2>&1
  gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
  echo "- device: ${gpu}; $(nproc) CPUs; date $(date -u +%Y-%m-%dT%H:%MZ)" | tee "$logs/meta.txt"

  echo "== C++ suite (MIRRORED_TEST_CUDA=1) =="
  MIRRORED_TEST_CUDA=1 "$G/bin/mr_tests" --gtest_brief=1 --gtest_output="xml:$logs/cxx.xml" \
    >"$logs/cxx.log" 2>&1 || status=1
  tail -n 25 "$logs/cxx.log"
  # i14-overlap: where each gradient bucket's all-reduce started in backward.
  echo "== gradient buckets (launch points) =="
  "$G/bin/mr_tests" --gtest_filter='GpuGradBuckets.*' 2>&1 | grep -E '^\[ timeline \]|OK|FAILED|SKIPPED' \
    | tee "$logs/grad_buckets.txt"
  # i14-devinput: whether the copy stream's upload of batch i + 2 finished inside step i.
  echo "== device input (copy stream, resident data) =="
  "$G/bin/mr_tests" --gtest_filter='GpuDeviceInput.*:GpuResidentInput.*:GpuGatherRows.*:BackendUploadOn.*' 2>&1 \
    | grep -E '^\[ timeline \]|OK|FAILED|SKIPPED' | tee "$logs/device_input.txt"

  echo "== R suite and the vignette block on the GPU =="
  MIRRORED_DATASETS_DIR="$G/r/site-library/mirrored/extdata/mnist" MIRRORED_TEST_CUDA=1 "$G/r/R" --vanilla -q -e '
    library(mirrored); print(list_devices()); print(mirrored_strategy())
    r <- testthat::test_dir("tests/testthat", package = "mirrored", load_package = "installed",
                            reporter = "summary", stop_on_failure = FALSE)
    df <- as.data.frame(r)
    cat(sprintf("R suite: %d passed, %d failed, %d skipped\n", sum(df$passed), sum(df$failed),
                sum(df$skipped)))
    if (sum(df$failed) > 0 || any(df$error)) quit(status = 1)' >"$logs/r.log" 2>&1 || status=1
  tail -n 30 "$logs/r.log"

  echo "== bench/mlp_gpu (5 runs) =="
  for i in 1 2 3 4 5; do
    "$G/bin/bench_mlp_gpu" 500 50 >"$logs/mlp_gpu_m$i.jsonl" 2>>"$logs/bench.err" || status=1
    python3 bench/mlp_gpu/torch_peer.py --steps 500 --warm 50 >"$logs/mlp_gpu_t$i.jsonl" \
      2>>"$logs/bench.err" || status=1
  done
  cat "$logs"/mlp_gpu_m1.jsonl "$logs"/mlp_gpu_t1.jsonl
  # bf16 against strict FP32 (TF32 off): exit status 3 means "needs mixed
  # precision in the core", recorded in mlp_gpu_bf16.err, not a failure.
  "$G/bin/bench_mlp_gpu" 500 50 0 bf16 >"$logs/mlp_gpu_bf16.jsonl" 2>"$logs/mlp_gpu_bf16.err"
  bf=$?
  if [ "$bf" -ne 0 ] && [ "$bf" -ne 3 ]; then status=1; fi
  cat "$logs/mlp_gpu_bf16.err"
  python3 bench/mlp_gpu/run.py --from "$logs" --no-write 2>>"$logs/bench.err" | sed -n '/^|/p;/^Goals/,$p' \
    || status=1
  echo "== bench/allreduce_gpu =="
  "$G/bin/bench_allreduce_gpu" 50 >"$logs/allreduce_gpu.txt" 2>>"$logs/bench.err" || status=1
  cat "$logs/allreduce_gpu.txt"
  echo "== bench/cnn_gpu (3 runs) =="
  MIRRORED_DATASETS_DIR="$G/r/site-library/mirrored/extdata/mnist" \
    python3 bench/cnn_gpu/run.py --n 3 --output "$logs/cnn_gpu.md" --raw "$logs/cnn_gpu-runs.jsonl" \
    --mirrored-cmd "$G/r/R --vanilla -q -f bench/cnn_cpu/mirrored.R --args" \
    2>>"$logs/bench.err" | tail -n 8 || status=1
  echo "== bench/mixed_precision (2 runs; float32, mixed_bfloat16, mixed_float16) =="
  MIRRORED_DATASETS_DIR="$G/r/site-library/mirrored/extdata/mnist" \
    python3 bench/mixed_precision/run.py --device gpu --n 2 --output "$logs/mixed_precision_gpu.md" \
    --raw "$logs/mixed_precision_gpu-runs.jsonl" \
    --mirrored-cmd "$G/r/R --vanilla -q -f bench/mixed_precision/mirrored.R --args" \
    2>>"$logs/bench.err" | tail -n 12 || status=1
  echo "gpu-check: status $status"
} 2>&1 | tee "$OUT/summary.txt"
# The block runs in the pipe's subshell, so its status is read from the summary.
grep -q '^gpu-check: status 0$' "$OUT/summary.txt" && status=0 || status=1
tar -C "$logs" -cJf "$OUT/logs.tar.xz" .
rm -rf "$logs"
exit $status
