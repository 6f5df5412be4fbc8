#!/usr/bin/env bash
# The command of a later GPU lease, once tools/gpu-first.sh has run on the pack's
# commit (that one uses nearly all of a lease): the rest of the suites and the
# benchmark harnesses, time-boxed the same way (the machinery is gpu-first.sh's,
# sourced), in at most 9 minutes (MR_CHECK_BUDGET, 530 s).
# Device tool: run(command="bash tools/gpu-check.sh", carry=[".gpu"], timeout_s=570).
#
# Stages, in order of what they decide (each its own process and time box):
#   env        as in gpu-first.sh: the GPU, torch, the CUDA libraries from
#              python3's site-packages, ldd of everything ("not found" = verdict)
#   r_suite    the whole R suite on the GPU (MIRRORED_TEST_CUDA=1: a skip for
#              want of a GPU fails), testthat's summary reporter
#   mlp_gpu    bench/mlp_gpu: 2 rounds of bench_mlp_gpu 500 50 and
#              torch_peer.py, the bf16 run, the table and issue 14's goals
#   allreduce  bench_allreduce_gpu 20
#   cnn_gpu    bench/cnn_gpu --n 1 (the convnet, mirrored against PyTorch)
#   mixed      bench/mixed_precision --device gpu --n 1 --acc-seeds 0
#              --no-overflow (no accuracy study: ~180 processes; the overflow
#              check runs CPU replicas through Rscript, which is not there)
#   cxx_rest   the C++ tests gpu-first.sh does not run (mostly CPU tests, on
#              this machine's CPUs), MIRRORED_TEST_CUDA=1
#
# Output under $OUT, written as the stages go, 7 files: summary.txt (as
# gpu-first's), env.txt, r.log, bench.log, cxx.log, tests.tsv, results.tar
# (every harness's raw files, rewritten after each bench stage: mlp_gpu_*.jsonl,
# mlp_gpu_bf16.err, allreduce_gpu.txt, cnn_gpu.md, cnn_gpu-runs.jsonl,
# mixed_precision_gpu.md, mixed_precision_gpu-runs.jsonl). Here, afterwards:
# `tar -xf results.tar -C DIR && python3 bench/mlp_gpu/run.py --from DIR` writes
# BENCHMARKS.md's mlp_gpu section. Where the GPU machine has no git, the
# harnesses get a stand-in that answers from the pack's commit.txt.
set -uo pipefail
# shellcheck source=tools/gpu-first.sh
source "$(dirname "${BASH_SOURCE[0]}")/gpu-first.sh"
GF_SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")

# The C++ tests not in gpu-first.sh's groups.
gc_rest_filter() {
  local f pos=""
  for f in "$F_SMOKE" "$F_OPS" "$F_TRAIN" "$F_NCCL"; do pos="$pos:${f%%-*}"; done
  printf '*-%s' "${pos#:}"
}

# Results of the harnesses, and a git for bench/report.py where there is none.
gc_bench_env() {
  RES="$GF_STATE/results"
  mkdir -p "$RES"
  if ! command -v git >/dev/null; then
    mkdir -p "$GF_STATE/git-standin"
    cat >"$GF_STATE/git-standin/git" <<EOF
#!/bin/sh
# Stand-in for git on the GPU machine: answers bench/report.py from the pack's commit.txt.
c=\$(sed -n 's/^commit \([0-9a-f]*\).*/\1/p' "$G/commit.txt")
d=\$(sed -n 's/^dirty \([0-9]*\).*/\1/p' "$G/commit.txt")
case "\$1" in
  rev-parse) case "\$*" in *--short*) echo "\$c" | cut -c1-7 ;; *) echo "\$c" ;; esac ;;
  status) [ "\${d:-0}" -gt 0 ] && echo " M (dirty when packed)" ;;
esac
exit 0
EOF
    chmod +x "$GF_STATE/git-standin/git"
    export PATH="$GF_STATE/git-standin:$PATH"
  fi
  export MIRRORED_DATASETS_DIR="$G/r/site-library/mirrored/extdata/mnist"
}
gc_results_tar() {
  tar -C "$GF_STATE/results" -cf "$OUT/results.tar.tmp" . && mv "$OUT/results.tar.tmp" "$OUT/results.tar"
}
# A stage's exit: 3 (NOGPU) when it failed on a machine without a GPU.
gc_exit() {
  if [ "$1" -ne 0 ] && [ "$(cat "$GF_STATE/gpus" 2>/dev/null || echo 0)" = 0 ]; then exit 3; fi
  exit "$1"
}
# The packed R for the harnesses' --mirrored-cmd, with the GPU libraries.
gc_r_cmd() { printf 'env LD_LIBRARY_PATH=%s %s --vanilla -q -f %s --args' "${MR_NVLIBS:-}" "$G/r/R" "$1"; }

