#!/usr/bin/env bash
# Copies this machine's R (Debian layout), chosen installed R packages with their
# runtime R dependencies, and every shared library they load that the target
# machine is not expected to bring, into one folder that runs from wherever it
# is unpacked on another x86-64 Linux without R (the GPU machine: CUDA and
# Python, no R). tools/gpu-pack.sh calls it and archives the folder.
#
#   usage:   tools/pack-r.sh DIR LIB [PKG ...]
#     DIR    the folder to fill (created; must not exist or be empty)
#     LIB    an R library folder taken whole (where `make install` put the
#            package under test, e.g. .lib), or "-" for none
#     PKG    further installed packages to take; Depends and Imports of every
#            package taken are followed recursively (base packages aside)
#   output:  DIR/R          launcher: DIR/R --vanilla -q -e 'library(mirrored)'
#            DIR/home/      R_HOME: bin, lib (libR.so), modules, etc, library
#                           (the base packages R needs to start and run tests)
#            DIR/share/     R's share and include trees
#            DIR/site-library/  the packages
#            DIR/libs/      shared libraries of R and of the packages' .so
#                           files, each once, without the C library, the C++
#                           runtime and the CUDA family (libcuda, libcudart,
#                           libcublas*, libcudnn*, libnccl, libnvrtc,
#                           libnvJitLink, libnvidia*): the target machine's own
#                           are used (tools/gpu-first.sh finds them)
# Debug sections are stripped from every ELF file; help, HTML and manuals go.
set -euo pipefail
if [ $# -lt 2 ]; then
  sed -n '2,27p' "$0" >&2
  exit 2
fi
dest=$1
extra=$2
shift 2
if [ -e "$dest" ] && [ -n "$(ls -A "$dest")" ]; then
  echo "pack-r: $dest exists and is not empty" >&2
  exit 1
fi
rhome=$(R RHOME)
rscript="$rhome/bin/Rscript"
mkdir -p "$dest/home/library" "$dest/share" "$dest/site-library" "$dest/libs"

# Shared libraries never packed: glibc, the C++ runtime, and the CUDA family.
skip_re='/(libc|libm|libpthread|libdl|librt|libutil|libresolv|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so|/lib(cuda|cudart|cublas|cublasLt|cudnn[a-z_]*|nccl|nvrtc[a-z.-]*|nvJitLink|nvidia[a-z-]*|cufft|curand|cusparse|cusolver|nvToolsExt)\.so'

# R itself: R_HOME without the X11 device, the data editor or cairo.
cp -a "$rhome/bin" "$rhome/lib" "$rhome/modules" "$dest/home/"
# R's shell front end (what callr and processx start) names this machine's
# folders: it finds them beside itself instead.
# shellcheck disable=SC2016
sed -i -e 's|^R_HOME_DIR=.*|R_HOME_DIR=$(cd "$(dirname "$0")/.." \&\& pwd)|' \
  -e 's|^R_SHARE_DIR=.*|R_SHARE_DIR="${R_HOME_DIR}/../share/share"|' \
  -e 's|^R_INCLUDE_DIR=.*|R_INCLUDE_DIR="${R_HOME_DIR}/../share/include"|' \
  -e 's|^R_DOC_DIR=.*|R_DOC_DIR="${R_HOME_DIR}/../share"|' "$dest/home/bin/R"
cp -aL "$rhome/etc" "$dest/home/etc"
rm -f "$dest/home/modules/R_X11.so" "$dest/home/modules/R_de.so"
cp -a "$("$rscript" --vanilla -e 'cat(R.home("share"))')" "$dest/share/share"
cp -a "$("$rscript" --vanilla -e 'cat(R.home("include"))')" "$dest/share/include"

# The packages to take: LIB's, the named ones, and their runtime dependencies
# (base packages are listed apart: only those needed are copied).
# shellcheck disable=SC2016
want=$(EXTRA_LIB="$extra" "$rscript" --vanilla -e '
  args <- commandArgs(TRUE)
  extra <- Sys.getenv("EXTRA_LIB")
  lib <- c(if (extra != "-") extra, .libPaths())
  db <- installed.packages(lib.loc = lib)
  base <- rownames(installed.packages(priority = "base"))
  todo <- c(args, if (extra != "-") list.files(extra))
  seen <- character()
  while (length(todo)) {
    p <- todo[1]; todo <- todo[-1]
    if (p %in% seen || p == "R") next
    seen <- c(seen, p)
    if (p %in% base) next
    if (!p %in% rownames(db)) stop("pack-r: not installed: ", p)
    d <- tools::package_dependencies(p, db = db, which = c("Depends", "Imports"))[[1]]
    todo <- c(todo, setdiff(d, seen))
  }
  # R starts with these (its default packages, the byte compiler for the JIT,
  # tools and parallel that testthat and callr load).
  need_base <- union(c("base", "compiler", "datasets", "grDevices", "graphics", "methods",
                       "parallel", "stats", "tools", "utils"), intersect(seen, base))
  cat(paste0("base:", need_base), setdiff(seen, base), sep = "\n")' "$@")
for p in $want; do
  case $p in
    base:*) cp -a "$rhome/library/${p#base:}" "$dest/home/library/" ;;
    *)
      if [ "$extra" != "-" ] && [ -d "$extra/$p" ]; then
        cp -a "$extra/$p" "$dest/site-library/"
      else
        src=$("$rscript" --vanilla -e "cat(find.package('$p'))")
        cp -a "$src" "$dest/site-library/"
      fi
      ;;
  esac
