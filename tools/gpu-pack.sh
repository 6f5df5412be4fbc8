#!/usr/bin/env bash
# Builds here (CUDA toolkit and R, no GPU) what tools/gpu-first.sh and
# tools/gpu-check.sh run on the GPU machine (a driver, CUDA, and a python3 whose
# site-packages hold PyTorch's nvidia-* wheels; no R, Eigen, GoogleTest, HDF5),
# as ONE archive, by default .gpu/gpu.tar.xz (.gpu/ is ignored by git and by
# R CMD build), which unpacks to:
#   commit.txt  the commit packed, whether the tree was dirty (and what), when,
#               and the CUDA flags of both builds: the GPU machine needs no git
#   bin/        mr_tests, bench_mlp_gpu, bench_allreduce_gpu (CMake, MR_CUDA=ON)
#   r/          R, the package as installed in .lib (with CUDA) and testthat,
#               callr, processx with their dependencies (tools/pack-r.sh);
#               r/libs/ also holds what bin/ loads that is neither glibc's nor
#               the C++ runtime's nor CUDA's, each library once
# No CUDA-family library travels (libcuda, libcudart, libcublas*, libcudnn*,
# libnccl, libnvrtc, libnvJitLink, libnvidia*): the GPU machine's own, from its
# python3's site-packages/nvidia/*/lib, are put on the path of the mirrored
# binaries and R by gpu-first.sh. The pack is checked for them and fails if any.
#
#   usage: tools/gpu-pack.sh [--as-built] [--fast] [--out DIR]
#     (default)   builds for the GPU: the CMake core in build/ (only the three
#                 binaries) with CMAKE_CUDA_FLAGS=-lineinfo and
#                 MR_CUDA_ARCHITECTURES="90-real" (sm_90 machine code only:
#                 the H200 is sm_90; MR_PACK_CUDA_ARCH="80 90" for more), and
#                 the R package in .lib
#                 with MIRRORED_CUDA_ARCH="-gencode ... -lineinfo" (configure
#                 passes raw nvcc flags through); reinstalled only when
#                 src/Makevars does not have these flags. Both settings stay in
#                 build/ (CMake's cache) and .lib afterwards, harmless without
#                 a GPU; `make reinstall` and `cmake -S src/mr -B build
#                 -UMR_CUDA_ARCHITECTURES -DCMAKE_CUDA_FLAGS=` undo them.
#     --as-built  packs build/ and .lib as they are (as `make test` built them:
#                 the rehearsal), without building; fails if either lacks CUDA
#     --fast      xz -1 instead of -9e (the rehearsal: seconds, not minutes;
#                 the 56 MiB limit is then reported, not enforced)
#     --out DIR   writes DIR/gpu.tar.xz instead of .gpu/gpu.tar.xz
#     --build DIR the CMake build folder packed with --as-built (default build)
#   env: BUILD_LOCK (a prefix for the compile steps, e.g. "flock
#        /tmp/mr-build.lock"; do not also run this script under that lock),
#        JOBS (default 2), MR_PACK_CUDA_ARCH.
#   prints: the archive's size and file count, and the total that travels to
#   the GPU machine (tracked + untracked-not-ignored files + the archive),
#   which must be <= 56 MiB (the device tool carries 64): exit 1 above that.
# Then, with the device tool: run(command="bash tools/gpu-first.sh",
# carry=[".gpu"], timeout_s=560) -- see docs/gpu-runs.md.
set -euo pipefail
cd "$(dirname "$0")/.."
as_built=0
fast=0
bdir=build
out=.gpu
while [ $# -gt 0 ]; do
  case $1 in
    --as-built) as_built=1 ;;
    --fast) fast=1 ;;
    --out) out=$2; shift ;;
    --build) bdir=$2; shift ;;
    *) sed -n '2,45p' "$0" >&2; exit 2 ;;
  esac
  shift
done
LOCK=${BUILD_LOCK:-}
JOBS=${JOBS:-2}
arch=${MR_PACK_CUDA_ARCH:-90}
bins="mr_tests bench_mlp_gpu bench_allreduce_gpu"
t0=$(date +%s)

if [ "$out" = .gpu ] && git rev-parse --git-dir >/dev/null 2>&1; then
  exclude=$(git rev-parse --git-path info/exclude) # a worktree's .git is a file
  mkdir -p "$(dirname "$exclude")"
  grep -qx '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >>"$exclude"
