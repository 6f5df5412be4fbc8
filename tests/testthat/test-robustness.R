# No silent failure: unknown arguments, NaN through ops and the logged loss,
# errors that name the user's function, dataset_map() errors, interrupts,
# readRDS()'d models, strategy devices as a list, not-yet callbacks.
# Each block fails on the code at commit 214be81 (see the lead's report).

small_model <- function(units = 2, activation = NULL, input = 4) {
  keras_model_sequential(input_shape = input) |> layer_dense(units = units, activation = activation)
}
small_data <- function(n = 16, input = 4, units = 2) {
  set.seed(1)
  list(x = matrix(runif(n * input), n), y = matrix(runif(n * units), n))
}
error_of <- function(expr) tryCatch({ expr; NULL }, error = function(e) e)
call_head <- function(e) {
  cl <- conditionCall(e)
  if (is.null(cl)) return("<NULL>")
  paste(deparse(cl[[1]]), collapse = "")
}

# ---- 1. unknown arguments ---------------------------------------------------------

test_that("fit(), evaluate(), predict() and compile() reject unknown arguments", {
  d <- small_data()
  model <- small_model()
  compile(model, optimizer = "sgd", loss = "mse")
  e <- error_of(fit(model, d$x, d$y, epoch = 2, verbose = 0))
  expect_s3_class(e, "mirrored_value_error")
  expect_match(conditionMessage(e), "`epoch`")
  expect_match(conditionMessage(e), "did you mean `epochs`", fixed = TRUE)
  expect_identical(call_head(e), "fit")
  # Nothing was trained: the optimizer never stepped.
  expect_equal(model$optimizer$iterations, 0)

  e <- error_of(evaluate(model, d$x, d$y, verbos = 0))
  expect_s3_class(e, "mirrored_value_error")
  expect_match(conditionMessage(e), "`verbos`.*`verbose`")
  expect_identical(call_head(e), "evaluate")

  e <- error_of(predict(model, d$x, batchsize = 4, verbose = 0))
  expect_s3_class(e, "mirrored_value_error")
  expect_match(conditionMessage(e), "`batchsize`.*`batch_size`")
  expect_identical(call_head(e), "predict")

  e <- error_of(compile(model, optimizer = "sgd", loss = "mse", loss_weight = 2))
  expect_s3_class(e, "mirrored_value_error")
  expect_match(conditionMessage(e), "`loss_weight`.*`loss_weights`")
  expect_identical(call_head(e), "compile")

  e <- error_of(fit(model, d$x, d$y, 5, 2, verbose = 0))
  expect_s3_class(e, "mirrored_value_error")
  expect_match(conditionMessage(e), "unnamed")
})

# ---- 2. NaN through the ops (R side; per-op tests are in src/mr/tests) ---------------

test_that("relu keeps NaN and max pooling / Maximum propagate it, as TensorFlow", {
  # Inputs may not hold NaN (fit()/predict() reject it): a Dense layer whose
  # kernel column k is NaN makes output k NaN.
  nan_dense <- function(n, k) {
    w <- diag(n)
    w[, k] <- NaN
    list(w, rep(0, n))
  }
  inp <- keras_input(shape = 3)
  out <- inp |> layer_dense(units = 3) |> layer_activation("relu")
  model <- keras_model(inp, out)
  set_weights(model, nan_dense(3, 1))
  p <- predict(model, rbind(c(1, 1, -1)), verbose = 0)
  expect_true(is.nan(p[1, 1]))
  expect_equal(p[1, 2:3], c(1, 0))

  inp <- keras_input(shape = 4)
  pooled <- inp |> layer_dense(units = 4) |> layer_reshape(c(4, 1)) |>
    layer_max_pooling_1d(pool_size = 2)
  pool <- keras_model(inp, pooled)
  set_weights(pool, nan_dense(4, 2))
  p <- predict(pool, rbind(c(1, 2, 3, 2)), verbose = 0)
  expect_true(is.nan(p[1, 1, 1]))
  expect_equal(p[1, 2, 1], 3)

  a <- keras_input(shape = 2)
  mx <- keras_model(a, layer_maximum(list(a |> layer_dense(units = 2), a)))
  set_weights(mx, nan_dense(2, 1))
  p <- predict(mx, rbind(c(5, 1)), verbose = 0)
  expect_true(is.nan(p[1, 1]))
  expect_equal(p[1, 2], 1)
})

