# Conv1D/Conv2D and the pooling layers through the R API: argument errors
# (class and argument), shapes and parameter counts through a model, outputs
# against a direct R reference, and a convnet trained on 1 and 3 CPU replicas.

quiet_strategy <- function(...) suppressMessages(mirrored_strategy(...))

test_that("constructors check their arguments with classed errors naming them", {
  x <- keras_input(shape = c(8, 8, 4))
  err <- function(expr, arg, class = "mirrored_value_error") {
    expect_error(expr, class = class, regexp = arg, fixed = TRUE)
  }
  err(layer_conv_2d(x, filters = 0, kernel_size = 3), "filters")
  err(layer_conv_2d(x, filters = 4, kernel_size = c(3, 3, 3)), "kernel_size")
  err(layer_conv_2d(x, filters = 4, kernel_size = 0), "kernel_size")
  err(layer_conv_2d(x, filters = 4, kernel_size = 3, strides = -1), "strides")
  err(layer_conv_2d(x, filters = 4, kernel_size = 3, dilation_rate = 0), "dilation_rate")
  err(layer_conv_2d(x, filters = 4, kernel_size = 3, padding = "full"), "padding")
  err(layer_conv_2d(x, filters = 4, kernel_size = 3, data_format = "channels_first"),
      "channels_first")
  err(layer_conv_2d(x, filters = 6, kernel_size = 3, groups = 4), "groups")
  err(layer_conv_2d(x, filters = 4, kernel_size = 3, strides = 2, dilation_rate = 2),
      "dilation_rate")
  err(layer_conv_2d(x, filters = 4, kernel_size = 3, kernel_regularizer = "l5"),
      "kernel_regularizer")
  err(layer_conv_2d(x, filters = 4, kernel_size = 3, bias_constraint = "nonneg"),
      "bias_constraint")
  err(layer_conv_2d(x, filters = 4, kernel_size = 3, kernel_size2 = 1), "kernel_size2")
  err(layer_conv_1d(keras_input(shape = c(10, 2)), 4, 3, padding = "causal"), "padding",
      class = "mirrored_not_yet_error")
  err(layer_max_pooling_2d(x, pool_size = 0), "pool_size")
  err(layer_max_pooling_2d(x, strides = c(1, 2, 3)), "strides")
  err(layer_average_pooling_1d(keras_input(shape = c(10, 2)), pool_size = 2, padding = "x"),
      "padding")
  err(layer_global_average_pooling_2d(x, keepdims = NA), "keepdims")
  err(layer_global_max_pooling_1d(keras_input(shape = c(10, 2)), data_format = "channels_first"),
      "channels_first")
  # What only the input shows: a kernel larger than the input, channels the
  # groups do not divide, a wrong rank.
  err(layer_conv_2d(x, filters = 4, kernel_size = 9), "larger than the input",
      class = "mirrored_shape_error")
  err(layer_conv_2d(x, filters = 6, kernel_size = 3, groups = 3), "groups",
      class = "mirrored_shape_error")
  err(layer_max_pooling_2d(keras_input(shape = c(8, 4))), "rank 4", class = "mirrored_shape_error")
  expect_s3_class(layer_conv_2d(x, filters = 4, kernel_size = 9, padding = "same"),
                  "mirrored_keras_tensor")
})

test_that("the MNIST convnet has Keras' shapes and parameter counts", {
  inputs <- keras_input(shape = c(28, 28, 1))
  outputs <- inputs |>
    layer_conv_2d(filters = 32, kernel_size = c(3, 3), activation = "relu") |>
    layer_max_pooling_2d(pool_size = c(2, 2)) |>
    layer_conv_2d(filters = 64, kernel_size = c(3, 3), activation = "relu") |>
    layer_max_pooling_2d(pool_size = c(2, 2)) |>
    layer_flatten() |>
    layer_dropout(rate = 0.5) |>
    layer_dense(units = 10, activation = "softmax")
  model <- keras_model(inputs, outputs)
  w <- get_weights(model)
  expect_equal(lapply(w, dim), list(c(3L, 3L, 1L, 32L), 32L, c(3L, 3L, 32L, 64L), 64L,
                                    c(1600L, 10L), 10L))
  expect_equal(sum(vapply(w, length, 1L)), 34826)  # Keras' summary: 320 + 18,496 + 16,010
  text <- paste(capture.output(summary(model)), collapse = "\n")
  expect_match(text, "(None, 26, 26, 32)", fixed = TRUE)
  expect_match(text, "(None, 5, 5, 64)", fixed = TRUE)
  expect_match(text, "320", fixed = TRUE)
  expect_match(text, "18,496", fixed = TRUE)
  # Sequential, 1-D, strides, "same", global pooling with keepdims.
  m <- keras_model_sequential(input_shape = c(11, 3)) |>
    layer_conv_1d(filters = 4, kernel_size = 3, strides = 2, padding = "same") |>
    layer_average_pooling_1d(pool_size = 2, padding = "same") |>
    layer_global_max_pooling_1d(keepdims = TRUE)
  expect_equal(dim(predict(m, array(0, c(2, 11, 3)), verbose = 0)), c(2L, 1L, 4L))
  expect_equal(lapply(get_weights(m), dim), list(c(3L, 3L, 4L), 4L))
})