fi

if [ "$as_built" = 0 ]; then
  # The core: only the CUDA objects and the three binaries are rebuilt when
  # the CUDA flags change (C++ objects keep theirs).
  core_arch=""
  for a in $arch; do core_arch="$core_arch;${a}-real"; done
  cmake -S src/mr -B build -DCMAKE_BUILD_TYPE=Release -DMR_CUDA=ON \
    -DMR_CUDA_ARCHITECTURES="${core_arch#;}" -DCMAKE_CUDA_FLAGS=-lineinfo >/dev/null
  # shellcheck disable=SC2086
  $LOCK cmake --build build -j"$JOBS" --target $bins
  # The package: reinstalled when src/Makevars was configured without these
  # flags (a change of flags rebuilds every object; ccache keeps the C++ ones).
  r_arch=""
  for a in $arch; do r_arch="$r_arch -gencode arch=compute_${a},code=sm_${a}"; done
  r_arch="${r_arch# } -lineinfo"
  if ! grep -q -- "$r_arch" src/Makevars 2>/dev/null || [ ! -f .lib/.mirrored.stamp ]; then
    rm -f .lib/.mirrored.stamp
    MIRRORED_CUDA=1 MIRRORED_CUDA_ARCH="$r_arch" \
      make --no-print-directory install BUILD_LOCK="$LOCK" JOBS="$JOBS" >/dev/null
  fi
fi

# What will be packed must have CUDA.
[ "$as_built" = 1 ] || bdir=build
for b in $bins; do
  [ -x "$bdir/$b" ] || { echo "gpu-pack: $bdir/$b is missing (make core MR_CUDA=ON)" >&2; exit 1; }
done
grep -q '^#define MR_WITH_CUDA 1' "$bdir/generated/build_config.h" ||
  { echo "gpu-pack: $bdir was configured without CUDA" >&2; exit 1; }
so=.lib/mirrored/libs/mirrored.so
[ -f "$so" ] || { echo "gpu-pack: $so is missing (make install)" >&2; exit 1; }
readelf -d "$so" | grep -q 'libcudart' ||
  { echo "gpu-pack: .lib was built without CUDA (make reinstall with nvcc on PATH)" >&2; exit 1; }

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

# What was packed, read there without git.
{
  if git rev-parse --git-dir >/dev/null 2>&1; then
    echo "commit $(git rev-parse HEAD) ($(git log -1 --format=%cd --date=short) $(git log -1 --format=%s | cut -c1-60))"
    dirty=$(git status --porcelain --untracked-files=normal | grep -vc ' \.gpu/$' || true)
    echo "dirty $dirty path(s) differ from the commit$([ "$dirty" -gt 0 ] && printf ': %s' "$(git status --porcelain | grep -v ' \.gpu/$' | awk '{print $2}' | head -20 | tr '\n' ' ')")"
  else
    echo "commit unknown (no git here)"
    echo "dirty unknown"
  fi
  echo "packed $(date -u +%Y-%m-%dT%H:%MZ) on $(hostname) ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))"
  echo "mode $([ "$as_built" = 1 ] && echo as-built || echo gpu-build)"
  echo "core CMAKE_CUDA_FLAGS='$(sed -n 's/^CMAKE_CUDA_FLAGS:STRING=//p' "$bdir/CMakeCache.txt")' MR_CUDA_ARCHITECTURES='$(sed -n 's/^MR_CUDA_ARCHITECTURES:STRING=//p' "$bdir/CMakeCache.txt")'"
  echo "R $(grep '^MR_NVCC_FLAGS' src/Makevars 2>/dev/null || echo 'MR_NVCC_FLAGS unknown')"
} >"$stage/commit.txt"

mkdir -p "$stage/bin"
for b in $bins; do cp "$bdir/$b" "$stage/bin/"; done
R_LIBS="" bash tools/pack-r.sh "$stage/r" .lib testthat callr processx >/dev/null

