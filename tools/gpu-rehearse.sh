#!/usr/bin/env bash
# Rehearses the first GPU contact here, without a GPU: runs tools/gpu-first.sh as
# the GPU machine would, on a copy of what travels there (tracked and
# untracked-not-ignored files, and the pack in .gpu/), in a mount namespace
# where this machine's CUDA toolkit, any system cuDNN/NCCL/cuBLAS/cudart and R
# are hidden, with a python3 whose site-packages hold the same nvidia-* wheels
# as the GPU machine's (those torch 2.11.0+cu130 requires, pinned below). Then
# checks, and prints as it checks:
#   1. every library of every binary, of mirrored.so and of the GPU folders
#      resolves, the CUDA ones from the venv ("not found" nowhere);
#   2. every stage starts and ends with a result line; a hang planted in one
#      stage (MR_REHEARSE_HANG, TERM ignored) is killed at its box and named,
#      and the later stages still run; the verdict is "no GPU";
#   3. at most 8 files come back in $OUT, named as the device tool requires;
#   4. a second run (the same, hang included), killed with SIGKILL (the whole
#      namespace) at a random moment, leaves a summary.txt whose every line is
#      whole and that has the result line of every stage that ended before the
#      kill.
#
#   usage: tools/gpu-rehearse.sh [--build DIR]   (DIR: the CMake build, default build)
#   needs: the CUDA builds that `make test` makes when nvcc exists (DIR/mr_tests,
#          DIR/bench_*_gpu with MR_CUDA=ON; .lib/mirrored with CUDA); it builds
#          nothing. Linux, root, unshare -m -p; pip reaching PyPI the first time.
#   cache: the venv, ~1.6 GB, in $MR_GPU_VENV_CACHE (default
#          /var/cache/mirrored)/gpu-venv-KEY, KEY a hash of the pins and the
#          Python version; made once (under flock), reused by later runs and
#          checkouts; older keys are removed when a new one is made.
#   work:  DIR/rehearse/ (the tree copy, the pack, out1/ and out2/, rehearsal.log)
#   env:   MR_REHEARSE_HANG (stage to hang, default train), MR_REHEARSE_KILL_AT
#          (seconds into the second run, default random).
#   exit:  0 every check passed; 1 a check failed; 77 skipped (not Linux/root,
#          no unshare, no CUDA build, or the pip packages cannot be installed),
#          the reason printed.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
while [ $# -gt 0 ]; do
  case $1 in
    --build) build=$2; shift ;;
    *) sed -n '2,38p' "$0" >&2; exit 2 ;;
  esac
  shift
done
build=$(cd "$build" 2>/dev/null && pwd) || { echo "gpu-rehearse: SKIP: no build folder $build"; exit 77; }
W=$build/rehearse
t_start=$(date +%s)
skip() { echo "gpu-rehearse: SKIP: $*"; exit 77; }
fail() { echo "gpu-rehearse: FAIL: $*"; exit 1; }
say() { echo "gpu-rehearse: $*"; }

# The nvidia-* wheels of torch 2.11.0 (cu130) on Linux, as its Requires-Dist pins them
# (cuda-toolkit[cublas,cudart,nvjitlink,nvrtc,...]==13.0.2, nvidia-cudnn-cu13==9.19.0.56,
# nvidia-nccl-cu13==2.28.9): the CUDA libraries the mirrored binaries load there.
PINS="nvidia-cuda-runtime==13.0.96 nvidia-cublas==13.1.0.3 nvidia-cuda-nvrtc==13.0.88
nvidia-nvjitlink==13.0.88 nvidia-cudnn-cu13==9.19.0.56 nvidia-nccl-cu13==2.28.9"

# ---- preconditions -----------------------------------------------------------
[ "$(uname -s)" = Linux ] || skip "not Linux"
[ "$(id -u)" = 0 ] || skip "not root (unshare -m and the mounts that hide CUDA need it)"
unshare -m -p -f --mount-proc true 2>/dev/null || skip "unshare -m -p does not work here"
for b in mr_tests bench_mlp_gpu bench_allreduce_gpu; do
  [ -x "$build/$b" ] || skip "$build/$b is missing (a CUDA build: make core MR_CUDA=ON)"
done
[ -f .lib/mirrored/libs/mirrored.so ] || skip ".lib/mirrored is missing (make install)"
readelf -d .lib/mirrored/libs/mirrored.so | grep -q libcudart || skip ".lib was built without CUDA"

