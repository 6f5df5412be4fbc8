#!/usr/bin/env bash
# The first command of every GPU lease: `bash tools/gpu-first.sh`, run on the GPU
# machine from the repository root with the pack carried (device tool:
# run(command="bash tools/gpu-first.sh", carry=[".gpu"], timeout_s=560), then
# give_back). tools/gpu-pack.sh builds the pack here beforehand.
#
# Stages, in order of what they decide; each runs in its own process with its
# own time box (coreutils timeout, TERM then KILL 5 s later, the whole process
# group), and none starts later than the budget allows (MR_FIRST_BUDGET, 530 s
# from the start, so that the 560 s limit is never reached):
#   env        nvidia-smi; torch, its cuDNN and NCCL (python3); the CUDA libraries
#              the mirrored binaries and R will load (python3's site-packages/
#              nvidia/*/lib), loaded and their versions; ldd of every binary,
#              mirrored.so and every packed library with that path: any "not
#              found" is the verdict; the commit packed (commit.txt in the pack)
#   smoke      C++: memory, bad device, typed ops, events and polled waits
#              (deadline, abort), GEMM parity, sticky errors, device names
#   ops        C++: every op on the GPU against the CPU
#   train      C++: 1 GPU = 1 CPU replica, steps allocate nothing, graphs replay
#              bit for bit, device input and resident data, the convnet
#   r_gpu0     R: library(mirrored), list_devices(), the vignette on /gpu:0
#   r_gpu2     R: the vignette on 2 logical GPUs of GPU 0 (peer-copy all-reduce)
#   nccl       C++: NCCL with one rank, gradient buckets, abort and recovery,
#              the multi-worker NCCL path, peer links (NCCL_DEBUG=WARN)
#   bench      bench_mlp_gpu 200 20 and bench/mlp_gpu/torch_peer.py on the same GPU
#   sanitizer  compute-sanitizer memcheck on the first stage that crashed or
#              timed out (only its running test when one is named), else on the
#              smoke's memory test and one training test
# C++ stages run mr_tests with MIRRORED_TEST_CUDA=1 (a skip for want of a GPU is
# a failure); a time-out names the test that was running (the last [ RUN ] line).
#
# Output, under $OUT (default /tmp/gpu-out), written as the stages go, 7 files:
#   summary.txt  a header (commit, dates), ".. NAME started" before each stage
#                and one result line after it (PASS, FAIL, NOGPU, TIMEOUT, CRASH,
#                SKIP), then the verdict; each line is written whole, so a kill at
#                any moment leaves the verdict so far
#   env.txt      the env stage's full output;  cxx.log  the C++ stages' output
#   tests.tsv    stage, status, test, ms for every C++ test run
#   r.log  bench.log  sanitizer.log
# Inputs: .gpu/gpu.tar.xz (unpacked once into MR_GPU_DIR, default
# /tmp/gpu-pack), python3 (the one holding torch), the repository (bench/).
# For the rehearsal (tools/gpu-rehearse.sh): MR_REHEARSE_HANG=STAGE makes that
# stage hang after its work (a planted [ RUN ] line, TERM ignored);
# MR_BOX_<STAGE>=SECONDS overrides a box. Exit status: 0 when every stage passed.
set -uo pipefail

GF_SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
OUT=${OUT:-/tmp/gpu-out}
G=${MR_GPU_DIR:-/tmp/gpu-pack}
# The stages' shared facts (GPU count, library folders) live here, not in $OUT.
GF_STATE=${GF_STATE:-$G.state}

# ---- the machinery (tools/gpu-check.sh sources this file for it) -----------

# One whole line to the summary (a single write: a kill never tears it) and to
# the console.
gf_note() {
  printf '%s\n' "$*" >>"$OUT/summary.txt"
  printf '%s\n' "$*"
}

# The CUDA libraries for the mirrored binaries and R (never for python3/torch).
gf_bin_env() {
  printf '%s' "LD_LIBRARY_PATH=${MR_NVLIBS:+$MR_NVLIBS:}$G/r/libs"
}