# bin/'s libraries join R's in r/libs, each once (CUDA's, glibc's and the C++
# runtime's come from the GPU machine).
skip_re='/(libc|libm|libpthread|libdl|librt|libutil|libresolv|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so|/lib(cuda|cudart|cublas|cublasLt|cudnn[a-z_]*|nccl|nvrtc[a-z.-]*|nvJitLink|nvidia[a-z-]*)\.so'
ldd "$stage"/bin/* | awk '/=> \//{print $3}' | sort -u | grep -vE "$skip_re" |
  while read -r l; do
    n=$(basename "$l")
    [ -e "$stage/r/libs/$n" ] || [ -e "$stage/r/home/lib/$n" ] || cp -L "$l" "$stage/r/libs/$n"
  done
strip --strip-debug "$stage"/bin/*
# Never a CUDA-family library in the pack (this machine's cuDNN front library
# without its sub-libraries, loaded first, broke the last plan).
bad=$(find "$stage" \( -name 'libcudnn*' -o -name 'libnccl*' -o -name 'libcublas*' -o -name 'libcudart*' \
  -o -name 'libnvrtc*' -o -name 'libnvJitLink*' -o -name 'libcuda.so*' -o -name 'libnvidia*' \) -print)
if [ -n "$bad" ]; then
  echo "gpu-pack: CUDA-family libraries in the pack: $bad" >&2
  exit 1
fi

# ICU's data (31 MB, 7.5 MB of the archive) trimmed to what R uses it for,
# collation (with normalization and character properties): locale display
# names, currencies, time zones, units, number spellings, transliterators,
# break iterators and charset converters go (R converts with iconv). Needs
# icupkg and genccode (Debian: icu-devtools); without them ICU travels whole.
icu=$(find "$stage/r/libs" -name 'libicudata.so.*' | head -1)
if [ -n "$icu" ]; then
  if command -v icupkg >/dev/null && command -v genccode >/dev/null; then
    ver=$(basename "$icu" | sed 's/^libicudata\.so\.\([0-9]*\).*/\1/')
    w=$(mktemp -d)
    objcopy -O binary --only-section=.rodata "$icu" "$w/icudt${ver}l.dat"
    icupkg -l "$w/icudt${ver}l.dat" |
      grep -E '^(curr|lang|region|unit|zone|rbnf|translit|brkitr)/|\.cnv$' >"$w/drop.txt"
    (cd "$w" && icupkg -r drop.txt --ignore-deps "icudt${ver}l.dat" >/dev/null &&
      genccode -e "icudt${ver}" -a gcc -d . "icudt${ver}l.dat" >/dev/null &&
      gcc -shared -o "$icu" ./*.S -Wl,-soname,"$(basename "$icu")")
    rm -rf "$w"
  else
    echo "gpu-pack: no icupkg/genccode (apt-get install icu-devtools): ICU's data travels whole" >&2
  fi
fi
test -d "$stage/r/site-library/mirrored/extdata/mnist"

mkdir -p "$out"
rm -f "$out/gpu.tar.xz"
if [ "$fast" = 1 ]; then xzopt=(-1 -T0); else xzopt=(--x86 "--lzma2=preset=9e,dict=64MiB" -T1); fi
# commit.txt first: `tar -xJf gpu.tar.xz commit.txt` reads it without the rest.
tar -C "$stage" -c commit.txt bin r | xz "${xzopt[@]}" >"$out/gpu.tar.xz.tmp"
mv "$out/gpu.tar.xz.tmp" "$out/gpu.tar.xz"
files=$(tar -tJf "$out/gpu.tar.xz" | grep -vc '/$')
bytes=$(stat -c %s "$out/gpu.tar.xz")
repo=0
if git rev-parse --git-dir >/dev/null 2>&1; then
  repo=$(git ls-files -z -co --exclude-standard | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
fi
total=$((repo + bytes))
mib() { awk -v b="$1" 'BEGIN {printf "%.1f MiB", b / 1048576}'; }
echo "gpu-pack: $out/gpu.tar.xz $(mib "$bytes") ($bytes bytes), $files files," \
  "unpacked $(du -sh "$stage" | cut -f1); $(head -1 "$stage/commit.txt" | cut -c1-47); $(sed -n 2p "$stage/commit.txt" | cut -d: -f1)"
echo "gpu-pack: travels $(mib "$total") = repository $(mib "$repo") + pack $(mib "$bytes") (limit 56 MiB of the 64 carried); $(($(date +%s) - t0)) s"
if [ "$total" -gt $((56 * 1048576)) ]; then
  if [ "$fast" = 1 ]; then
    echo "gpu-pack: over 56 MiB with --fast's xz -1 (the limit holds for the real pack, xz -9e)"
  else
    echo "gpu-pack: over 56 MiB" >&2
    exit 1
  fi
fi
