# The crash test of callback_backup_and_restore(): a child R process trains
# with backups every few batches and is killed with SIGKILL 20 times — half of
# the kills the moment a backup's temporary file appears (with writes slowed
# down so that the kill lands inside the write), the others at random
# moments. Every restart resumes from the last backup; after each kill the
# backup on disk must be readable; the final weights must equal those of an
# uninterrupted run bit for bit.

crash_child <- function(backup, out, dev, pkg_dir) {
  if (dev) pkgload::load_all(pkg_dir, quiet = TRUE, export_all = FALSE) else library(mirrored)
  options(mirrored.cpu_threads = 1L)
  set_random_seed(42)
  x <- matrix(runif(384 * 24), ncol = 24)
  y <- as.integer(x[, 1] > x[, 2]) + 2L * as.integer(x[, 3] > 0.5)
  inp <- keras_input(shape = 24)
  h <- inp |> layer_dense(128, activation = "relu") |> layer_dropout(0.2) |> layer_dense(128, activation = "tanh")
  model <- keras_model(inp, h |> layer_dense(4))
  model |> compile(optimizer = optimizer_adam(0.005), loss = loss_sparse_categorical_crossentropy(from_logits = TRUE),
                   metrics = "accuracy")
  # Slows the steps down (no effect on the numbers) so kills land mid-run.
  pace <- callback_lambda(on_train_batch_end = function(batch, logs) Sys.sleep(0.01))
  cbs <- list(pace)
  if (!is.null(backup)) cbs <- c(list(callback_backup_and_restore(backup, save_freq = 3, delete_checkpoint = FALSE)), cbs)
  fit(model, x, y, batch_size = 16, epochs = 12, callbacks = cbs, verbose = 0)
  # Written whole or not at all: a kill may land while the result is written.
  tmp <- paste0(out, ".partial")
  saveRDS(list(w = get_weights(model), iterations = model$optimizer$iterations), tmp)
  file.rename(tmp, out)
}

test_that("training killed 20 times with SIGKILL resumes to the uninterrupted result", {
  skip_if_not_installed("callr")
  skip_on_os("windows")
  pkg_dir <- getNamespaceInfo(asNamespace("mirrored"), "path")
  dev <- dir.exists(file.path(pkg_dir, "src")) && requireNamespace("pkgload", quietly = TRUE)
  libpath <- c(dirname(find.package("mirrored")), .libPaths())
  start <- function(backup, out, delay_ms = 0) {
    env <- c(callr::rcmd_safe_env(), MIRRORED_TEST_WRITE_DELAY_MS = as.character(delay_ms))
    callr::r_bg(crash_child, args = list(backup = backup, out = out, dev = dev, pkg_dir = pkg_dir),
                libpath = libpath, env = env, supervise = TRUE)
  }

  ref_out <- tempfile(fileext = ".rds")
  ref <- start(NULL, ref_out)
  ref$wait(60000)
  expect_true(file.exists(ref_out), info = ref$read_all_error())

  backup <- tempfile("backup-")
  out <- tempfile(fileext = ".rds")
  set.seed(2024)
  kills <- 0L
  mid_write <- 0L
  check_backup <- function() {
    w <- file.path(backup, "latest.weights.h5")
    if (!file.exists(w)) return(invisible())
    # Readable, and the right architecture for the child's model.
    child_like <- local({
      inp <- keras_input(shape = 24)
      h <- inp |> layer_dense(128, activation = "relu") |> layer_dropout(0.2) |> layer_dense(128, activation = "tanh")
      m <- keras_model(inp, h |> layer_dense(4))
      m |> compile(optimizer = optimizer_adam(0.005), loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
      m
    })
    expect_no_error(load_model_weights(child_like, w))
  }
  while (kills < 20L) {
    on_write <- kills %% 2L == 0L
    child <- start(backup, out, delay_ms = if (on_write) 25 else 0)
    if (on_write) {
      # Kill inside the n-th backup write of this run (n random), so that
      # earlier backups of the run complete and training makes progress.
      nth <- sample(1:3, 1)
      seen <- character()
      deadline <- Sys.time() + 30
      while (child$is_alive() && Sys.time() < deadline) {
        tmp <- list.files(backup, pattern = "^\\.latest\\.weights\\.h5\\.tmp-", all.files = TRUE)
        seen <- union(seen, tmp)
        if (length(seen) >= nth && length(tmp)) break
        Sys.sleep(0.001)
      }
    } else {
      Sys.sleep(stats::runif(1, 0.4, 1.0))
    }
    if (!child$is_alive()) {
      expect_true(file.exists(out), info = child$read_all_error())
      break  # finished before the kill
    }
    tools::pskill(child$get_pid(), tools::SIGKILL)
    child$wait(10000)
    kills <- kills + 1L
    if (any(grepl("^\\.latest\\.weights\\.h5\\.tmp-", list.files(backup, all.files = TRUE)))) {
      mid_write <- mid_write + 1L
    }
    check_backup()
  }
  if (!file.exists(out)) {
    child <- start(backup, out)
    child$wait(60000)
  }
  expect_true(file.exists(out), info = child$read_all_error())
  expect_gte(kills, 15L)
  expect_gte(mid_write, 5L)
  res <- readRDS(out)
  want <- readRDS(ref_out)
  expect_identical(res$w, want$w)
  expect_equal(res$iterations, want$iterations)
})