# Unpacks the pack once (again only when its commit.txt differs) and finds the
# GPU machine's libraries; exports MR_NVLIBS. Returns 1 when there is no pack.
gf_prepare() {
  mkdir -p "$OUT" "$GF_STATE"
  local pack="$REPO/.gpu/gpu.tar.xz" t0
  if [ ! -f "$pack" ]; then
    gf_note "no pack: $pack is missing (tools/gpu-pack.sh here, then carry .gpu)"
    return 1
  fi
  t0=$(date +%s)
  if [ -f "$G/commit.txt" ] && tar --occurrence=1 -xJOf "$pack" commit.txt 2>/dev/null | cmp -s - "$G/commit.txt"; then
    GF_UNPACK="already unpacked"
  else
    rm -rf "$G" && mkdir -p "$G"
    if command -v xz >/dev/null; then
      timeout 90 tar -xJf "$pack" -C "$G" || { gf_note "unpack failed (tar -xJf $pack)"; return 1; }
    else
      timeout 120 python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
        "$pack" "$G" || { gf_note "unpack failed (python3 tarfile, no xz here)"; return 1; }
    fi
    GF_UNPACK="unpacked in $(($(date +%s) - t0)) s"
  fi
  if [ -z "${MR_NVLIBS+x}" ]; then
    MR_NVLIBS=$(timeout 30 python3 "$REPO/tools/gpu-env.py" libdirs 2>"$GF_STATE/libdirs.err")
  fi
  export MR_NVLIBS
}

# The header's first line is written before anything that takes time (the
# pack's check or unpacking, the library search), so that a kill in the
# first seconds still leaves a summary; the pack's lines follow.
gf_header() {
  local what=$1
  gf_note "$what $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(cat /proc/sys/kernel/hostname 2>/dev/null); budget ${GF_BUDGET}s"
}

gf_header_pack() {
  gf_note "pack: $GF_UNPACK; $(sed -n 1p "$G/commit.txt" 2>/dev/null); $(sed -n 2p "$G/commit.txt" 2>/dev/null | cut -c1-100)"
  gf_note "pack: $(sed -n '3,4p' "$G/commit.txt" 2>/dev/null | paste -sd'\t' | sed 's/\t/; /g')"
}

