# Developer and CI entry points for mirrored.
#
#   make deps      install missing system / R dependencies (Debian, as root; no-op when present)
#   make install   R CMD INSTALL into ./.lib (skipped when nothing changed since the last one)
#   make core      CMake build of the C++ core and its GoogleTest suite in ./build
#   make test      deps + install + core, then ctest and the R suite; the last line is
#                  "N passed, N failed, N skipped" over both suites
#   make demo      deps + install, then Rscript demo/mnist.R and demo/convnet.R
#   make check     R CMD build + R CMD check --no-manual (in ./build-check)
#   make document  roxygen2::roxygenise() (NAMESPACE, man/) + Rcpp::compileAttributes()
#   make bench     deps + install + core, then the harnesses under bench/
#   make clean     remove build outputs
#
# Variables: JOBS (parallel compile jobs, default 2); BUILD_LOCK (a command prefix for
# the compile steps, e.g. BUILD_LOCK="flock /tmp/mr-build.lock"); the configure switches
# (MIRRORED_CUDA, CUDA_HOME, MIRRORED_NATIVE, ...) pass through the environment. A change
# of those switches is not a source change: use `make reinstall` after one.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c

R ?= R
RSCRIPT ?= Rscript
JOBS ?= 2
BUILD_LOCK ?=
LIB := $(CURDIR)/.lib
BUILD := $(CURDIR)/build
STAMP := $(LIB)/.mirrored.stamp

# The local library comes first, so tests and the demo load the package just built.
export R_LIBS := $(LIB)$(if $(R_LIBS),:$(R_LIBS))

DEB_PACKAGES := r-base-dev libzip-dev zlib1g-dev libhdf5-dev nlohmann-json3-dev cmake g++ make \
  pkg-config libgtest-dev pandoc libdnnl-dev libgloo-dev graphviz
R_PACKAGES := Rcpp RcppEigen testthat R6 cli rlang digest zeallot magrittr generics knitr rmarkdown ggplot2 roxygen2 \
  callr processx png
# Debian's names for them (r-cran-<lower-case name>).
R_DEB_PACKAGES := r-cran-rcpp r-cran-rcppeigen r-cran-testthat r-cran-r6 r-cran-cli r-cran-rlang r-cran-digest r-cran-zeallot r-cran-magrittr \
  r-cran-generics r-cran-knitr r-cran-rmarkdown r-cran-ggplot2 r-cran-roxygen2 r-cran-callr \
  r-cran-processx r-cran-png

# What the installed package is built from (generated files and objects excluded).
PKG_SOURCES := $(wildcard DESCRIPTION NAMESPACE configure cleanup) $(shell find R src inst -type f \
  ! -name '*.o' ! -name '*.d' ! -name '*.so' ! -name Makevars ! -name build_config.h \
  ! -path 'src/mr/tests/*' ! -name 'CMakeLists.txt' ! -path 'src/mr/cmake/*' 2>/dev/null)

.PHONY: all deps install reinstall core test demo check document bench clean

all: install

deps:
	@missing=""; \
	if command -v dpkg-query >/dev/null 2>&1; then \
	  for p in $(DEB_PACKAGES); do \
	    dpkg-query -W -f='$${Status}' "$$p" 2>/dev/null | grep -q 'install ok installed' \
	      || missing="$$missing $$p"; \
	  done; \
	fi; \
	if command -v $(RSCRIPT) >/dev/null 2>&1; then \
	  for p in $$($(RSCRIPT) -e 'p <- commandArgs(TRUE); cat(p[!vapply(p, requireNamespace, NA, quietly = TRUE)])' $(R_PACKAGES)); do \
	    missing="$$missing r-cran-$$(echo "$$p" | tr 'A-Z' 'a-z')"; \
	  done; \
	else \
	  missing="$$missing r-base-dev $(R_DEB_PACKAGES)"; \
	fi; \
	if [ -z "$$missing" ]; then echo "deps: all present"; exit 0; fi; \
	echo "deps: missing:$$missing"; \
	if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then \
	  echo "deps: install them with: apt-get install$$missing (as root on Debian/Ubuntu)" >&2; exit 1; \
	fi; \
	export DEBIAN_FRONTEND=noninteractive; \
	apt-get update -q && apt-get install -y -q $$(echo $$missing | tr ' ' '\n' | sort -u)

$(STAMP): $(PKG_SOURCES)
	@mkdir -p $(LIB)
	$(RSCRIPT) -e 'invisible(Rcpp::compileAttributes())'
	MAKEFLAGS=-j$(JOBS) $(BUILD_LOCK) $(R) CMD INSTALL --library=$(LIB) .
	@touch $@

install: $(STAMP)

reinstall:
	rm -f $(STAMP)
	$(MAKE) install

