# Input staged ahead on the device (R/device-input.R, src/mr/train/device_input.h):
# the option, the path taken, and on CPU replicas (where it is off unless
# asked for) the same numbers as direct uploads. The protocol itself is tested
# in the C++ suite (src/mr/tests/test_device_input.cpp).

staged_data <- function() {
  set.seed(5)
  x <- matrix(runif(412), ncol = 4)  # 103 rows: batches of 16, the last one 7
  list(x = x, y = as.integer(x[, 1] + x[, 2] > x[, 3] + 0.5), sw = runif(103, 0.5, 1.5))
}

staged_model <- function(strategy = NULL) {
  build <- function() {
    keras_model_sequential(input_shape = 4) |>
      layer_dense(units = 8, activation = "relu") |>
      layer_dropout(rate = 0.2, seed = 3) |>
      layer_dense(units = 2)
  }
  model <- if (is.null(strategy)) build() else with(strategy$scope(), build())
  model |> compile(optimizer = "adam", loss = loss_sparse_categorical_crossentropy(from_logits = TRUE),
                   metrics = "accuracy")
}

test_that("the input options are checked", {
  d <- staged_data()
  model <- staged_model()
  for (opt in c("mirrored.device_input", "mirrored.resident_input")) {
    for (bad in list("yes", NA, c(TRUE, FALSE), 1)) {
      withr::with_options(setNames(list(bad), opt), {
        expect_error(fit(model, d$x, d$y, epochs = 1, verbose = 0),
                     class = "mirrored_value_error", regexp = opt, fixed = TRUE)
        expect_error(evaluate(model, d$x, d$y, verbose = 0), class = "mirrored_value_error",
                     regexp = opt, fixed = TRUE)
      })
    }
  }
  for (bad in list(-1, "1", NA_real_, Inf, c(1, 2))) {
    withr::with_options(list(mirrored.resident_bytes = bad), {
      expect_error(fit(model, d$x, d$y, epochs = 1, verbose = 0), class = "mirrored_value_error",
                   regexp = "mirrored.resident_bytes", fixed = TRUE)
    })
  }
  expect_error(mirrored:::input_pipeline("model"), class = "mirrored_value_error",
               regexp = "must be a model")
  # A budget beyond 64-bit byte counts means no limit (review finding 11:
  # clamped to 2^62, not converted out of range).
  withr::with_options(list(mirrored.resident_bytes = 1e30, mirrored.resident_input = TRUE), {
    fit(model, d$x, d$y, batch_size = 16, epochs = 1, verbose = 0)
    expect_equal(mirrored:::input_pipeline(model)$path, "resident")
    expect_equal(mirrored:::resident_bytes_option(), 2^62)
    expect_equal(mirrored:::input_pipeline(model)$resident_budget, 2^62)
  })
  # NULL: the core's default budget, 1 GiB.
  withr::with_options(list(mirrored.resident_bytes = NULL), {
    fit(model, d$x, d$y, batch_size = 16, epochs = 1, verbose = 0)
    expect_equal(mirrored:::input_pipeline(model)$resident_budget, 2^30)
  })
})

test_that("CPU replicas gather resident arrays, or stage on the copy lane when asked", {
  d <- staged_data()
  model <- staged_model()
  fit(model, d$x, d$y, batch_size = 16, epochs = 1, verbose = 0)
  p <- mirrored:::input_pipeline(model)
  expect_equal(p[c("path", "device_input", "resident_input", "staged", "gathered")],
               list(path = "resident", device_input = "automatic", resident_input = "automatic",
                    staged = 0, gathered = 7))
  withr::local_options(mirrored.resident_input = FALSE)
  fit(model, d$x, d$y, batch_size = 16, epochs = 1, verbose = 0)
  expect_equal(mirrored:::input_pipeline(model)$path, "host")
  withr::local_options(mirrored.device_input = TRUE)
  fit(model, d$x, d$y, batch_size = 16, epochs = 1, verbose = 0)
  p <- mirrored:::input_pipeline(model)
  expect_equal(p[c("path", "device_input", "staged", "taken")],
               list(path = "copy lane", device_input = "on", staged = 7, taken = 7))
  # A dataset is not an in-memory array: it streams (or takes the copy lane).
  ds <- tensor_slices_dataset(list(d$x, d$y)) |> dataset_batch(16)
  withr::local_options(mirrored.resident_input = TRUE, mirrored.device_input = FALSE)
  fit(model, ds, epochs = 1, verbose = 0)
  expect_equal(mirrored:::input_pipeline(model)$path, "host")
})