test_that("Conv2D and pooling outputs match a direct R reference", {
  set.seed(3)
  inputs <- keras_input(shape = c(6, 5, 2))
  conv <- inputs |>
    layer_conv_2d(filters = 3, kernel_size = c(3, 2), strides = c(2, 1), padding = "same",
                  bias_initializer = "glorot_uniform")
  pooled <- conv |> layer_average_pooling_2d(pool_size = 2, padding = "same")
  model <- keras_model(inputs, conv)
  x <- array(rnorm(2 * 6 * 5 * 2), c(2, 6, 5, 2))
  out <- list(predict(model, x, verbose = 0),
              predict(keras_model(inputs, pooled), x, verbose = 0))  # the same layers
  w <- get_weights(model)
  k <- w[[1]]
  b <- w[[2]]
  # "same": out = ceil(6/2) x ceil(5/1) = 3 x 5; pad rows 3 - 1 = 0... total
  # (3-1)*2 + 3 - 6 = 1 (0 before), cols (5-1)*1 + 2 - 5 = 1 (0 before).
  ref <- array(0, c(2, 3, 5, 3))
  for (n in 1:2) for (oy in 1:3) for (ox in 1:5) for (f in 1:3) {
    s <- b[f]
    for (ky in 1:3) for (kx in 1:2) {
      iy <- (oy - 1) * 2 + ky
      ix <- ox + kx - 1
      if (iy <= 6 && ix <= 5) s <- s + sum(x[n, iy, ix, ] * k[ky, kx, , f])
    }
    ref[n, oy, ox, f] <- s
  }
  expect_equal(out[[1]], ref, tolerance = 1e-5)
  # 2x2 average, "same" on 3 x 5: windows at the edge count only real values.
  pref <- array(0, c(2, 2, 3, 3))
  for (oy in 1:2) for (ox in 1:3) {
    rows <- (2 * oy - 1):min(2 * oy, 3)
    cols <- (2 * ox - 1):min(2 * ox, 5)
    pref[, oy, ox, ] <- apply(ref[, rows, cols, , drop = FALSE], c(1, 4), mean)
  }
  expect_equal(out[[2]], pref, tolerance = 1e-5)
})

train_convnet <- function(devices, x, y) {
  set_random_seed(7)
  with(quiet_strategy(devices)$scope(), {
    inputs <- keras_input(shape = c(9, 9, 2))
    outputs <- inputs |>
      layer_conv_2d(filters = 4, kernel_size = 3, activation = "relu", padding = "same") |>
      layer_max_pooling_2d() |>
      layer_conv_2d(filters = 6, kernel_size = 2, groups = 2) |>
      layer_global_average_pooling_2d() |>
      layer_dense(units = 3)
    model <- keras_model(inputs, outputs)
    model |> compile(optimizer = optimizer_adam(learning_rate = 0.02),
                     loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
  })
  fit(model, x, y, batch_size = 8, epochs = 2, verbose = 0)
  model
}

test_that("a convnet trains to the same weights on 1 and 3 CPU replicas (uneven last batch)", {
  set.seed(11)
  x <- array(rnorm(18 * 9 * 9 * 2), c(18, 9, 9, 2))  # batches of 8, 8, 2: the last leaves one replica empty
  y <- sample(0:2, 18, replace = TRUE)
  w1 <- get_weights(train_convnet("cpu:0", x, y))
  w3 <- get_weights(train_convnet(c("cpu:0", "cpu:1", "cpu:2"), x, y))
  w0 <- get_weights(local({
    set_random_seed(7)
    inputs <- keras_input(shape = c(9, 9, 2))
    keras_model(inputs, inputs |> layer_conv_2d(filters = 4, kernel_size = 3))
  }))
  expect_gt(max(abs(w1[[1]] - w0[[1]])), 1e-3)  # training moved the first kernel
  for (i in seq_along(w1)) expect_lt(max(abs(w1[[i]] - w3[[i]])), 1e-5)
})

test_that("a convnet round-trips through a .keras file with Keras' config keys", {
  set.seed(5)
  inputs <- keras_input(shape = c(10, 9, 3))
  outputs <- inputs |>
    layer_conv_2d(4, c(3, 2), strides = 2, padding = "same", activation = "relu") |>
    layer_max_pooling_2d(padding = "same") |>
    layer_conv_2d(6, 1, groups = 2) |>
    layer_average_pooling_2d(2, strides = 1) |>
    layer_global_max_pooling_2d(keepdims = TRUE) |>
    layer_flatten()
  model <- keras_model(inputs, outputs)
  x <- array(rnorm(2 * 10 * 9 * 3), c(2, 10, 9, 3))
  path <- tempfile(fileext = ".keras")
  on.exit(unlink(path))
  save_model(model, path)
  again <- load_model(path)
  expect_equal(predict(again, x, verbose = 0), predict(model, x, verbose = 0))
  expect_equal(get_weights(again), get_weights(model))
  dir <- tempfile()
  utils::unzip(path, exdir = dir)
  cfg <- mirrored:::parse_json_bytes(readBin(file.path(dir, "config.json"), "raw", 1e6), "c")
  cfg <- cfg$config$layers
  conv <- cfg[[2]]$config
  expect_equal(names(conv), c("name", "trainable", "dtype", "filters", "kernel_size", "strides",
                              "padding", "data_format", "dilation_rate", "groups", "activation",
                              "use_bias", "kernel_initializer", "bias_initializer",
                              "kernel_regularizer", "bias_regularizer", "activity_regularizer",
                              "kernel_constraint", "bias_constraint"))
  expect_equal(conv$kernel_size, list(3L, 2L))
  expect_equal(conv$strides, list(2L, 2L))
  pool <- cfg[[3]]$config
  expect_equal(names(pool), c("name", "trainable", "dtype", "pool_size", "padding", "strides",
                              "data_format"))
  expect_equal(pool$strides, list(2L, 2L))
  expect_equal(cfg[[6]]$config$keepdims, TRUE)
})