# ---- 3. a non-finite loss is logged as nan ------------------------------------------

test_that("a model whose weights are NaN logs a NaN loss (progress line and history)", {
  d <- small_data()
  model <- keras_model_sequential(input_shape = 4) |>
    layer_dense(units = 8, activation = "relu") |> layer_dense(units = 2)
  compile(model, optimizer = "sgd", loss = "mse")
  w <- get_weights(model)
  w[[1]][] <- NaN
  set_weights(model, w)
  out <- capture.output(history <- fit(model, d$x, d$y, epochs = 1, batch_size = 8, verbose = 2))
  expect_true(is.nan(history$metrics$loss))
  expect_true(is.nan(model$history$metrics$loss))
  expect_match(paste(out, collapse = "\n"), "loss: nan", fixed = TRUE)
  expect_true(is.nan(evaluate(model, d$x, d$y, verbose = 0)$loss))
})

test_that("callback_terminate_on_nan() stops training on a non-finite loss", {
  d <- small_data(n = 64)
  model <- keras_model_sequential(input_shape = 4) |>
    layer_dense(units = 8, activation = "relu") |> layer_dense(units = 2)
  compile(model, optimizer = "sgd", loss = "mse")
  w <- get_weights(model)
  w[[3]][] <- NaN
  set_weights(model, w)
  seen <- integer()
  epochs_seen <- callback_lambda(on_epoch_end = function(epoch, logs) seen <<- c(seen, epoch))
  out <- capture.output(history <- fit(model, d$x, d$y, epochs = 5, batch_size = 8, verbose = 0,
                                       callbacks = list(callback_terminate_on_nan(), epochs_seen)))
  expect_match(out, "^Batch [0-9]+: Invalid loss, terminating training$")
  # The epoch ended after the batch that saw NaN (within 0.05 s: 8 batches of 8 rows here).
  expect_identical(seen, 1L)
  expect_length(history$metrics$loss, 1)
  expect_true(is.nan(history$metrics$loss))
  expect_lte(model$optimizer$iterations, 8)

  e <- error_of(fit(model, d$x, d$y, epochs = 2, verbose = 0,
                    callbacks = list(callback_terminate_on_nan(raise_error = TRUE))))
  expect_s3_class(e, "mirrored_nan_error")
  expect_match(conditionMessage(e), "NaN or Inf loss encountered at batch 1")

  # A finite loss trains all epochs.
  fresh <- small_model()
  compile(fresh, optimizer = "sgd", loss = "mse")
  h <- fit(fresh, d$x, d$y, epochs = 3, verbose = 0, callbacks = list(callback_terminate_on_nan()))
  expect_length(h$metrics$loss, 3)
})

test_that("stop_training set in a batch callback ends the epoch after that batch (as Keras)", {
  d <- small_data(n = 64)
  model <- small_model()
  compile(model, optimizer = "sgd", loss = "mse")
  stopper <- callback_lambda(on_train_batch_end = function(batch, logs) {
    if (batch == 3) model$stop_training <- TRUE
  })
  h <- fit(model, d$x, d$y, epochs = 4, batch_size = 8, verbose = 0, callbacks = list(stopper))
  expect_equal(model$optimizer$iterations, 3)
  expect_length(h$metrics$loss, 1)
})

# ---- 4. errors name the user's function ----------------------------------------------

