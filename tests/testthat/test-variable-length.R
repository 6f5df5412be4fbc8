# Variable-length inputs: keras_input(shape = c(NA, ...)). Each batch takes
# one length; the core runs it on the model's graph bound to that length
# (src/mr/nn/graph.h), with the same weights.

per_step_model <- function(len) {
  inp <- keras_input(shape = c(len), dtype = "int32")
  out <- inp |>
    layer_embedding(10, 4, embeddings_initializer = initializer_random_normal(stddev = 0.3, seed = 1)) |>
    layer_dense(3, activation = "tanh", kernel_initializer = initializer_glorot_uniform(seed = 2))
  keras_model(inp, out)
}

ids_of <- function(rows, len, salt) matrix((seq_len(rows * len) * 7 + salt) %% 10, rows, len)
targets_of <- function(rows, len, salt) array(sin(0.37 * (seq_len(rows * len * 3) + salt)), c(rows, len, 3))

test_that("a variable-length axis shows as None and follows through the layers", {
  inp <- keras_input(shape = c(NA), dtype = "int32")
  expect_equal(inp$shape, NA_integer_)
  out <- inp |> layer_embedding(10, 4) |> layer_dense(3)
  expect_true(is.na(out$shape[1]))
  expect_equal(out$shape[2], 3L)
  model <- keras_model(inp, out)
  expect_output(print(model), "(None, None, 3)", fixed = TRUE)
  expect_output(print(inp), "shape=(None, None)", fixed = TRUE)
  # shape(NULL, 8) and batch_shape = list(NULL, NULL, 8) give the same input
  expect_true(is.na(keras_input(shape = shape(NULL, 8))$shape[1]))
  expect_true(is.na(keras_input(batch_shape = list(NULL, NULL, 8))$shape[1]))
  # pooling over the variable axis gives a fixed shape again
  pooled <- keras_input(shape = c(NA, 8)) |> layer_global_average_pooling_1d()
  expect_equal(pooled$shape, 8L)
})

test_that("batches of lengths 7, 19 and 3 train as the same model at each fixed length", {
  lengths <- c(7, 19, 3)
  rows <- 5
  var <- per_step_model(NA)
  var |> compile(optimizer = optimizer_sgd(0.5), loss = "mse", metrics = "mae")
  w <- get_weights(var)
  losses <- numeric(0)
  for (i in seq_along(lengths)) {
    len <- lengths[i]
    x <- ids_of(rows, len, i)
    y <- targets_of(rows, len, i)
    fixed <- per_step_model(len)
    fixed |> compile(optimizer = optimizer_sgd(0.5), loss = "mse", metrics = "mae")
    set_weights(fixed, w)
    want <- train_on_batch(fixed, x, y)
    got <- train_on_batch(var, x, y)
    expect_equal(got$loss, want$loss, tolerance = 1e-6)
    expect_equal(got$mae, want$mae, tolerance = 1e-6)
    w <- get_weights(fixed)
    expect_equal(get_weights(var), w, tolerance = 1e-6)
    expect_equal(predict(var, x, verbose = 0), predict(fixed, x, verbose = 0), tolerance = 1e-6)
    losses[i] <- want$loss
  }

  # The same batches as a dataset through fit(): Keras logs the batches'
  # mean losses weighted by their samples.
  var2 <- per_step_model(NA)
  var2 |> compile(optimizer = optimizer_sgd(0.5), loss = "mse")
  ds <- tensor_slices_dataset(seq_len(3 * rows)) |>
    dataset_map(function(j) {
      i <- (j - 1) %/% rows + 1  # the batch
      r <- (j - 1) %% rows + 1   # its row
      list(ids_of(rows, lengths[i], i)[r, ], targets_of(rows, lengths[i], i)[r, , ])
    }) |>
    dataset_padded_batch(rows)
  hist <- fit(var2, ds, epochs = 1, verbose = 0)
  expect_equal(hist$metrics$loss, mean(losses), tolerance = 1e-5)
  expect_equal(get_weights(var2), w, tolerance = 1e-5)
})

test_that("two replicas give the one-replica numbers on variable lengths", {
  train <- function(devices) {
    strategy <- suppressMessages(mirrored_strategy(devices))
    with(strategy$scope(), {
      m <- per_step_model(NA)
      m |> compile(optimizer = optimizer_sgd(0.5), loss = "mse")
    })
    for (len in c(7, 19, 3)) train_on_batch(m, ids_of(5, len, len), targets_of(5, len, len))
    get_weights(m)
  }
  expect_equal(train(c("/cpu:0", "/cpu:1")), train("/cpu:0"), tolerance = 1e-6)
})

test_that("what a variable-length model cannot take is a clear error", {
  expect_error(keras_input(shape = c(NA, NA, 3)), class = "mirrored_not_yet_error",
               regexp = "one per input")
  expect_error(keras_input(shape = c(NA, 2)) |> layer_flatten() |> layer_dense(1),
               class = "mirrored_shape_error", regexp = "variable-length")
  m <- keras_model(inp <- keras_input(shape = c(NA, 2)), layer_dense(inp, 1))
  m |> compile(optimizer = "sgd", loss = "mse")
  expect_error(train_on_batch(m, array(1, c(2, 3, 2)), array(1, c(2, 4, 1))),
               class = "mirrored_shape_error")
  expect_error(predict(m, array(1, c(2, 5)), verbose = 0), class = "mirrored_shape_error")
  # batches of different lengths do not stack into one prediction array
  ds <- tensor_slices_dataset(c(2, 2, 3, 3)) |>
    dataset_map(function(n) matrix(1, n, 2)) |>
    dataset_padded_batch(2)
  expect_error(predict(m, ds, verbose = 0), class = "mirrored_shape_error",
               regexp = "predict_on_batch")
  # a loss written in R on an output whose length varies
  expect_error(compile(m, optimizer = "sgd", loss = function(y_true, y_pred) op_mean(op_square(y_true - y_pred))),
               class = "mirrored_value_error", regexp = "length varies")
})

test_that("a variable-length model saves, loads and rebuilds from its config with its None axis", {
  m <- per_step_model(NA)
  f <- tempfile(fileext = ".keras")
  on.exit(unlink(f))
  save_model(m, f)
  loaded <- load_model(f)
  expect_true(is.na(loaded$input$shape))
  x <- ids_of(3, 6, 1)
  expect_equal(predict(loaded, x, verbose = 0), predict(m, x, verbose = 0))
  expect_equal(get_config(m)$layers[[1]]$config$batch_shape, list(NULL, NULL))
  s <- keras_model_sequential(input_shape = c(NA, 4)) |> layer_dense(2) |> layer_global_max_pooling_1d()
  expect_equal(dim(predict(s, array(1, c(2, 9, 4)), verbose = 0)), c(2L, 2L))
})
