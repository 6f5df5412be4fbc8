# NaN and Inf in the data are caught on every input path (arrays, datasets
# and what transforms them, validation data, evaluate() and predict()) as
# the batch is assembled on the host, with a classed error naming the
# argument, the component, the batch and the row.

nf_data <- function(n = 40) {
  x <- matrix(seq(-1, 1, length.out = n * 3), n, 3)
  list(x = x, y = as.integer(x[, 1] > x[, 2] + 0.01), n = n)
}
nf_model <- function() {
  set_random_seed(1)
  m <- keras_model_sequential(input_shape = 3) |> layer_dense(2)
  m |> compile(optimizer = optimizer_sgd(0.1), loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
  m
}
# Row 37 of 40 in batches of 8 is row 5 of batch 5.
with_bad <- function(a, value, row = 37, col = 2) {
  if (is.null(dim(a))) a[row] <- value else a[row, col] <- value
  a
}

test_that("a NaN in a dataset's features is an error naming the batch and row", {
  d <- nf_data()
  m <- nf_model()
  before <- get_weights(m)
  ds <- tensor_slices_dataset(list(with_bad(d$x, NaN), d$y)) |> dataset_batch(8)
  expect_error(fit(m, ds, verbose = 0), class = "mirrored_value_error",
               regexp = "`x` has a NaN in the features \\(component 1\\) at row 5 of batch 5")
  # The batches before the bad one trained; nothing went NaN.
  expect_true(all(is.finite(unlist(get_weights(m)))))
  expect_false(identical(get_weights(m), before))
})

test_that("Inf in a dataset's targets or sample weights is an error naming the component", {
  d <- nf_data()
  m <- nf_model()
  y <- as.double(d$y)
  ds <- tensor_slices_dataset(list(d$x, with_bad(y, Inf, row = 12))) |> dataset_batch(8)
  expect_error(fit(m, ds, verbose = 0), class = "mirrored_value_error",
               regexp = "`x` has an Inf in the targets \\(component 2\\) at row 4 of batch 2")
  w <- with_bad(rep(1, d$n), -Inf, row = 9)
  ds <- tensor_slices_dataset(list(d$x, d$y, w)) |> dataset_batch(8)
  expect_error(fit(m, ds, verbose = 0), class = "mirrored_value_error",
               regexp = "`x` has a -Inf in the sample weights \\(component 3\\) at row 1 of batch 2")
})

test_that("non-finite values made by dataset_map() and built-in transforms are caught", {
  d <- nf_data()
  m <- nf_model()
  ds <- tensor_slices_dataset(list(d$x, d$y)) |>
    dataset_map(function(x, y) list(if (x[3] > 0.95) x / 0 else x, y)) |>
    dataset_batch(8)
  expect_error(fit(m, ds, verbose = 0), class = "mirrored_value_error",
               regexp = "`x` has (an|a -)Inf in the features \\(component 1\\) at row [0-9]+ of batch 5")
  # Rescales that overflow float32.
  ds <- tensor_slices_dataset(list(d$x, d$y)) |> dataset_batch(8) |> dataset_rescale(1e20) |>
    dataset_rescale(1e20)
  expect_error(fit(m, ds, verbose = 0), class = "mirrored_value_error",
               regexp = "`x` has (an|a -)Inf in the features \\(component 1\\) at row 1 of batch 1")
})

test_that("non-finite values read back from a dataset_cache() file are caught", {
  d <- nf_data()
  m <- nf_model()
  file <- tempfile("nf-cache")
  on.exit(unlink(paste0(file, "*")))
  ds <- tensor_slices_dataset(list(with_bad(d$x, NaN), d$y)) |> dataset_cache(file) |> dataset_batch(8)
  for (pass in 1:2) {  # the pass that writes the file, then the one that reads it
    expect_error(fit(m, ds, verbose = 0), class = "mirrored_value_error",
                 regexp = "NaN in the features \\(component 1\\) at row 5 of batch 5")
  }
})

test_that("NaN in validation data, evaluate() and predict() datasets is caught", {
  d <- nf_data()
  m <- nf_model()
  bad <- tensor_slices_dataset(list(with_bad(d$x, NaN), d$y)) |> dataset_batch(8)
  expect_error(fit(m, d$x, d$y, validation_data = bad, verbose = 0), class = "mirrored_value_error",
               regexp = "`validation_data` has a NaN in the features \\(component 1\\) at row 5 of batch 5")
  expect_error(evaluate(m, bad, verbose = 0), class = "mirrored_value_error",
               regexp = "`x` has a NaN in the features \\(component 1\\) at row 5 of batch 5")
  expect_error(predict(m, tensor_slices_dataset(with_bad(d$x, NaN)) |> dataset_batch(8), verbose = 0),
               class = "mirrored_value_error",
               regexp = "`x` has a NaN in the features \\(component 1\\) at row 5 of batch 5")
  # predict() ignores the targets of list(x, y) elements, NaN or not.
  ds <- tensor_slices_dataset(list(d$x, with_bad(as.double(d$y), NaN))) |> dataset_batch(8)
  expect_equal(predict(m, ds, verbose = 0), predict(m, d$x, verbose = 0))
})

test_that("a NaN in one input of a model of several inputs names that input", {
  set_random_seed(2)
  a <- keras_input(shape = 2, name = "a")
  b <- keras_input(shape = 3, name = "b")
  m <- keras_model(list(a, b), layer_dense(layer_concatenate(list(a, b)), 1))
  m |> compile(optimizer = "sgd", loss = "mse")
  xa <- matrix(0, 16, 2)
  xb <- with_bad(matrix(0, 16, 3), NaN, row = 11, col = 1)
  ds <- tensor_slices_dataset(list(list(xa, xb), matrix(0, 16, 1))) |> dataset_batch(4)
  expect_error(fit(m, ds, verbose = 0), class = "mirrored_value_error",
               regexp = "the features of input \"b\" \\(component 2\\) at row 3 of batch 3")
})

test_that("arrays with NaN, Inf or values beyond float32 are errors naming the row", {
  d <- nf_data()
  m <- nf_model()
  expect_error(fit(m, with_bad(d$x, NaN), d$y, verbose = 0), class = "mirrored_value_error",
               regexp = "`x` must not contain NA, NaN or Inf values; row 37 has NaN")
  expect_error(fit(m, d$x, d$y, validation_data = list(with_bad(d$x, Inf, row = 3), d$y), verbose = 0),
               class = "mirrored_value_error", regexp = "`validation_data\\[\\[1\\]\\]`.*row 3 has Inf")
  expect_error(predict(m, with_bad(d$x, -Inf, row = 8), verbose = 0), class = "mirrored_value_error",
               regexp = "`x`.*row 8 has -Inf")
  # Finite in double precision, Inf in float32: caught too.
  expect_error(fit(m, with_bad(d$x, 1e39, row = 6), d$y, verbose = 0), class = "mirrored_value_error",
               regexp = "`x` must not contain NA, NaN or Inf \\(found 1e\\+39 at row 6, beyond the range of float32\\)")
  expect_true(all(is.finite(unlist(get_weights(m)))))
})