test_that("errors name the exported function the user called, never a helper", {
  d <- small_data()
  model <- small_model()
  compile(model, optimizer = "sgd", loss = "mse")
  ds <- tensor_slices_dataset(list(d$x, d$y))
  cases <- list(
    keras_input = quote(keras_input(shape = "a")),
    layer_dense = quote(layer_dense(units = 2, activation = "nope")),
    keras_model = quote(keras_model(inputs = 1, outputs = 2)),
    compile = quote(compile(model, optimizer = "sgd", loss = "mse", metrics = "nope")),
    compile = quote(compile(model, optimizer = "nope", loss = "mse")),
    fit = quote(fit(model, d$x, d$y, callbacks = 1, verbose = 0)),
    fit = quote(fit(model, d$x[, 1:3], d$y, verbose = 0)),
    evaluate = quote(evaluate(model, d$x, d$y[1:3, ], verbose = 0)),
    predict = quote(predict(model, d$x[, 1:3], verbose = 0)),
    save_model = quote(save_model(model, 1)),
    save_model = quote(save_model(model, tempfile(fileext = ".txt"))),
    save_model = quote(save_model(model, "/nonexistent-dir-of-mirrored/a.keras")),
    load_model = quote(load_model("/nonexistent-dir-of-mirrored/a.keras")),
    tensor_slices_dataset = quote(tensor_slices_dataset(list(d$x, d$y[1:3, ]))),
    dataset_batch = quote(dataset_batch(ds, -1)),
    dataset_map = quote(dataset_map(ds, 1)),
    set_weights = quote(set_weights(model, 1)),
    set_weights = quote(set_weights(model, list(1))),
    mirrored_strategy = quote(mirrored_strategy(devices = 1)),
    mirrored_strategy = quote(mirrored_strategy(devices = "nope"))
  )
  for (k in seq_along(cases)) {
    e <- suppressMessages(error_of(eval(cases[[k]])))
    expect_s3_class(e, "mirrored_error")
    expect_identical(call_head(e), names(cases)[k], label = deparse(cases[[k]]))
  }
})

# ---- 5. dataset_map() errors show shapes, not values -----------------------------------