# gf_run NAME KIND BOX LOG: runs `bash $GF_SELF __stage NAME` under timeout,
# its output appended to $OUT/LOG, then appends its result line to the summary.
# KIND gtest: the result is read from gtest's lines; KIND plain: from the exit
# status (0 PASS, 3 NOGPU, 4 SKIP, else FAIL) and the stage's "@summary " lines.
GF_FIRST_BAD=""
GF_FIRST_BAD_TEST=""
GF_FAILED=""
gf_run() {
  local name=$1 kind=$2 box=$3 log=$4
  local var="MR_BOX_${name}" left start rc el offset seg status detail last
  left=$((GF_DEADLINE - $(date +%s) - 2))
  [ -n "${!var:-}" ] && box=${!var}
  if [ "$left" -lt 8 ]; then
    gf_note "$(printf '[%-9s] %-7s %4ss  %s' "$name" SKIP 0 "no time left in the budget")"
    GF_FAILED="$GF_FAILED $name"
    return
  fi
  [ "$box" -gt "$left" ] && box=$left
  touch "$OUT/$log"
  printf '\n==== %s (box %s s) %s ====\n' "$name" "$box" "$(date -u +%H:%M:%SZ)" >>"$OUT/$log"
  offset=$(stat -c %s "$OUT/$log")
  gf_note ".. $name started (box ${box}s, at +$(($(date +%s) - GF_T0))s)"
  start=$(date +%s)
  # (The braces keep bash's "Killed" notice, when KILL ends the box, off the console.)
  { timeout -k 5 "$box" bash "$GF_SELF" __stage "$name" >>"$OUT/$log" 2>&1 </dev/null; } 2>/dev/null
  rc=$?
  el=$(($(date +%s) - start))
  seg="$GF_STATE/$name.seg"
  tail -c +$((offset + 1)) "$OUT/$log" >"$seg"
  detail=$(sed -n 's/^@summary //p' "$seg" | paste -sd'\t' | sed 's/\t/; /g')
  if [ "$rc" -eq 124 ] || { [ "$rc" -eq 137 ] && [ "$el" -ge "$box" ]; }; then
    status=TIMEOUT
    last=$(gf_last_run "$seg")
    if [ "$kind" = gtest ]; then
      # What ended before the kill still counts (and goes to tests.tsv).
      local tstatus=$status
      gf_gtest_result "$name" "$seg" 0
      status=$tstatus
      detail="before it: ${detail%% (*}"
    fi
    if [ -n "$last" ]; then
      detail="killed at its ${box}s box while running $last${detail:+; $detail}"
      GF_LAST_TEST=$last
    else
      detail="killed at its ${box}s box; last output: $(grep -v '^@summary' "$seg" | grep -v '^\s*$' | tail -1 | cut -c1-120)"
      GF_LAST_TEST=""
    fi
  elif [ "$kind" = gtest ]; then
    gf_gtest_result "$name" "$seg" "$rc"
  else
    case $rc in
      0) status=PASS ;;
      3) status=NOGPU
         [ -z "$detail" ] && detail="last output: $(grep -v '^\s*$' "$seg" | tail -1 | cut -c1-120)" ;;
      4) status=SKIP ;;
      *) if [ "$rc" -gt 128 ]; then
           status=CRASH
           detail="signal $((rc - 128)); last output: $(grep -v '^\s*$' "$seg" | tail -1 | cut -c1-120)${detail:+; $detail}"
         else
           status=FAIL
           [ -z "$detail" ] && detail="exit $rc; last output: $(grep -v '^\s*$' "$seg" | tail -1 | cut -c1-120)"
         fi ;;
    esac
    GF_LAST_TEST=""
  fi
  case $status in
    PASS | SKIP) ;;
    *) GF_FAILED="$GF_FAILED $name" ;;
  esac
  if [ -z "$GF_FIRST_BAD" ] && { [ "$status" = TIMEOUT ] || [ "$status" = CRASH ]; }; then
    GF_FIRST_BAD=$name
    GF_FIRST_BAD_TEST=$GF_LAST_TEST
  fi
  gf_note "$(printf '[%-9s] %-7s %4ss  %s' "$name" "$status" "$el" "$detail")"
}

# The test a gtest process was running: the last [ RUN ] line not followed by
# that test's result line.
gf_last_run() {
  local t
  t=$(sed -n 's/^\[ RUN      \] \([^ ]*\).*/\1/p' "$1" | tail -1)
  [ -z "$t" ] && return
  if grep -qE "^\[ +(OK|FAILED|SKIPPED) +\] $t \(" "$1"; then
    echo "(between tests, after $t)"
  else
    echo "$t"
  fi
}

