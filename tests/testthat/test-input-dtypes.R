# Inputs that are not float32 (keras_input(dtype =)) and input shapes with
# unknown axes.

test_that("an int32 input feeds an Embedding: the rows it looks up, trained, saved and loaded", {
  withr::local_dir(withr::local_tempdir())
  inputs <- keras_input(shape = 4, dtype = "int32", name = "tokens")
  expect_equal(inputs$dtype, "int32")
  outputs <- inputs |> layer_embedding(input_dim = 10, output_dim = 3) |>
    layer_flatten() |> layer_dense(1)
  model <- keras_model(inputs, outputs)
  expect_equal(model$layers[[1]]$config$dtype, "int32")
  w <- get_weights(model)
  x <- matrix(c(0L, 3L, 9L, 1L, 2L, 2L, 5L, 7L), 2, 4, byrow = TRUE)
  emb <- t(apply(x, 1, function(r) as.vector(t(w[[1]][r + 1L, ]))))
  expect_equal(predict(model, x, verbose = 0), emb %*% w[[2]] + as.numeric(w[[3]]), tolerance = 1e-6)

  model |> compile(optimizer = "adam", loss = "mse")
  xs <- matrix(sample(0:9, 64 * 4, replace = TRUE), 64, 4)
  h <- fit(model, xs, rowSums(xs) / 10, epochs = 3, verbose = 0)
  expect_lt(h$metrics$loss[3], h$metrics$loss[1])
  save_model(model, "int.keras")
  back <- load_model("int.keras")
  expect_equal(back$layers[[1]]$config$dtype, "int32")
  expect_equal(predict(back, xs, verbose = 0), predict(model, xs, verbose = 0))
})

test_that("integer inputs must hold whole numbers, bool inputs 0/1", {
  inputs <- keras_input(shape = 2, dtype = "int64")
  model <- keras_model(inputs, inputs |> layer_embedding(5, 2) |> layer_flatten())
  expect_error(predict(model, matrix(c(1, 2.5), 1), verbose = 0), class = "mirrored_value_error",
               regexp = "whole")
  expect_equal(dim(predict(model, matrix(c(1, 4), 1), verbose = 0)), c(1L, 4L))
  b <- keras_input(shape = 3, dtype = "bool")
  m2 <- keras_model(b, b |> layer_dense(1, use_bias = FALSE, kernel_initializer = "ones"))
  expect_equal(predict(m2, matrix(c(TRUE, FALSE, TRUE), 1), verbose = 0), matrix(2))
  expect_error(predict(m2, matrix(c(1, 2, 0), 1), verbose = 0), class = "mirrored_value_error")
})

test_that("keras_model_sequential(input_dtype =) and input_layer(dtype =)", {
  model <- keras_model_sequential(input_shape = 3, input_dtype = "int32") |>
    layer_embedding(4, 2)
  expect_equal(model$input$dtype, "int32")
  expect_equal(get_config(model)$layers[[1]]$config$dtype, "int32")
  expect_equal(dim(predict(model, matrix(c(0L, 1L, 3L), 1), verbose = 0)), c(1L, 3L, 2L))
})

test_that("dtypes not supported yet and a second variable-length axis are not-yet errors naming the argument", {
  expect_error(keras_input(shape = 3, dtype = "float16"), class = "mirrored_not_yet_error",
               regexp = "dtype")
  expect_error(keras_input(shape = c(NA, NA)), class = "mirrored_not_yet_error", regexp = "shape")
  expect_error(keras_input(shape = shape(NULL, NULL, 3)), class = "mirrored_not_yet_error")
  expect_error(keras_model_sequential(input_shape = c(NA, NA, 3)), class = "mirrored_not_yet_error",
               regexp = "input_shape")
  expect_error(layer_dense(units = 2, input_shape = c(NA, NA, 4)), class = "mirrored_not_yet_error")
  # one variable axis is built (test-variable-length.R)
  expect_true(is.na(keras_input(shape = shape(NULL, 3))$shape[1]))
  expect_true(is.na((keras_model_sequential(input_shape = c(NA, 3)) |> layer_dense(2))$output$shape[1]))
  expect_error(keras_input(shape = 3, dtype = "complex"), class = "mirrored_error")
})

test_that("a dataset feeding an integer or bool input is checked batch by batch", {
  inputs <- keras_input(shape = 2, dtype = "int32")
  model <- keras_model(inputs, inputs |> layer_embedding(5, 2) |> layer_flatten() |> layer_dense(1))
  model |> compile(optimizer = "sgd", loss = "mse")
  good <- tensor_slices_dataset(list(matrix(c(0, 1, 2, 3), 2), c(1, 2))) |> dataset_batch(2)
  expect_length(fit(model, good, epochs = 1, verbose = 0)$metrics$loss, 1)
  bad <- tensor_slices_dataset(list(matrix(c(0, 1, 2.5, 3), 2), c(1, 2))) |> dataset_batch(1)
  expect_error(fit(model, bad, epochs = 1, verbose = 0), class = "mirrored_value_error",
               regexp = "whole numbers.*|row 1 of batch 1")
  expect_error(predict(model, bad, verbose = 0), class = "mirrored_value_error", regexp = "2.5")
  b <- keras_input(shape = 1, dtype = "bool")
  m2 <- keras_model(b, b |> layer_dense(1))
  expect_error(predict(m2, tensor_slices_dataset(matrix(c(0, 2), 2)) |> dataset_batch(2), verbose = 0),
               class = "mirrored_value_error", regexp = "bool input")
})