# ---- the venv (cached outside the checkout) -----------------------------------
py=python3
if command -v python3.12 >/dev/null && python3.12 -c '' 2>/dev/null; then py=python3.12; fi
pyver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
key=$(printf '%s\n%s\n' "$PINS" "$pyver" | sha256sum | cut -c1-12)
cache=${MR_GPU_VENV_CACHE:-/var/cache/mirrored}
venv=$cache/gpu-venv-$key
mkdir -p "$cache"
t0=$(date +%s)
(
  flock 9
  if [ ! -f "$venv/.complete" ]; then
    rm -rf "$venv"
    "$py" -m venv "$venv" || exit 3
    # shellcheck disable=SC2086
    "$venv/bin/python" -m pip install -q --no-compile --disable-pip-version-check \
      --no-cache-dir $PINS >"$cache/pip-$key.log" 2>&1 || exit 4
    touch "$venv/.complete"
    find "$cache" -maxdepth 1 -name 'gpu-venv-*' ! -name "gpu-venv-$key" -exec rm -rf {} +
  fi
) 9>"$cache/.lock" || {
  rc=$?
  rm -rf "$venv"
  [ "$rc" = 4 ] && skip "the pip packages cannot be installed ($PINS): $(tail -2 "$cache/pip-$key.log" | tr '\n' ' ')"
  skip "cannot make a venv with $py in $cache"
}
sp=$("$venv/bin/python" -c 'import site; print(site.getsitepackages()[0])')
say "venv $venv (python $pyver, $(du -sh "$venv" | cut -f1)), ready in $(($(date +%s) - t0)) s"

# ---- what travels: the tree as the device tool sends it, plus the pack --------
rm -rf "$W" && mkdir -p "$W/repo"
exec > >(tee "$W/rehearsal.log") 2>&1
t0=$(date +%s)
if git rev-parse --git-dir >/dev/null 2>&1; then
  # shellcheck disable=SC2016
  git ls-files -z -co --exclude-standard | xargs -0 -r sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
    tar --null -T - -cf - | tar -xf - -C "$W/repo"
else
  tar --exclude=./build --exclude=./.lib --exclude=./.gpu -cf - . | tar -xf - -C "$W/repo"
fi
# shellcheck disable=SC2094
bash tools/gpu-pack.sh --as-built --fast --build "$build" --out "$W/repo/.gpu" | sed 's/^/  /'
say "pack made in $(($(date +%s) - t0)) s"
if tar -tJf "$W/repo/.gpu/gpu.tar.xz" | grep -E '/lib(cudnn|nccl|cublas|cudart|nvrtc|nvJitLink|cuda\.so|nvidia)'; then
  fail "CUDA-family libraries in the pack (above)"
fi

# ---- the namespace: CUDA, system cuDNN/NCCL and R hidden ------------------------
hide_dirs="" hide_files=""
[ -e /usr/local/cuda ] && hide_dirs="$(readlink -f /usr/local/cuda)"
for d in /usr/local/cuda-* /opt/nvidia /usr/local/nvidia /usr/lib/R /usr/share/R /etc/R /usr/local/lib/R; do
  [ -d "$d" ] && hide_dirs="$hide_dirs $(readlink -f "$d")"
