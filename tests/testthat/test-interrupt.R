test_that("SIGINT during fit() stops at a step boundary and leaves the model usable", {
  skip_if_not_installed("callr")
  skip_on_os("windows")
  marker <- tempfile("training-started-")
  out <- tempfile(fileext = ".rds")
  # Under devtools::test() the package is not installed: the child loads the
  # same source tree (already compiled) with pkgload instead.
  pkg_dir <- getNamespaceInfo(asNamespace("mirrored"), "path")
  dev <- dir.exists(file.path(pkg_dir, "src")) && requireNamespace("pkgload", quietly = TRUE)
  child <- callr::r_bg(function(marker, out, dev, pkg_dir) {
    if (dev) pkgload::load_all(pkg_dir, quiet = TRUE, export_all = FALSE) else library(mirrored)
    set_random_seed(1)
    x <- matrix(runif(64 * 784), ncol = 784)
    y <- sample(0:9, 64 * 100, replace = TRUE)
    x <- x[rep(seq_len(64), 100), ]
    model <- keras_model_sequential(input_shape = 784) |>
      layer_dense(units = 256, activation = "relu") |> layer_dense(units = 10)
    model |> compile(optimizer = "adam", loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
    started <- callback_lambda(on_epoch_begin = function(epoch, logs) if (epoch == 2) file.create(marker))
    status <- tryCatch({
      fit(model, x, y, batch_size = 64, epochs = 100000, callbacks = list(started), verbose = 0)
      "finished"
    }, interrupt = function(e) "interrupted")
    # Usable afterwards: predicts and saves normally.
    p <- predict(model, x[1:5, ], verbose = 0)
    w <- get_weights(model)
    saveRDS(list(status = status, p = p, w = w, iterations = model$optimizer$iterations, x = x[1:5, ]), out)
  }, args = list(marker = marker, out = out, dev = dev, pkg_dir = pkg_dir), libpath = c(dirname(find.package("mirrored")), .libPaths()))
  on.exit(child$kill(), add = TRUE)
  deadline <- Sys.time() + 60
  while (!file.exists(marker) && child$is_alive() && Sys.time() < deadline) Sys.sleep(0.05)
  expect_true(file.exists(marker), info = child$read_all_error())
  Sys.sleep(0.3)  # well inside an epoch of 100 steps
  child$interrupt()
  child$wait(30000)
  expect_false(child$is_alive())
  expect_true(file.exists(out), info = child$read_all_error())
  res <- readRDS(out)
  expect_equal(res$status, "interrupted")
  expect_gt(res$iterations, 100)
  expect_true(all(is.finite(res$p)))
  h <- pmax(sweep(res$x %*% res$w[[1]], 2, res$w[[2]], "+"), 0)
  expect_equal(res$p, sweep(h %*% res$w[[3]], 2, res$w[[4]], "+"), tolerance = 1e-5)
})