test_that("staged input gives the weights, history and evaluation of direct uploads", {
  d <- staged_data()
  run <- function(on, strategy) {
    withr::local_options(mirrored.device_input = on, mirrored.resident_input = FALSE)
    suppressMessages(model <- staged_model(strategy))
    set_weights(model, w0)
    set_random_seed(11)  # fit()'s shuffle seed and the dropout stream
    h <- fit(model, d$x, d$y, batch_size = 16, epochs = 3, sample_weight = d$sw,
             validation_data = list(d$x[1:40, ], d$y[1:40]), verbose = 0)
    list(w = get_weights(model), h = h$metrics,
         e = evaluate(model, d$x, d$y, batch_size = 24, sample_weight = d$sw, verbose = 0),
         p = mirrored:::input_pipeline(model))
  }
  w0 <- get_weights(staged_model())
  for (devices in list("/cpu:0", c("/cpu:0", "/cpu:1"))) {
    strategy <- suppressMessages(mirrored_strategy(devices))
    off <- run(FALSE, strategy)
    on <- run(TRUE, strategy)
    expect_identical(on$w, off$w)
    expect_identical(on$h, off$h)
    expect_identical(on$e, off$e)
    expect_equal(off$p$path, "host")
    expect_equal(on$p$path, "copy lane")
    # 3 epochs of 7 batches, 3 validation passes of 3 batches, 5 evaluation
    # batches, on every replica.
    expect_equal(on$p$staged, (21 + 9 + 5) * length(devices))
    expect_false(identical(on$w, w0))
  }
})

test_that("arrays resident on the device: the path, its numbers and the fallback over budget", {
  d <- staged_data()
  run <- function(resident, budget, strategy) {
    withr::local_options(mirrored.resident_input = resident, mirrored.resident_bytes = budget)
    suppressMessages(model <- staged_model(strategy))
    set_weights(model, w0)
    set_random_seed(11)
    during <- NULL  # what is resident while fit() runs
    seen <- callback_lambda(on_epoch_end = function(epoch, logs) {
      during <<- c(during, mirrored:::input_pipeline(model)$resident_bytes)
    })
    h <- fit(model, d$x, d$y, batch_size = 16, epochs = 2, sample_weight = d$sw, verbose = 0,
             callbacks = list(seen))
    list(w = get_weights(model), h = h$metrics, p = mirrored:::input_pipeline(model),
         during = during)
  }
  w0 <- get_weights(staged_model())
  for (devices in list("/cpu:0", c("/cpu:0", "/cpu:1"))) {
    strategy <- suppressMessages(mirrored_strategy(devices))
    off <- run(FALSE, 2^30, strategy)
    on <- run(TRUE, 2^30, strategy)
    over <- run(TRUE, 1000, strategy)  # x, y and the weights take 103 * 6 * 4 bytes
    expect_identical(on$w, off$w)
    expect_identical(on$h, off$h)
    expect_identical(over$w, off$w)
    expect_equal(off$p$path, "host")
    expect_equal(on$during, rep(103 * 6 * 4, 2))  # x, y and the weights, in float32
    expect_equal(over$during, c(0, 0))
    # fit() dropped its resident arrays when it returned.
    expect_equal(on$p[c("path", "resident_input", "gathered", "resident_bytes")],
                 list(path = "resident", resident_input = "on", gathered = 14 * length(devices),
                      resident_bytes = 0))
    expect_equal(over$p[c("path", "gathered", "resident_bytes")],
                 list(path = "host", gathered = 0, resident_bytes = 0))
  }
})
