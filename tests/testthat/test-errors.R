small_model <- function(units = 3, input = 4) {
  model <- keras_model_sequential(input_shape = input) |> layer_dense(units = units)
  model |> compile(optimizer = "adam", loss = loss_sparse_categorical_crossentropy(from_logits = TRUE),
                   metrics = "accuracy")
  model
}

expect_mirrored_error <- function(expr, class = "mirrored_value_error", regexp = NULL) {
  err <- expect_error(expr, class = class, regexp = regexp)
  expect_s3_class(err, "mirrored_error")
  invisible(err)
}

test_that("bad layer and model arguments are classed errors naming the argument", {
  expect_mirrored_error(layer_dense(units = 0), regexp = "units")
  expect_mirrored_error(layer_dense(units = -2), regexp = "units")
  expect_mirrored_error(layer_dense(units = 2.5), regexp = "units")
  expect_mirrored_error(layer_dense(units = "a"), regexp = "units")
  expect_mirrored_error(layer_dense(units = 2, activation = "swishy"), regexp = "activation")
  expect_mirrored_error(layer_dense(units = 2, kernel_initializer = "orthogonal"), regexp = "kernel_initializer")
  expect_mirrored_error(layer_dropout(rate = 1), regexp = "rate")
  expect_mirrored_error(layer_dropout(rate = -0.1), regexp = "rate")
  expect_mirrored_error(layer_dense(units = 2, bogus = 1), regexp = "bogus")
  expect_mirrored_error(keras_input(shape = c(0, 3)), regexp = "shape")
  expect_mirrored_error(keras_input(shape = 3, dtype = "complex128"), regexp = "dtype")
  expect_mirrored_error(keras_model(1, 2), regexp = "inputs")
  a <- keras_input(shape = 3)
  b <- keras_input(shape = 3)
  expect_mirrored_error(keras_model(a, layer_dense(b, units = 2)), regexp = "not in")
  expect_mirrored_error(layer_dense(matrix(1:4, 2), units = 2), regexp = "object")
})

test_that("compile() rejects unknown optimizers, losses and metrics", {
  model <- keras_model_sequential(input_shape = 4) |> layer_dense(units = 3)
  expect_mirrored_error(compile(model, optimizer = "adagradd", loss = "mse"), regexp = "optimizer")
  expect_mirrored_error(compile(model, optimizer = "adam", loss = "dice"), regexp = "loss")
  expect_mirrored_error(compile(model, optimizer = "adam", loss = "mse", metrics = "f1"), regexp = "metrics")
  expect_mirrored_error(compile(model, optimizer = "adam"), regexp = "loss")
  expect_mirrored_error(optimizer_adam(learning_rate = -1), regexp = "learning_rate")
  expect_mirrored_error(optimizer_adam(beta_1 = 1), regexp = "beta_1")
  expect_mirrored_error(optimizer_sgd(clipnorm = -1), regexp = "clipnorm")
})

test_that("fit() before compile() and bad training arguments are classed errors", {
  x <- matrix(runif(40), 10)
  y <- rep(0:2, length.out = 10)
  raw <- keras_model_sequential(input_shape = 4) |> layer_dense(units = 3)
  expect_mirrored_error(fit(raw, x, y, verbose = 0), regexp = "compile")
  expect_mirrored_error(evaluate(raw, x, y, verbose = 0), regexp = "compile")
  model <- small_model()
  expect_mirrored_error(fit(model, x, y, epochs = -1, verbose = 0), regexp = "epochs")
  expect_mirrored_error(fit(model, x, y, batch_size = 0, verbose = 0), regexp = "batch_size")
  expect_mirrored_error(fit(model, x, y, batch_size = -3, verbose = 0), regexp = "batch_size")
  expect_mirrored_error(fit(model, x, y, validation_split = 1, verbose = 0), regexp = "validation_split")
  expect_mirrored_error(fit(model, x, y, verbose = 7), regexp = "verbose")
  expect_mirrored_error(fit(model, x, y, sample_weight = rep(1, 9), verbose = 0), regexp = "sample_weight")
})