done
while read -r f; do
  f=$(readlink -f "$f")
  case $f in
    /usr/local/* | /opt/*) hide_dirs="$hide_dirs $(dirname "$f")" ;;
    *) hide_files="$hide_files $f" ;;
  esac
done < <(ldconfig -p | grep -E 'lib(cudnn|nccl|cublas|cudart|nvrtc|nvJitLink)' | awk '{print $NF}' | sort -u)
for f in /usr/bin/R /usr/bin/Rscript /usr/local/bin/nvcc; do [ -e "$f" ] && hide_files="$hide_files $f"; done
# Each folder once, and none inside another (its mount point would be gone).
hide_dirs=$(echo "$hide_dirs" | tr ' ' '\n' | grep . | sort -u |
  awk '{ for (i = 1; i <= n; i++) if (index($0 "/", kept[i] "/") == 1) next; kept[++n] = $0; print }' |
  paste -sd' ')
hide_files=$(echo "$hide_files" | tr ' ' '\n' | sort -u | grep . | paste -sd' ')
say "hidden in the namespace: folders $hide_dirs; files $hide_files"
# A bare /tmp as on a fresh machine (the pack unpacks to /tmp/gpu-pack), unless
# this checkout lives under /tmp: then the pack unpacks beside the work.
case $W in
  /tmp/*) tmp_line="export MR_GPU_DIR=$W/gpu-pack" ;;
  *) tmp_line="mount -t tmpfs -o size=4g none /tmp" ;;
esac
cat >"$W/in-namespace.sh" <<EOF
# Runs inside unshare -m -p: hides, then runs gpu-first.sh with OUT=\$1.
set -e
mount --make-rprivate /
for d in $hide_dirs; do mount -t tmpfs -o size=1m,mode=755 none "\$d"; done
for f in $hide_files; do mount --bind /dev/null "\$f"; done
$tmp_line
export PATH="$venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
unset LD_LIBRARY_PATH PYTHONPATH R_LIBS R_HOME CUDA_HOME MR_NVLIBS
[ "\$(command -v python3)" = "$venv/bin/python3" ]
if nvcc --version >/dev/null 2>&1 || R --version >/dev/null 2>&1; then echo "nvcc or R still runs"; exit 1; fi
cd "$W/repo"
export OUT=\$1
shift
exec env "\$@" bash tools/gpu-first.sh
EOF

# Checks the device tool's rules on what comes back: at most 8 files, names of
# letters, digits, '.', '_', '-', at most 2 folders down.
check_out() {
  local out=$1 n bad
  n=$(find "$out" -type f | wc -l)
  bad=$(find "$out" -mindepth 1 | sed "s|^$out/||" | grep -vE '^([A-Za-z0-9._-]+/){0,2}[A-Za-z0-9._-]+$' || true)
  say "files in $(basename "$out"): $n ($(find "$out" -type f -printf '%f %s B, ' | sed 's/, $//'))"
  [ "$n" -le 8 ] || fail "$n files in $out (at most 8 come back)"
  [ -z "$bad" ] || fail "names the device tool does not bring back: $bad"
}

# ---- run 1: the whole script, a hang planted in one stage -----------------------
hang=${MR_REHEARSE_HANG:-train}
hang_box=12
out1=$W/out1
mkdir -p "$out1"
say "run 1: gpu-first.sh with a hang planted in '$hang' (box ${hang_box}s)"
t0=$(date +%s)
set +e
unshare -m -p -f --mount-proc --kill-child bash "$W/in-namespace.sh" "$out1" \
  MR_REHEARSE_HANG="$hang" "MR_BOX_$hang=$hang_box" | sed 's/^/  | /'
rc1=${PIPESTATUS[0]}
set -e
d1=$(($(date +%s) - t0))
say "run 1 ended with status $rc1 after $d1 s"
s1=$out1/summary.txt
[ -f "$s1" ] || fail "run 1 left no summary.txt"
[ -f "$out1/env.txt" ] || fail "run 1 left no env.txt"

# 1. libraries resolved, from the venv
say "libraries of the mirrored binaries and R, as env.txt resolved them:"
sed -n '/^== ldd/,/^-- not found/p' "$out1/env.txt" |
  grep -E '^-- |^\s+lib(cudnn|nccl|cublas|cublasLt|cudart)\.so[.0-9]* =>' | sed 's/ (0x.*//; s/^/    /'
grep -E '^(cudart|cublas|nccl|cudnn|pip)[ :]' "$out1/env.txt" | sed 's/^/    /' 
nf=$(grep -c '=> not found' "$out1/env.txt" || true)
[ "$nf" = 0 ] || { grep '=> not found' "$out1/env.txt"; fail "'not found' in env.txt ($nf)"; }
grep -E '^-- not found, in all [0-9]+ files: 0$' "$out1/env.txt" | sed 's/^/    /' ||
  fail "env.txt has no 'not found ...: 0' line"
wrong=$(grep -E '^\s+lib(cudnn|nccl|cublas|cublasLt|cudart)\.so[.0-9]* =>' "$out1/env.txt" | grep -v "=> $sp/nvidia/" || true)
[ -z "$wrong" ] || fail "CUDA libraries resolved outside the venv: $wrong"
grep -q "libcudnn.so.9 => $sp/nvidia/cudnn/lib/" "$out1/env.txt" || fail "mirrored.so's cuDNN did not resolve from the venv"
grep -q 'cudnn sub-libraries loaded: 7/7' "$out1/env.txt" || fail "cuDNN's sub-libraries do not all load from the venv"
say "1. every library resolves ('not found': 0), the CUDA ones from $sp/nvidia"