# Sets status/detail from a gtest segment; appends its tests to tests.tsv.
gf_gtest_result() {
  local name=$1 seg=$2 rc=$3 pass fail skip failed nogpu
  pass=$(grep -cE '^\[ +OK \] .* \([0-9]+ ms\)$' "$seg")
  fail=$(grep -cE '^\[  FAILED  \] .* \([0-9]+ ms\)$' "$seg")
  skip=$(grep -cE '^\[  SKIPPED \] .* \([0-9]+ ms\)$' "$seg")
  sed -nE 's/^\[ +(OK|FAILED|SKIPPED) +\] ([^ ]+) \(([0-9]+) ms\)$/\1\t\2\t\3/p' "$seg" |
    awk -v s="$name" -F'\t' '{print s "\t" $1 "\t" $2 "\t" $3}' >>"$OUT/tests.tsv"
  failed=$(sed -nE 's/^\[  FAILED  \] ([^ ]+) \([0-9]+ ms\)$/\1/p' "$seg" | head -6 | paste -sd' ')
  [ "$fail" -gt 6 ] && failed="$failed ..."
  nogpu=$(grep -c 'but no CUDA device is usable' "$seg")
  detail="$pass passed, $fail failed, $skip skipped${failed:+ ($failed)}"
  GF_LAST_TEST=""
  if [ "$rc" -eq 127 ] && [ $((pass + fail + skip)) -eq 0 ]; then
    status=FAIL
    detail="cannot start (exit 127): $(grep -v '^filter:' "$seg" | grep -v '^\s*$' | tail -1 | cut -c1-160)"
  elif [ "$rc" -gt 128 ] || ! grep -q '^\[==========\] .* ran\.' "$seg"; then
    status=CRASH
    GF_LAST_TEST=$(gf_last_run "$seg")
    detail="exit $rc$([ "$rc" -gt 128 ] && echo " (signal $((rc - 128)))")${GF_LAST_TEST:+ in $GF_LAST_TEST}; $detail"
  elif [ $((pass + fail + skip)) -eq 0 ]; then
    status=FAIL
    detail="no test matched the filter"
  elif [ "$fail" -gt 0 ] && [ "$nogpu" -ge "$fail" ]; then
    status=NOGPU
  elif [ "$fail" -gt 0 ] || [ "$rc" -ne 0 ]; then
    status=FAIL
  else
    status=PASS
  fi
}

# mr_tests with a filter, on the GPU libraries, skips turned into failures.
gf_gtest() {
  local filter=$1
  shift
  echo "filter: $filter"
  env "$(gf_bin_env)" MIRRORED_TEST_CUDA=1 "$@" "$G/bin/mr_tests" --gtest_color=no \
    --gtest_filter="$filter"
}

# The planted hang of the rehearsal: after the stage's work, a test that never
# ends and ignores TERM (the box's KILL must end it).
gf_maybe_hang() {
  if [ "${MR_REHEARSE_HANG:-}" = "$1" ]; then
    echo "[ RUN      ] Rehearsal.PlantedHangIn_$1"
    trap '' TERM
    sleep 100000
  fi
}

# The verdict line; exit status 0 only when every stage passed.
gf_verdict() {
  local what=$1 missing gpus
  missing=$(cat "$GF_STATE/missing" 2>/dev/null)
  gpus=$(cat "$GF_STATE/gpus" 2>/dev/null || echo "?")
  if [ -n "$missing" ]; then
    gf_note "verdict: MISSING LIBRARIES ($missing): fix the pack or the library path before anything else"
  elif [ "$gpus" = 0 ]; then
    gf_note "verdict: no GPU (nvidia-smi and torch see none); every stage started and ended${GF_FAILED:+ (not passed:$GF_FAILED)}"
  elif [ -z "$GF_FAILED" ]; then
    gf_note "verdict: $what: every stage passed"
  else
    gf_note "verdict: $what: not passed:$GF_FAILED${GF_FIRST_BAD:+ (first crash/time-out: $GF_FIRST_BAD${GF_FIRST_BAD_TEST:+ in $GF_FIRST_BAD_TEST})}"
  fi
  gf_note "done at +$(($(date +%s) - GF_T0))s; files in $OUT: $(find "$OUT" -type f | wc -l)"
  [ -z "$GF_FAILED" ] && [ -z "$missing" ]
}

# ---- the stages (each runs as `bash gpu-first.sh __stage NAME`) -------------