test_that("bad data is a classed error, never a crash", {
  model <- small_model()
  x <- matrix(runif(40), 10)
  y <- rep(0:2, length.out = 10)
  expect_mirrored_error(fit(model, x, y[1:9], verbose = 0), regexp = "same number of samples")
  expect_mirrored_error(fit(model, matrix(runif(50), 10), y, verbose = 0), class = "mirrored_shape_error")
  xna <- x
  xna[3, 2] <- NA
  expect_mirrored_error(fit(model, xna, y, verbose = 0), regexp = "NA")
  xinf <- x
  xinf[1, 1] <- Inf
  expect_mirrored_error(fit(model, xinf, y, verbose = 0), regexp = "Inf")
  xnan <- x
  xnan[1, 1] <- NaN
  expect_mirrored_error(predict(model, xnan, verbose = 0), regexp = "NaN")
  expect_mirrored_error(fit(model, matrix(letters[1:40], 10), y, verbose = 0), regexp = "numeric")
  expect_mirrored_error(fit(model, x, c(0, 1, 2, 3, 0, 1, 2, 0, 1, 2), verbose = 0), regexp = "0..2")
  expect_mirrored_error(fit(model, x, c(-1, rep(0, 9)), verbose = 0), regexp = "class indices")
  expect_mirrored_error(fit(model, x, c(0.5, rep(0, 9)), verbose = 0), regexp = "class indices")
  expect_mirrored_error(fit(model, x, matrix(0, 10, 2), verbose = 0), class = "mirrored_shape_error")
  expect_mirrored_error(set_weights(model, list(1, 2)), class = "mirrored_shape_error", regexp = "weight 1")
  expect_mirrored_error(set_weights(model, list(1)), regexp = "expected 2 weight arrays")
  expect_mirrored_error(set_weights(model, "a"), regexp = "weights")
  expect_mirrored_error(set_weights(model, list(matrix(0, 3, 3), rep(0, 3))), class = "mirrored_shape_error")
  # The model is still usable after every error above.
  expect_silent(fit(model, x, y, verbose = 0))
  expect_equal(dim(predict(model, x, verbose = 0)), c(10L, 3L))
})

test_that("errors raised inside the C++ core keep their class", {
  err <- expect_error(read_idx(system.file("DESCRIPTION", package = "mirrored")), class = "mirrored_io_error")
  expect_match(conditionMessage(err), "not an IDX file|truncated")
  expect_error(read_idx(tempfile()), class = "mirrored_io_error")
})

test_that("keras3 idioms mirrored lacks are classed errors, the first of a pipe first", {
  # the first missing function of a pipe is the one reported
  err <- tryCatch(keras_model_sequential(input_shape = 4) |> layer_lstm(4) |> layer_gaussian_noise(0.1),
                  error = identity)
  expect_s3_class(err, "mirrored_not_yet_error")
  expect_match(conditionMessage(err), "layer_lstm")
  # TensorFlow's modules
  expect_error(tf$strings$lower("ABC"), class = "mirrored_not_yet_error", regexp = "tf\\$strings")
  expect_error(tf$distribute$NoSuchStrategy(), class = "mirrored_not_yet_error")
  expect_true(is.function(tf$distribute$MirroredStrategy))
  # strings in a dataset, legacy HDF5 model files
  expect_error(tensor_slices_dataset(list(a = c("x", "y"))), class = "mirrored_not_yet_error",
               regexp = "factor")
  model <- keras_model_sequential(layers = list(keras_input(shape = 4), layer_dense(units = 2)))
  expect_equal(model$input$shape, 4L)
  f <- withr::local_tempfile(fileext = ".h5")
  expect_error(save_model(model, f), class = "mirrored_not_supported_error", regexp = "weights.h5")
  expect_false(file.exists(f))
})