# 2. stages, the planted hang, the verdict
stages="env smoke ops train r_gpu0 r_gpu2 nccl bench sanitizer"
for s in $stages; do
  grep -q "^\.\. $s started" "$s1" || fail "stage $s did not start"
  grep -qE "^\[$s *\] [A-Z]+ " "$s1" || fail "stage $s has no result line"
done
hl=$(grep -E "^\[$hang *\] " "$s1")
echo "$hl" | grep -q "TIMEOUT" || fail "the planted hang in $hang was not reported as TIMEOUT: $hl"
echo "$hl" | grep -q "Rehearsal.PlantedHangIn_$hang" || fail "the TIMEOUT does not name the running test: $hl"
hel=$(echo "$hl" | sed -E 's/^\[[a-z_0-9 ]+\] +[A-Z]+ +([0-9]+)s.*/\1/')
[ "$hel" -le $((hang_box + 6)) ] || fail "the box of $hang held $hel s, not ${hang_box}(+5) s"
after=$(echo "$stages" | tr ' ' '\n' | sed -n "/^$hang\$/,\$p" | sed 1d | paste -sd' ')
grep -q '^verdict: no GPU' "$s1" || fail "no 'verdict: no GPU' line"
say "2. summary.txt of run 1:"
sed 's/^/    /' "$s1"
say "2. every stage started and ended; '$hang' killed at its box after $hel s and named; later stages ran: $after"

# 3. what comes back
check_out "$out1"
say "3. at most 8 files, names the device tool brings back"

# ---- run 2: killed at a random moment ------------------------------------------
# Run 2 is run 1 again (the same planted hang) but finds the pack unpacked: its
# length is run 1's without the unpack, and the kill falls inside it.
done1=$(sed -n 's/^done at +\([0-9]*\)s.*/\1/p' "$s1")
unpack1=$(sed -n 's/^pack: unpacked in \([0-9]*\) s.*/\1/p' "$s1" | head -1)
d2=$((done1 - ${unpack1:-0}))
[ "$d2" -ge 4 ] || d2=4
# From 2 s on: the namespace's own set-up (mounts, the checks that CUDA and
# R are hidden) comes before gpu-first.sh, whose first act is the summary's
# first line.
kill_at=${MR_REHEARSE_KILL_AT:-$((2 + RANDOM % (d2 - 2)))}
out2=$W/out2
mkdir -p "$out2"
say "run 2: gpu-first.sh killed with SIGKILL (the whole namespace) at $kill_at s (run 1 without its unpack: ~$d2 s)"
unshare -m -p -f --mount-proc --kill-child bash "$W/in-namespace.sh" "$out2" \
  MR_REHEARSE_HANG="$hang" "MR_BOX_$hang=$hang_box" >"$W/run2.console" 2>&1 &
pid=$!
sleep "$kill_at"
kill -KILL "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
sleep 1
s2=$out2/summary.txt
[ -f "$s2" ] || fail "no summary.txt after the kill at $kill_at s"
say "4. summary.txt of run 2 after the kill:"
sed 's/^/    /' "$s2"
[ -z "$(tail -c1 "$s2")" ] || fail "the last line of summary.txt is torn"
grep -q '^gpu-first ' "$s2" || fail "no header line"
started=$(sed -n 's/^\.\. \([a-z_0-9]*\) started.*/\1/p' "$s2")
running=""
for s in $started; do
  if ! grep -qE "^\[$s *\] [A-Z]+ " "$s2"; then
    [ -z "$running" ] || fail "stages $running and $s both lack a result line"
    running=$s
  fi
done
if [ -n "$running" ]; then
  [ "$(echo "$started" | tail -1)" = "$running" ] || fail "stage $running ended before the kill but has no result line"
  grep -q '^verdict:' "$s2" && fail "a verdict but $running has no result line"
  say "4. killed while '$running' ran; every stage that ended before has its line ($(echo "$started" | grep -vc "^$running\$"))"
elif grep -q '^verdict:' "$s2"; then
  say "4. the kill came after the end (run 2 took less than $kill_at s); the summary is whole"
else
  say "4. killed between stages; every stage that started has its line ($(echo "$started" | grep -c .))"
fi
check_out "$out2"
say "PASS in $(($(date +%s) - t_start)) s (run 1: $d1 s; killed run: $kill_at s)"