test_that("an error inside a dataset_map() function shows its message and the batch's shapes", {
  set.seed(2)
  ds <- tensor_slices_dataset(list(matrix(runif(64 * 784), 64), 0:63)) |>
    dataset_batch(32) |>
    dataset_map(function(x, y) {
      if (ncol(x) > 10) stop("features too wide")
      list(x, y)
    })
  model <- keras_model_sequential(input_shape = 784) |> layer_dense(units = 10)
  compile(model, optimizer = "sgd", loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
  e <- error_of(fit(model, ds, verbose = 0))
  expect_s3_class(e, "mirrored_value_error")
  msg <- conditionMessage(e)
  expect_match(msg, "dataset_map()", fixed = TRUE)
  expect_match(msg, "x: (32, 784), y: (32)", fixed = TRUE)
  expect_match(msg, "features too wide", fixed = TRUE)
  shown <- paste(c(msg, deparse(conditionCall(e))), collapse = "\n")
  expect_lt(nchar(shown), 600)
  expect_identical(call_head(e), "dataset_map")
})

# ---- 6. interrupts keep the finished epochs in model$history -----------------------------

test_that("an interrupt keeps the finished epochs in model$history whatever verbose is", {
  d <- small_data(n = 32)
  for (verbose in 0:2) {
    for (where in c("epoch", "batch")) {
      model <- small_model()
      compile(model, optimizer = "sgd", loss = "mse")
      # Ctrl-C while R code runs (the progress bar, a callback): simulated by
      # signalling R's interrupt condition from a callback.
      interrupt <- function() {
        signalCondition(structure(class = c("interrupt", "condition"), list(message = "", call = NULL)))
      }
      cb <- if (where == "epoch") {
        callback_lambda(on_epoch_begin = function(epoch, logs) if (epoch == 3) interrupt())
      } else {
        callback_lambda(on_train_batch_end = function(batch, logs) {
          if (model$optimizer$iterations == 9) interrupt()
        })
      }
      status <- NULL
      capture.output(status <- tryCatch({
        fit(model, d$x, d$y, epochs = 5, batch_size = 8, verbose = verbose, callbacks = list(cb))
        "finished"
      }, interrupt = function(e) "interrupted"))
      expect_identical(status, "interrupted")
      expect_length(model$history$metrics$loss, 2)
      expect_true(all(is.finite(model$history$metrics$loss)))
    }
  }
})

# ---- 7. readRDS() of a model -------------------------------------------------------------

test_that("a model restored by readRDS() gives a classed error on every method", {
  d <- small_data()
  model <- small_model()
  compile(model, optimizer = "sgd", loss = "mse")
  fit(model, d$x, d$y, verbose = 0)
  path <- tempfile(fileext = ".rds")
  saveRDS(model, path)
  restored <- readRDS(path)
  uses <- list(
    print = quote(print(restored)), summary = quote(summary(restored)),
    predict = quote(predict(restored, d$x, verbose = 0)),
    fit = quote(fit(restored, d$x, d$y, verbose = 0)),
    evaluate = quote(evaluate(restored, d$x, d$y, verbose = 0)),
    get_weights = quote(get_weights(restored)), set_weights = quote(set_weights(restored, get_weights(model))),
    save_model = quote(save_model(restored, tempfile(fileext = ".keras")))
  )
  for (k in seq_along(uses)) {
    e <- error_of(capture.output(eval(uses[[k]])))
    expect_s3_class(e, "mirrored_serialization_error")
    expect_match(conditionMessage(e), "save_model()", fixed = TRUE)
    expect_match(conditionMessage(e), "load_model()", fixed = TRUE)
    expect_identical(call_head(e), names(uses)[k], label = names(uses)[k])
  }
  # The original is untouched.
  expect_equal(dim(predict(model, d$x, verbose = 0)), c(16, 2))
})

# ---- 8. MirroredStrategy(devices = list(...)) ----------------------------------------------

test_that("tf$distribute$MirroredStrategy() takes devices as a list, as R users write them", {
  s <- suppressMessages(tf$distribute$MirroredStrategy(devices = list("/cpu:0", "/cpu:1")))
  expect_equal(s$num_replicas_in_sync, 2)
  expect_identical(s$devices, suppressMessages(mirrored_strategy(c("/cpu:0", "/cpu:1")))$devices)
  e <- error_of(mirrored_strategy(devices = list("/cpu:0", 1)))
  expect_s3_class(e, "mirrored_value_error")
})

# ---- 9. callback_tensorboard() --------------------------------------------------------------

test_that("callback_tensorboard() is a not-yet error pointing to callback_csv_logger()", {
  e <- error_of(callback_tensorboard(log_dir = "logs/run1", histogram_freq = 1))
  expect_s3_class(e, "mirrored_not_yet_error")
  expect_match(conditionMessage(e), "callback_csv_logger", fixed = TRUE)
  expect_identical(call_head(e), "callback_tensorboard")
})

test_that("get_weights(), set_weights() and load_model_weights() reject unknown arguments", {
  model <- small_model()
  w <- get_weights(model)
  e <- error_of(get_weights(model, trainable = TRUE))
  expect_s3_class(e, "mirrored_value_error")
  expect_identical(call_head(e), "get_weights")
  e <- error_of(set_weights(model, w, strict = TRUE))
  expect_s3_class(e, "mirrored_value_error")
  expect_match(conditionMessage(e), "`strict`")
  path <- tempfile(fileext = ".weights.h5")
  save_model_weights(model, path)
  e <- error_of(load_model_weights(model, path, skip_mismatches = FALSE))
  expect_match(conditionMessage(e), "`skip_mismatches`.*`skip_mismatch`")
  expect_identical(call_head(e), "load_model_weights")
})