done
rm -f "$dest/home/library/grDevices/libs/cairo.so"
# What no run reads: documentation, headers, examples, test suites of the
# dependencies, translations.
find "$dest/home/library" "$dest/site-library" -mindepth 2 -maxdepth 2 -type d \
  \( -name help -o -name html -o -name doc -o -name po -o -name include -o -name examples \
  -o -name unitTests -o -name tinytest \) -prune -exec rm -rf {} +

# Shared libraries: everything R's executable, its modules and the packages'
# .so files load (ldd lists the whole closure), once, unless R_HOME/lib has it.
export LD_LIBRARY_PATH="$rhome/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
find "$dest" -type f \( -name '*.so' -o -name '*.so.*' -o -path '*/bin/exec/*' \) -print0 |
  xargs -0 ldd 2>/dev/null | awk '/=> \//{print $3}' | sort -u | grep -vE "$skip_re" |
  while read -r l; do
    n=$(basename "$l")
    [ -e "$dest/home/lib/$n" ] || [ -e "$dest/libs/$n" ] || cp -L "$l" "$dest/libs/$n"
  done
# shellcheck disable=SC2016
find "$dest" -type f \( -name '*.so' -o -name '*.so.*' -o -path '*/bin/exec/*' \) -print0 |
  xargs -0 sh -c 'for f; do file -b "$f" | grep -q "^ELF" && strip --strip-debug "$f"; done; true' sh

cat >"$dest/R" <<'EOF'
#!/bin/sh
# The packed R, run from wherever it was unpacked (tools/pack-r.sh). Takes R's
# arguments (-e EXPR, -f FILE, --vanilla, --args ...). Its libraries come first
# on LD_LIBRARY_PATH, then the caller's (where the GPU libraries are).
d=$(cd "$(dirname "$0")" && pwd)
export R_HOME="$d/home" R_SHARE_DIR="$d/share/share" R_INCLUDE_DIR="$d/share/include" \
  R_DOC_DIR="$d/share" R_LIBS="$d/site-library" R_LIBS_SITE="$d/site-library" \
  R_LIBS_USER="$d/site-library"
export LD_LIBRARY_PATH="$d/libs:$d/home/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec "$d/home/bin/exec/R" --no-save --no-restore "$@"
EOF
chmod +x "$dest/R"
echo "pack-r: $dest $(du -sh "$dest" | cut -f1), $(find "$dest" -type f | wc -l) files"
