#!/usr/bin/env bash
# The GPU checks of issue 6, run on the GPU machine from the repository root
# after tools/gpu-pack.sh built .gpu/ here (device tool: carry [".gpu"]).
# Writes logs and results under $OUT (or /tmp/gpu-out) and prints a summary:
#   1. nvidia-smi and the topology;
#   2. the C++ suite with MIRRORED_TEST_CUDA=1 (a skip for want of a GPU is a
#      failure): every op on the GPU against the CPU, 5 training steps of the
#      vignette's model, a 1-rank NCCL all-reduce, 2 logical GPUs on one GPU
#      through the fallbacks, and NCCL over 2+ GPUs when there are several;
#   3. the R suite and the vignette's code block, on the GPU;
#   4. bench/mlp_gpu (mirrored and PyTorch eager / CUDA graph, 5 runs each)
#      and bench/allreduce_gpu.
# Record the run in docs/gpu-runs.md; `python3 bench/mlp_gpu/run.py --from DIR`
# writes BENCHMARKS.md's section from the fetched files.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-out}
mkdir -p "$OUT"
export LD_LIBRARY_PATH="$PWD/.gpu/lib:${LD_LIBRARY_PATH:-}"
status=0
{ nvidia-smi; nvidia-smi topo -m; } >"$OUT/meta-smi.txt" 2>&1
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)
echo "- device: ${gpu}; $(nproc) CPUs; date $(date -u +%Y-%m-%dT%H:%MZ)" >"$OUT/meta.txt"

echo "== C++ suite (MIRRORED_TEST_CUDA=1) =="
MIRRORED_TEST_CUDA=1 .gpu/bin/mr_tests --gtest_brief=1 --gtest_output="xml:$OUT/cxx.xml" \
  >"$OUT/cxx.log" 2>&1 || status=1
tail -n 25 "$OUT/cxx.log"

echo "== R suite and the vignette block on the GPU =="
mkdir -p /tmp/r && tar -xJf .gpu/r.tar.xz -C /tmp/r
MIRRORED_DATASETS_DIR="$PWD/.gpu/mnist" MIRRORED_TEST_CUDA=1 /tmp/r/R --vanilla -q -e '
  library(mirrored); print(list_devices()); print(mirrored_strategy())
  r <- testthat::test_dir("tests/testthat", package = "mirrored", load_package = "installed",
                          reporter = "summary", stop_on_failure = FALSE)
  df <- as.data.frame(r)
  cat(sprintf("R suite: %d passed, %d failed, %d skipped\n", sum(df$passed), sum(df$failed),
              sum(df$skipped)))
  if (sum(df$failed) > 0 || any(df$error)) quit(status = 1)' >"$OUT/r.log" 2>&1 || status=1
tail -n 30 "$OUT/r.log"

echo "== bench/mlp_gpu (5 runs) =="
for i in 1 2 3 4 5; do
  .gpu/bin/bench_mlp_gpu 500 50 >"$OUT/mlp_gpu_m$i.jsonl" 2>>"$OUT/bench.err" || status=1
  python3 bench/mlp_gpu/torch_peer.py --steps 500 --warm 50 >"$OUT/mlp_gpu_t$i.jsonl" \
    2>>"$OUT/bench.err" || status=1
done
cat "$OUT"/mlp_gpu_m1.jsonl "$OUT"/mlp_gpu_t1.jsonl
echo "== bench/allreduce_gpu =="
.gpu/bin/bench_allreduce_gpu 50 >"$OUT/allreduce_gpu.txt" 2>>"$OUT/bench.err" || status=1
cat "$OUT/allreduce_gpu.txt"
echo "gpu-check: status $status"
exit $status