# The C++ groups (gtest filters; the GPU tests are those that skip without a
# GPU, tools/gpu-check.sh runs the whole suite).
F_SMOKE='GpuOps.MemoryIsZeroedAndRoundTrips:GpuBackend.*:GpuTypedOps.*:GpuEvents.*:GpuOps.GemmAllTransposesAndEdgeShapes:CudaErrors.*:BackendCachedFreeBytes.*:BackendUploadOn.*:Devices.*:GpuUtilization.*:StepClock.GpuReportHasDeviceMemoryAndUtilisation'
F_OPS='GpuOps.*:GpuShapeOps.*:GpuTracedOps.*:GpuTracedGraph.*:GpuTracedUsers.*:Losses.CudaMatchesCpu:Metric.GpuStatesEqualTheCpu:LayerNormOps.CudaMatchesCpu:RegularizationOps.CudaMatchesCpu:EmbeddingOps.CudaMatchesCpuAndReportsBadIndices:MixedPrecisionGpu.*:NanPropagation.Gpu:GpuGatherRows.*:GpuConv.CudnnAndIm2colPassesMatchTheCpu-GpuOps.MemoryIsZeroedAndRoundTrips:GpuOps.GemmAllTransposesAndEdgeShapes'
F_TRAIN='GpuTraining.OneGpuReplicaEqualsOneCpuReplica:GpuTraining.StepsAllocateNothing:GpuTraining.TwoLogicalGpusOnOnePhysicalGpuUseTheFallbacks:StepGraphsGpu.*:GpuDeviceInput.*:GpuResidentInput.*:GpuConv.ConvnetTrainsAsOnTheCpuAndStepsAllocateNothing:Conv.ExecutorPreparesEveryConvolutionOutsideTheStep-StepGraphsGpu.NcclReplicasReplayTheAllReduce'
F_NCCL='GpuTraining.NcclWithOneRankIsTheIdentity:GpuTraining.NcclOnTwoOrMorePhysicalGpus:GpuGradBuckets.*:GpuCommAbort.*:GpuMultiWorker.*:GpuLinks.*:StepGraphsGpu.NcclReplicasReplayTheAllReduce-GpuMultiWorker.ChildWorker'

