# Epoch 1 does only what every epoch does: nothing that fit() needs once per
# session (loading a namespace, such as cli for the progress bar's look at
# the console) may happen between on_epoch_begin and on_epoch_end, where it
# counted in epoch 1's time per step (bench/mlp_cpu).

epoch1_namespaces <- function(verbose) {
  pkg_dir <- getNamespaceInfo(asNamespace("mirrored"), "path")
  dev <- dir.exists(file.path(pkg_dir, "src")) && requireNamespace("pkgload", quietly = TRUE)
  callr::r(function(verbose, dev, pkg_dir) {
    if (dev) pkgload::load_all(pkg_dir, quiet = TRUE, export_all = FALSE) else library(mirrored)
    set_random_seed(1)
    x <- matrix(runif(32 * 4), ncol = 4)
    y <- sample(0:2, 32, replace = TRUE)
    model <- keras_model_sequential(input_shape = 4) |> layer_dense(units = 3)
    model |> compile(optimizer = "adam", loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
    seen <- list()
    probe <- callback_lambda(
      on_epoch_begin = function(epoch, logs) if (epoch == 1) seen$begin <<- loadedNamespaces(),
      on_epoch_end = function(epoch, logs) if (epoch == 1) seen$end <<- loadedNamespaces())
    before <- loadedNamespaces()
    utils::capture.output(fit(model, x, y, batch_size = 8, epochs = 2, callbacks = list(probe),
                              verbose = verbose))
    c(seen, list(before = before, after = loadedNamespaces()))
  }, args = list(verbose = verbose, dev = dev, pkg_dir = pkg_dir),
  libpath = c(dirname(find.package("mirrored")), .libPaths()))
}

test_that("fit() loads no namespace during epoch 1, at any verbosity", {
  skip_if_not_installed("callr")
  for (verbose in 0:2) {
    ns <- epoch1_namespaces(verbose)
    expect_setequal(ns$end, ns$begin)
  }
})

test_that("fit(verbose = 0) never consults the console (cli stays unloaded)", {
  skip_if_not_installed("callr")
  ns <- epoch1_namespaces(0)
  skip_if("cli" %in% ns$before, "cli is loaded before fit() in this build")
  expect_false("cli" %in% ns$after)
})
