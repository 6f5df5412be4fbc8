#!/usr/bin/env bash
# Builds, on the development machine (CUDA toolkit, R, no GPU), everything
# tools/gpu-check.sh runs on a GPU machine (CUDA driver, CMake and Python with
# PyTorch, but no R, Eigen, GoogleTest or HDF5), as ONE archive
# .gpu/gpu.tar.xz (.gpu/ is ignored by git), which unpacks to:
#   bin/    mr_tests, bench_mlp_gpu, bench_allreduce_gpu (CMake, MR_CUDA=ON)
#   r/      R, the installed package (built with CUDA) and testthat, as packed
#           by ../shared/tools/pack-r.sh; r/libs/ holds every shared library
#           that R, the package AND bin/ load that is not CUDA's or glibc's,
#           each once (bin/ uses it through LD_LIBRARY_PATH)
# The MNIST files the R suite reads travel once, inside the installed package
# (r/site-library/mirrored/extdata/mnist, the same files as ../shared/data/mnist).
# Every binary and library is stripped of debug information, no file travels
# twice (pack-r.sh puts libR.so in both home/lib and libs: the libs copy is
# dropped, home/lib is on the R launcher's LD_LIBRARY_PATH), and the archive is
# xz-compressed once (-9e with the x86 filter; no archive inside the archive).
# It prints its size and file count (the device tool carries at most 64 MiB).
# Where the bytes go (xz'd, 2026-11-23, 36.3 MB in all): R's shared libraries
# ~15 MB (ICU data 1.7 MB once trimmed; HDF5 and the libcurl/TLS chain it links
# 6 MB), R's base packages 11.5 MB, testthat and its dependencies plus the
# package 11 MB (of which MNIST 3.2 MB, already gzip'd), bin/ 1 MB.
# Then, with the device tool: run(command = "bash tools/gpu-check.sh", carry = [".gpu"]).
set -euo pipefail
cd "$(dirname "$0")/.."
exclude=$(git rev-parse --git-path info/exclude)  # a worktree's .git is a file
mkdir -p "$(dirname "$exclude")"
grep -qx '/.gpu/' "$exclude" 2>/dev/null || echo '/.gpu/' >>"$exclude"
LOCK=${BUILD_LOCK:-}
make --no-print-directory core MR_CUDA=ON BUILD_LOCK="$LOCK"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/r" "$stage/rlib"
cp build/mr_tests build/bench_mlp_gpu build/bench_allreduce_gpu "$stage/bin/"
# The package as `make install` built it into .lib (with CUDA: configure finds
# the toolkit here), so one build serves the R tests here and the pack.
make --no-print-directory install BUILD_LOCK="$LOCK" >/dev/null
grep -q 'MR_WITH_CUDA 1' src/mr/build_config.h || { echo "gpu-pack: .lib was built without CUDA (make reinstall)" >&2; exit 1; }
cp -a .lib/mirrored "$stage/rlib/"
../shared/tools/pack-r.sh "$stage/r.tar.xz" "$stage/rlib" testthat >/dev/null
tar -xJf "$stage/r.tar.xz" -C "$stage/r"
rm -rf "$stage/r.tar.xz" "$stage/rlib"
# bin/'s libraries join R's in r/libs, without duplicates (CUDA's and glibc's
# come from the GPU machine).
ldd "$stage"/bin/* | awk '/=> \//{print $3}' | sort -u |
  grep -v -E '/usr/local/cuda|/libc\.so|/libm\.so|/libpthread\.so|/libdl\.so|/librt\.so|/ld-linux|/libstdc\+\+|/libgcc_s|/libcuda|/libnccl|/libcublas' |
  while read -r l; do
    [ -e "$stage/r/libs/$(basename "$l")" ] || cp -L "$l" "$stage/r/libs/"
  done
find "$stage/bin" "$stage/r" -type f \( -name '*.so*' -o -perm -u+x \) -exec sh -c \
  'for f; do file -b "$f" | grep -q "^ELF" && strip --strip-debug "$f"; done; true' sh {} +
for l in "$stage"/r/libs/*; do
  h="$stage/r/home/lib/$(basename "$l")"
  if [ -f "$h" ] && cmp -s "$l" "$h"; then rm -f "$l"; fi
done
# Nothing packed imports these base packages, and nothing compiles there.
rm -rf "$stage"/r/home/library/{grid,splines,stats4} "$stage/r/share/include"
# R's internet module: download.file(), which the suite's download check
# uses (pack-r.sh leaves it out; its libcurl is packed already).
cp "$(R RHOME)/modules/internet.so" "$stage/r/home/modules/"
# ICU's data (31 MB, 7.5 MB of the archive) trimmed to what R uses it for,
# collation (with normalization and character properties): locale display
# names, currencies, time zones, units, number spellings, transliterators,
# break iterators and charset converters go (R converts with iconv). Checked:
# sort() under C.UTF-8 (ICU's root collator), methods loads, the R suite
# passes. Needs icupkg and genccode (Debian: icu-devtools).
icu=$(find "$stage/r/libs" -name 'libicudata.so.*' | head -1)
if [ -n "$icu" ]; then
  command -v icupkg >/dev/null && command -v genccode >/dev/null ||
    { echo "gpu-pack: needs icupkg and genccode (apt-get install icu-devtools)" >&2; exit 1; }
  ver=$(basename "$icu" | sed 's/^libicudata\.so\.\([0-9]*\).*/\1/')
  w=$(mktemp -d)
  objcopy -O binary --only-section=.rodata "$icu" "$w/icudt${ver}l.dat"
  icupkg -l "$w/icudt${ver}l.dat" |
    grep -E '^(curr|lang|region|unit|zone|rbnf|translit|brkitr)/|\.cnv$' >"$w/drop.txt"
  (cd "$w" && icupkg -r drop.txt --ignore-deps "icudt${ver}l.dat" >/dev/null &&
    genccode -e "icudt${ver}" -a gcc -d . "icudt${ver}l.dat" >/dev/null &&
    gcc -shared -o "$icu" ./*.S -Wl,-soname,"$(basename "$icu")")
  rm -rf "$w"
fi
# Help pages, HTML and manuals of every packed package (the GPU run reads none).
find "$stage/r" -type d -path '*library/*' \( -name help -o -name html -o -name doc \) -prune \
  -exec rm -rf {} +
test -d "$stage/r/site-library/mirrored/extdata/mnist"
rm -rf .gpu && mkdir -p .gpu
tar -C "$stage" --sort=name -c bin r | xz --x86 --lzma2=preset=9e,dict=64MiB -T1 >.gpu/gpu.tar.xz
files=$(tar -tJf .gpu/gpu.tar.xz | grep -vc '/$')
echo "gpu-pack: .gpu/gpu.tar.xz $(du -h .gpu/gpu.tar.xz | cut -f1) ($(stat -c %s .gpu/gpu.tar.xz) bytes), $files files"