stage_env() {
  echo "== nvidia-smi"
  local gpus=0 nv missing="" f
  if command -v nvidia-smi >/dev/null; then
    timeout 20 nvidia-smi 2>&1
    timeout 10 nvidia-smi topo -m 2>&1
    gpus=$(timeout 10 nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
    nv=$(timeout 10 nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap \
      --format=csv,noheader 2>/dev/null | head -1)
    echo "@summary GPUs: $gpus ${nv:+($nv)}"
  else
    echo "@summary no nvidia-smi on PATH"
  fi
  echo "$gpus" >"$GF_STATE/gpus"
  echo "== python3 and torch ($(command -v python3))"
  timeout 60 python3 "$REPO/tools/gpu-env.py" torch 2>&1 | tee "$GF_STATE/torch.txt"
  echo "@summary $(grep -m1 '^torch' "$GF_STATE/torch.txt" | sed 's/ from .*//')"
  echo "== the CUDA libraries of the mirrored binaries and R (python3's site-packages)"
  cat "$GF_STATE/libdirs.err" 2>/dev/null
  echo "MR_NVLIBS=$MR_NVLIBS"
  timeout 60 python3 "$REPO/tools/gpu-env.py" probe "$MR_NVLIBS" 2>&1 | tee "$GF_STATE/probe.txt"
  echo "@summary libs: $(grep -E '^(cudart|cublas|nccl|cudnn):' "$GF_STATE/probe.txt" | sed 's/ (.*//' | paste -sd, | sed 's/,/, /g')$(grep -q 'NOT FOUND\|FAILS' "$GF_STATE/probe.txt" && echo ' (SOME MISSING, see env.txt)') from $(echo "$MR_NVLIBS" | cut -d: -f1 | sed 's|/nvidia/.*||')"
  echo "== ldd (binaries: $(gf_bin_env); R: $G/r/libs:$G/r/home/lib:\$MR_NVLIBS)"
  local n=0 nf=0
  : >"$GF_STATE/notfound"
  for f in "$G"/bin/*; do
    echo "-- $f"
    env "$(gf_bin_env)" ldd "$f" >"$GF_STATE/ldd.txt" 2>&1
    cat "$GF_STATE/ldd.txt"
    grep 'not found' "$GF_STATE/ldd.txt" | sed "s|^[[:space:]]*|${f#"$G"/}: |" >>"$GF_STATE/notfound"
    n=$((n + 1))
  done
  local rlp="$G/r/libs:$G/r/home/lib${MR_NVLIBS:+:$MR_NVLIBS}"
  local so="$G/r/site-library/mirrored/libs/mirrored.so"
  echo "-- $so"
  LD_LIBRARY_PATH=$rlp ldd "$so" 2>&1
  # Every other library of the pack, and every library of the GPU folders
  # (cuDNN dlopens its sub-libraries: each must resolve too).
  while IFS= read -r -d '' f; do
    n=$((n + 1))
    LD_LIBRARY_PATH=$rlp ldd "$f" 2>&1 | grep 'not found' | sed "s|^[[:space:]]*|${f#"$G"/}: |" >>"$GF_STATE/notfound"
  done < <(find "$G/r" -type f \( -name '*.so' -o -name '*.so.*' -o -path '*/bin/exec/*' \) -print0)
  for d in ${MR_NVLIBS//:/ }; do
    for f in "$d"/*.so*; do
      [ -f "$f" ] || continue
      n=$((n + 1))
      LD_LIBRARY_PATH=$MR_NVLIBS ldd "$f" 2>&1 | grep 'not found' | sed "s|^[[:space:]]*|$f: |" >>"$GF_STATE/notfound"
    done
  done
  nf=$(wc -l <"$GF_STATE/notfound")
  echo "-- not found, in all $n files: $nf"
  cat "$GF_STATE/notfound"
  missing=$(awk '{print $2}' "$GF_STATE/notfound" | sort -u | paste -sd' ')
  echo "$missing" >"$GF_STATE/missing"
  [ -z "$missing" ] && : >"$GF_STATE/missing"
  echo "-- where mirrored.so's CUDA libraries resolve"
  LD_LIBRARY_PATH=$rlp ldd "$so" 2>&1 | grep -E 'libcud|libnccl|libcublas|not found' | sed 's/ (0x.*//'
  echo "@summary ldd: $n files, $nf 'not found'${missing:+ ($missing)}; mirrored.so: $(LD_LIBRARY_PATH=$rlp ldd "$so" 2>&1 | grep -E 'libcudnn|libnccl' | sed 's/ (0x.*//; s/^[[:space:]]*//; s|=> .*/nvidia/|=> nvidia/|' | paste -sd, | sed 's/,/, /g')"
  echo "== the pack"
  cat "$G/commit.txt"
  echo "== tools"
  for f in compute-sanitizer nvcc git xz gdb cuda-gdb; do
    echo "$f: $(command -v "$f" || ls /usr/local/cuda/bin/"$f" 2>/dev/null || echo absent)"
  done
  echo "CPUs: $(nproc); memory: $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo); kernel $(uname -r)"
  gf_maybe_hang env
  [ -n "$missing" ] && exit 1
  [ "$gpus" = 0 ] && exit 3
  exit 0
}

stage_smoke() { gf_gtest "$F_SMOKE"; local rc=$?; gf_maybe_hang smoke; exit $rc; }
stage_ops() { gf_gtest "$F_OPS"; local rc=$?; gf_maybe_hang ops; exit $rc; }
stage_train() { gf_gtest "$F_TRAIN"; local rc=$?; gf_maybe_hang train; exit $rc; }
stage_nccl() { NCCL_DEBUG=WARN gf_gtest "$F_NCCL"; local rc=$?; gf_maybe_hang nccl; exit $rc; }

# The vignette's code on the GPU: $1 = gpu0 (/gpu:0) or gpu2 (2 logical GPUs).
# Exit status 3: R sees no GPU.
gf_r_vignette() {
  local script="$GF_STATE/vignette.R"
  cat >"$script" <<'EOF'
mode <- commandArgs(TRUE)[1]
say <- function(...) cat("@summary ", ..., "\n", sep = "")
t0 <- proc.time()[["elapsed"]]
suppressPackageStartupMessages(library(mirrored))
cat(sprintf("mirrored %s: built_with_cuda %s, nccl %s, cudnn %s; cuda_device_count() %d\n",
            format(utils::packageVersion("mirrored")), built_with_cuda(), built_with_nccl(),
            built_with_cudnn(), cuda_device_count()))
print(list_devices())
if (cuda_device_count() < 1) {
  say("R loads mirrored (CUDA ", built_with_cuda(), ", NCCL ", built_with_nccl(),
      ", cuDNN ", built_with_cudnn(), ") and sees no GPU")
  quit(status = 3)
}
if (mode == "gpu2") set_logical_devices("GPU", 2)
strategy <- mirrored_strategy(if (mode == "gpu2") c("/gpu:0", "/gpu:1") else "/gpu:0")
print(strategy)
set_random_seed(1)
c(c(x, y), c(xt, yt)) %<-% dataset_mnist_sample()
x <- array_reshape(x, c(-1, 784)); xt <- array_reshape(xt, c(-1, 784))
train <- list(x[1:3000, ], y[1:3000]) |> tensor_slices_dataset() |> dataset_batch(64)
val <- list(x[3001:4000, ], y[3001:4000]) |> tensor_slices_dataset() |> dataset_batch(64)
test <- list(xt[1:2000, ], yt[1:2000]) |> tensor_slices_dataset() |> dataset_batch(64)
with(strategy$scope(), {
  inputs <- keras_input(shape = 784)
  outputs <- inputs |> layer_dense(units = 256, activation = "relu") |>
    layer_dense(units = 256, activation = "relu") |> layer_dense(units = 10)
  model <- keras_model(inputs, outputs)
  model |> compile(optimizer = optimizer_adam(),
                   loss = loss_sparse_categorical_crossentropy(from_logits = TRUE),
                   metrics = list(metric_sparse_categorical_accuracy()))
})
h <- model |> fit(train, epochs = 2, validation_data = val, verbose = 2)
r <- model |> evaluate(test, verbose = 2)
g <- cuda_graph_stats(model)
str(g)
say(sprintf("%d replica(s): test loss %.4f, accuracy %.4f; graphs %d captures, %d replays, %d eager steps%s; %.1f s",
            strategy$num_replicas_in_sync, r[[1]], r[[2]], as.integer(g$captures),
            as.integer(g$replays), as.integer(g$eager_steps),
            if (isTRUE(g$capture_failed)) " (CAPTURE FAILED)" else "",
            proc.time()[["elapsed"]] - t0))
EOF
  env LD_LIBRARY_PATH="${MR_NVLIBS:-}" MIRRORED_TEST_CUDA=1 "$G/r/R" --vanilla -q -f "$script" --args "$1"
}
stage_r_gpu0() { gf_r_vignette gpu0; local rc=$?; gf_maybe_hang r_gpu0; exit $rc; }
stage_r_gpu2() { gf_r_vignette gpu2; local rc=$?; gf_maybe_hang r_gpu2; exit $rc; }

stage_bench() {
  local gpus rc1 rc2 raw="$GF_STATE/bench.jsonl"
  gpus=$(cat "$GF_STATE/gpus" 2>/dev/null || echo 0)
  : >"$raw"
  echo "== bench_mlp_gpu 200 20"
  env "$(gf_bin_env)" "$G/bin/bench_mlp_gpu" 200 20 2>&1 | tee -a "$raw"
  rc1=${PIPESTATUS[0]}
  echo "== bench/mlp_gpu/torch_peer.py --steps 200 --warm 20 (python3, its own libraries)"
  python3 "$REPO/bench/mlp_gpu/torch_peer.py" --steps 200 --warm 20 2>&1 | tee -a "$raw"
  rc2=${PIPESTATUS[0]}
  python3 "$REPO/tools/gpu-env.py" bench "$raw" | sed 's/^/@summary /'
  gf_maybe_hang bench
  [ "$gpus" = 0 ] && [ "$rc1" -ne 0 ] && exit 3
  [ "$rc1" -eq 0 ] && [ "$rc2" -eq 0 ]
}

# compute-sanitizer memcheck on MR_SAN_STAGE (its test MR_SAN_TEST when named).
stage_sanitizer() {
  local cs stage=${MR_SAN_STAGE:-} test=${MR_SAN_TEST:-} filter rc
  cs=$(command -v compute-sanitizer)
  [ -z "$cs" ] && [ -x /usr/local/cuda/bin/compute-sanitizer ] && cs=/usr/local/cuda/bin/compute-sanitizer
  gf_maybe_hang sanitizer
  if [ -z "$cs" ]; then
    echo "@summary compute-sanitizer not found (target would have been ${stage:-the smoke}${test:+ $test})"
    exit 4
  fi
  local san=("$cs" --tool memcheck --print-limit 30 --error-exitcode 9 --target-processes all)
  case $stage in
    r_gpu0 | r_gpu2)
      echo "== memcheck: R vignette ($stage)"
      env LD_LIBRARY_PATH="${MR_NVLIBS:-}" "${san[@]}" "$G/r/R" --vanilla -q \
        -f "$GF_STATE/vignette.R" --args "${stage#r_}"
      rc=$? ;;
    bench)
      echo "== memcheck: bench_mlp_gpu 20 2"
      env "$(gf_bin_env)" "${san[@]}" "$G/bin/bench_mlp_gpu" 20 2
      rc=$? ;;
    *)
      case $stage in
        smoke) filter=$F_SMOKE ;; ops) filter=$F_OPS ;; train) filter=$F_TRAIN ;;
        nccl) filter=$F_NCCL ;;
        *) filter='GpuOps.MemoryIsZeroedAndRoundTrips:GpuTraining.OneGpuReplicaEqualsOneCpuReplica' ;;
      esac
      case $test in "" | "("*) ;; *) filter=$test ;; esac
      echo "== memcheck: mr_tests --gtest_filter=$filter (${stage:-nothing crashed or timed out})"
      env "$(gf_bin_env)" MIRRORED_TEST_CUDA=1 "${san[@]}" "$G/bin/mr_tests" --gtest_color=no \
        --gtest_filter="$filter"
      rc=$? ;;
  esac
  echo "@summary memcheck on ${stage:-smoke+training}${test:+ ($test)}: exit $rc"
  exit "$rc"
}