# The CMake core builds the CUDA backend whenever a toolkit is there (as
# configure does for the R package), so that CUDA code is compiled and its
# tests are discovered (they skip without a GPU); MR_CUDA=OFF to leave it out.
MR_CUDA ?= $(if $(or $(CUDA_HOME),$(shell command -v nvcc 2>/dev/null),$(wildcard /usr/local/cuda/bin/nvcc)),ON,OFF)

core:
	cmake -S src/mr -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DMR_CUDA=$(MR_CUDA)
	$(BUILD_LOCK) cmake --build $(BUILD) -j$(JOBS)

# Both suites always run (a broken core build does not hide the R results); each
# one's counts go to a file; the final line sums them. Non-zero exit when a test
# failed or a suite could not run.
test: deps install
	@rm -f $(BUILD)/ctest-junit.xml $(BUILD)/r-counts.txt; status=0; \
	mkdir -p $(BUILD); \
	echo "== C++ core (ctest) =="; \
	if $(MAKE) --no-print-directory core; then \
	  c_rc=0; ctest --test-dir $(BUILD) --output-on-failure --no-tests=error --timeout 900 \
	    -j$(JOBS) --output-junit $(BUILD)/ctest-junit.xml || c_rc=$$?; \
	else echo "test: the C++ core did not build" >&2; fi; \
	if [ -f $(BUILD)/ctest-junit.xml ]; then \
	  attr() { tr '\n\t' '  ' < $(BUILD)/ctest-junit.xml | sed -n 's/^[^<]*<?xml[^>]*>[^<]*<testsuite[^>]* '"$$1"'="\([0-9]*\)".*/\1/p'; }; \
	  c_total=$$(attr tests); c_fail=$$(attr failures); c_skip=$$(attr skipped); \
	  c_dis=$$(attr disabled); c_err=$$(attr errors); \
	  c_fail=$$(( $${c_fail:-0} + $${c_err:-0} )); c_skip=$$(( $${c_skip:-0} + $${c_dis:-0} )); \
	  c_pass=$$(( $${c_total:-0} - c_fail - c_skip )); \
	  echo "ctest: $$c_pass passed, $$c_fail failed, $$c_skip skipped"; \
	  if [ "$$c_rc" -ne 0 ] && [ "$$c_fail" -eq 0 ]; then \
	    status=1; echo "test: ctest exited with status $$c_rc" >&2; fi; \
	else c_pass=0; c_fail=0; c_skip=0; status=1; echo "test: ctest did not run" >&2; fi; \
	echo "== R package (testthat) =="; \
	$(RSCRIPT) tools/run-r-tests.R $(BUILD)/r-counts.txt || true; \
	if [ -s $(BUILD)/r-counts.txt ]; then read -r r_pass r_fail r_skip < $(BUILD)/r-counts.txt; \
	else r_pass=0; r_fail=0; r_skip=0; status=1; echo "test: the R suite did not run" >&2; fi; \
	pass=$$(( c_pass + r_pass )); fail=$$(( c_fail + r_fail )); skip=$$(( c_skip + r_skip )); \
	[ "$$fail" -eq 0 ] || status=1; \
	echo "$$pass passed, $$fail failed, $$skip skipped"; \
	exit $$status

demo: deps install
	$(RSCRIPT) demo/mnist.R
	$(RSCRIPT) demo/convnet.R

check: deps
	rm -rf build-check && mkdir -p build-check
	cd build-check && MAKEFLAGS=-j$(JOBS) $(BUILD_LOCK) $(R) CMD build ..
	cd build-check && MAKEFLAGS=-j$(JOBS) _R_CHECK_FORCE_SUGGESTS_=false \
	  $(BUILD_LOCK) $(R) CMD check --no-manual mirrored_*.tar.gz
	@# R CMD check exits 0 on WARNINGs: the goal is none, so they fail the target.
	@if grep -qE '^Status: .*(ERROR|WARNING)' build-check/mirrored.Rcheck/00check.log; then \
	  grep -E '^\* .*(ERROR|WARNING)$$' build-check/mirrored.Rcheck/00check.log >&2; exit 1; fi

document:
	$(RSCRIPT) -e 'roxygen2::roxygenise(load_code = "source"); Rcpp::compileAttributes()'

# Each bench/<name>/run.py (or run.R) rewrites its section of BENCHMARKS.md.
bench: deps install core
	@set -e; for d in bench/*/; do \
	  if [ -f "$$d/run.py" ]; then echo "== $$d =="; python3 "$$d/run.py"; \
	  elif [ -f "$$d/run.R" ]; then echo "== $$d =="; $(RSCRIPT) "$$d/run.R"; fi; \
	done

clean:
	rm -rf $(LIB) $(BUILD) build-check mirrored.Rcheck
	./cleanup