stage_r_suite() {
  # shellcheck disable=SC2016
  env LD_LIBRARY_PATH="${MR_NVLIBS:-}" MIRRORED_TEST_CUDA=1 \
    MIRRORED_DATASETS_DIR="$G/r/site-library/mirrored/extdata/mnist" "$G/r/R" --vanilla -q -e '
    library(mirrored); print(list_devices())
    r <- testthat::test_dir("tests/testthat", package = "mirrored", load_package = "installed",
                            reporter = "summary", stop_on_failure = FALSE)
    df <- as.data.frame(r)
    cat(sprintf("@summary R suite: %d passed, %d failed, %d skipped, %d errors in %d files\n",
                sum(df$passed), sum(df$failed), sum(df$skipped), sum(df$error),
                length(unique(df$file))))
    if (sum(df$failed) > 0 || any(df$error)) quit(status = 1)'
  local rc=$?
  gf_maybe_hang r_suite
  gc_exit "$rc"
}

stage_mlp_gpu() {
  gc_bench_env
  local i rc=0 bf
  for i in 1 2; do
    env "$(gf_bin_env)" "$G/bin/bench_mlp_gpu" 500 50 >"$RES/mlp_gpu_m$i.jsonl" || rc=1
    python3 bench/mlp_gpu/torch_peer.py --steps 500 --warm 50 >"$RES/mlp_gpu_t$i.jsonl" || rc=1
    cat "$RES/mlp_gpu_m$i.jsonl" "$RES/mlp_gpu_t$i.jsonl"
    gc_results_tar
  done
  # Exit status 3: "needs mixed precision in the core", recorded, not a failure.
  env "$(gf_bin_env)" "$G/bin/bench_mlp_gpu" 500 50 0 bf16 >"$RES/mlp_gpu_bf16.jsonl" 2>"$RES/mlp_gpu_bf16.err"
  bf=$?
  cat "$RES/mlp_gpu_bf16.jsonl" "$RES/mlp_gpu_bf16.err"
  { [ "$bf" -ne 0 ] && [ "$bf" -ne 3 ]; } && rc=1
  gc_results_tar
  python3 bench/mlp_gpu/run.py --from "$RES" --no-write | sed -n '/^|/p;/^Goals/,$p'
  python3 tools/gpu-env.py bench "$RES/mlp_gpu_m1.jsonl" "$RES/mlp_gpu_t1.jsonl" | sed 's/^/@summary /'
  gf_maybe_hang mlp_gpu
  gc_exit "$rc"
}

stage_allreduce() {
  gc_bench_env
  env "$(gf_bin_env)" "$G/bin/bench_allreduce_gpu" 20 | tee "$RES/allreduce_gpu.txt"
  local rc=${PIPESTATUS[0]}
  gc_results_tar
  echo "@summary $(grep -c . "$RES/allreduce_gpu.txt") lines (bytes communicator us_per_call)"
  gf_maybe_hang allreduce
  gc_exit "$rc"
}

stage_cnn_gpu() {
  gc_bench_env
  python3 bench/cnn_gpu/run.py --n 1 --no-write --output "$RES/cnn_gpu.md" \
    --raw "$RES/cnn_gpu-runs.jsonl" --mirrored-cmd "$(gc_r_cmd bench/cnn_cpu/mirrored.R)" |
    tee "$RES/cnn_gpu.md.console" | tail -n 12
  local rc=${PIPESTATUS[0]}
  gc_results_tar
  gf_maybe_hang cnn_gpu
  gc_exit "$rc"
}

stage_mixed() {
  gc_bench_env
  python3 bench/mixed_precision/run.py --device gpu --n 1 --acc-seeds 0 --no-overflow --no-write \
    --output "$RES/mixed_precision_gpu.md" --raw "$RES/mixed_precision_gpu-runs.jsonl" \
    --mirrored-cmd "$(gc_r_cmd bench/mixed_precision/mirrored.R)" |
    tee "$RES/mixed_precision_gpu.md.console" | tail -n 16
  local rc=${PIPESTATUS[0]}
  gc_results_tar
  gf_maybe_hang mixed
  gc_exit "$rc"
}

stage_cxx_rest() {
  gf_gtest "$(gc_rest_filter)"
  local rc=$?
  gf_maybe_hang cxx_rest
  exit $rc
}

gc_main() {
  gf_begin gpu-check "${MR_CHECK_BUDGET:-530}" env.txt cxx.log r.log bench.log results.tar
  gf_run env plain 45 env.txt
  gf_run r_suite plain 210 r.log
  gf_run mlp_gpu plain 100 bench.log
  gf_run allreduce plain 40 bench.log
  gf_run cnn_gpu plain 75 bench.log
  gf_run mixed plain 100 bench.log
  gf_run cxx_rest gtest 150 cxx.log
  gf_verdict "gpu-check"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  if [ "${1:-}" = __stage ]; then
    cd "$REPO" || exit 1
    "stage_$2"
    exit $?
  fi
  cd "$REPO" || exit 1
  gc_main
fi