# The start of a run (this script's and gpu-check.sh's): the budget from now,
# a fresh $OUT (the summary, tests.tsv and the run's own files removed) and
# state, the pack unpacked, the summary's header.
#   gf_begin NAME BUDGET_SECONDS FILE...
gf_begin() {
  local name=$1 budget=$2 f
  shift 2
  GF_T0=$(date +%s)
  GF_BUDGET=$budget
  GF_DEADLINE=$((GF_T0 + GF_BUDGET))
  export OUT G GF_STATE
  mkdir -p "$OUT"
  rm -f "$OUT/summary.txt" "$OUT/tests.tsv"
  for f in "$@"; do rm -f "${OUT:?}/$f"; done
  rm -rf "$GF_STATE"
  gf_header "$name"
  gf_prepare || exit 1
  gf_header_pack
}

# ---- main ------------------------------------------------------------------
gf_main() {
  gf_begin gpu-first "${MR_FIRST_BUDGET:-530}" env.txt cxx.log r.log bench.log sanitizer.log
  gf_run env plain 45 env.txt
  gf_run smoke gtest 60 cxx.log
  gf_run ops gtest 100 cxx.log
  gf_run train gtest 120 cxx.log
  gf_run r_gpu0 plain 75 r.log
  gf_run r_gpu2 plain 60 r.log
  gf_run nccl gtest 75 cxx.log
  gf_run bench plain 90 bench.log
  export MR_SAN_STAGE=$GF_FIRST_BAD MR_SAN_TEST=$GF_FIRST_BAD_TEST
  gf_run sanitizer plain 150 sanitizer.log
  gf_verdict "gpu-first"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  if [ "${1:-}" = __stage ]; then
    "stage_$2"
    exit $?
  fi
  cd "$REPO" || exit 1
  gf_main
fi
