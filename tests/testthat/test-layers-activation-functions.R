# An R function as a layer's activation (R/layers-activation-functions.R):
# values and one SGD step against plain R, the Keras weights and config,
# saving, and what is not supported.

test_that("layer_dense(activation = fn) computes fn(x W + b) and trains as plain R says", {
  square <- function(x) x^2
  inputs <- keras_input(shape = 3)
  outputs <- inputs |> layer_dense(2, activation = square, name = "sq")
  model <- keras_model(inputs, outputs)
  layer <- get_layer(model, "sq")
  expect_identical(layer$class_name, "Dense")
  w <- get_weights(model)
  expect_equal(lapply(w, dim), list(c(3L, 2L), 2L))
  x <- matrix(c(0.5, -1, 2, 0.1, 0.3, -0.7, 1.2, 0.4, 0.9, -0.3, 0.6, -1.1), 4, 3)
  z <- x %*% w[[1]] + rep(w[[2]], each = 4)
  expect_equal(predict(model, x, verbose = 0), z^2, tolerance = 1e-6)
  model |> compile(optimizer = optimizer_sgd(learning_rate = 0.05), loss = "mse")
  y <- matrix(c(1, 0, 0.5, 2, 0.1, 0.3, -0.2, 1), 4, 2)
  fit(model, x, y, batch_size = 4, epochs = 1, shuffle = FALSE, verbose = 0)
  dz <- 2 * (z^2 - y) / length(y) * 2 * z
  got <- get_weights(model)
  expect_equal(got[[1]], w[[1]] - 0.05 * t(x) %*% dz, tolerance = 1e-5, ignore_attr = TRUE)
  expect_equal(as.numeric(got[[2]]), as.numeric(w[[2]] - 0.05 * colSums(dz)), tolerance = 1e-5)
})

test_that("layer_activation(activation = fn) and a sequential model with one", {
  model <- keras_model_sequential(input_shape = 3) |>
    layer_dense(4, use_bias = FALSE, activation = function(x) op_tanh(x) * 2) |>
    layer_activation(function(x) x + 1)
  w <- get_weights(model)
  expect_length(w, 1)
  x <- matrix(seq(-1, 1, length.out = 6), 2, 3)
  expect_equal(predict(model, x, verbose = 0), tanh(x %*% w[[1]]) * 2 + 1, tolerance = 1e-6)
})

test_that("a registered activation function is saved by name and the model loads without it", {
  withr::local_dir(withr::local_tempdir())
  withr::defer(set_custom_objects(clear = TRUE))
  cube <- function(x) x^3
  cube <- register_keras_serializable(cube, name = "cube", package = "acts")
  inputs <- keras_input(shape = 2)
  model <- keras_model(inputs, layer_dense(inputs, 3, activation = cube))
  cfg <- get_config(get_layer(model, index = 2))
  expect_equal(cfg$activation$registered_name, "acts>cube")
  expect_equal(cfg$activation$config, "cube")
  save_model(model, "cube.keras")
  back <- load_model("cube.keras")
  x <- matrix(c(0.2, -0.5, 1, 0.3), 2)
  expect_equal(predict(back, x, verbose = 0), predict(model, x, verbose = 0), tolerance = 1e-6)
})

test_that("options an R activation function cannot take yet are clear errors", {
  expect_error(layer_dense(units = 2, activation = function(x) x, kernel_regularizer = regularizer_l2()),
               class = "mirrored_not_yet_error", regexp = "kernel_regularizer")
  bad <- function(x) if (x > 0) x else 0
  inputs <- keras_input(shape = 2)
  expect_error(layer_dense(inputs, 2, activation = bad), class = "mirrored_trace_error")
})
