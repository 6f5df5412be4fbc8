# Runs the R test suite against the installed package (./.lib first on the
# library path) and counts test_that() blocks: a block failed when one of its
# expectations failed or it raised an error, was skipped when it was skipped
# (or had no expectation), and passed otherwise.
#
#   Rscript tools/run-r-tests.R [COUNTS_FILE]
#
# Prints "R: N passed, N failed, N skipped" and writes "N N N" (passed failed
# skipped) to COUNTS_FILE. Exit status 1 when a block failed.
# MIRRORED_TEST_CUDA=1 in the environment makes the GPU tests fail instead of
# skipping (the tests read it themselves).

args <- commandArgs(trailingOnly = TRUE)
counts_file <- if (length(args) >= 1L) args[[1L]] else NA_character_

local_lib <- file.path(getwd(), ".lib")
if (dir.exists(local_lib)) .libPaths(c(normalizePath(local_lib), .libPaths()))
if (!requireNamespace("mirrored", quietly = TRUE)) {
  stop("package 'mirrored' is not installed in ", paste(.libPaths(), collapse = ":"),
       ": run `make install` first", call. = FALSE)
}
cat("mirrored loaded from", dirname(find.package("mirrored")), "\n")

test_path <- file.path("tests", "testthat")
test_files <- list.files(test_path, pattern = "^test.*\\.[rR]$")
write_counts <- function(pass, fail, skip) {
  cat(sprintf("R: %d passed, %d failed, %d skipped\n", pass, fail, skip))
  if (!is.na(counts_file)) writeLines(sprintf("%d %d %d", pass, fail, skip), counts_file)
}
if (length(test_files) == 0L) {
  message("no test files in ", test_path)
  write_counts(0L, 0L, 0L)
  quit(status = 0L)
}

# Report every failure (the progress reporter stops after 10 by default).
options(testthat.progress.max_fails = 100000L)
results <- testthat::test_dir(
  test_path,
  package = "mirrored",
  load_package = "installed",
  reporter = testthat::ProgressReporter$new(show_praise = FALSE),
  stop_on_failure = FALSE,
  stop_on_warning = FALSE
)

df <- as.data.frame(results)
failed <- df$failed > 0 | df$error
skipped <- !failed & df$skipped
passed <- !failed & !skipped
write_counts(sum(passed), sum(failed), sum(skipped))
quit(status = if (any(failed)) 1L else 0L)
