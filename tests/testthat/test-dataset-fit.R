# fit() / evaluate() / predict() on datasets.

small_model <- function() {
  set_random_seed(3)
  m <- keras_model_sequential(input_shape = 6) |>
    layer_dense(units = 8, activation = "relu") |>
    layer_dense(units = 3)
  m |> compile(optimizer = optimizer_adam(0.01), metrics = "accuracy",
               loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
  m
}

toy <- function(n = 100) {
  set.seed(9)
  x <- matrix(runif(n * 6), n, 6)
  y <- as.integer((x[, 1] + x[, 2] > 1) + (x[, 3] > 0.7))
  list(x = x, y = y)
}

test_that("fit on an unshuffled dataset equals fit on the same arrays", {
  d <- toy()
  a <- small_model()
  ha <- fit(a, d$x, d$y, batch_size = 16, epochs = 2, shuffle = FALSE, verbose = 0)
  b <- small_model()
  ds <- tensor_slices_dataset(list(d$x, d$y)) |> dataset_batch(16) |> dataset_prefetch()
  hb <- fit(b, ds, epochs = 2, verbose = 0)
  expect_equal(get_weights(b), get_weights(a), tolerance = 1e-6)
  expect_equal(hb$metrics, ha$metrics, tolerance = 1e-6)
  expect_equal(evaluate(b, ds, verbose = 0), evaluate(a, d$x, d$y, batch_size = 16, verbose = 0),
               tolerance = 1e-6)
  expect_equal(predict(b, tensor_slices_dataset(d$x) |> dataset_batch(32), verbose = 0),
               predict(a, d$x, verbose = 0), tolerance = 1e-6)
})

test_that("validation_data can be a dataset; R maps and steps_per_epoch work", {
  d <- toy()
  m <- small_model()
  tr <- tensor_slices_dataset(list(d$x[1:80, ], d$y[1:80])) |>
    dataset_map(function(x, y) list(x, y)) |> dataset_batch(16)
  va <- tensor_slices_dataset(list(d$x[81:100, ], d$y[81:100])) |> dataset_batch(10)
  h <- fit(m, tr, epochs = 2, validation_data = va, verbose = 0)
  expect_named(h$metrics, c("loss", "accuracy", "val_loss", "val_accuracy"))
  inf <- tensor_slices_dataset(list(d$x, d$y)) |> dataset_batch(10) |> dataset_repeat()
  expect_error(fit(m, inf, epochs = 1, verbose = 0), "steps_per_epoch", class = "mirrored_value_error")
  h2 <- fit(m, inf, epochs = 2, steps_per_epoch = 3, verbose = 0)
  expect_length(h2$metrics$loss, 2)
})

test_that("dataset inputs are checked like keras3", {
  d <- toy()
  m <- small_model()
  ds <- tensor_slices_dataset(list(d$x, d$y)) |> dataset_batch(10)
  expect_error(fit(m, ds, batch_size = 10, verbose = 0), "batch_size", class = "mirrored_value_error")
  expect_error(fit(m, ds, d$y, verbose = 0), class = "mirrored_value_error")
  expect_error(fit(m, tensor_slices_dataset(list(d$x, d$y)), verbose = 0), "dataset_batch",
               class = "mirrored_shape_error")
  expect_error(fit(m, tensor_slices_dataset(d$x) |> dataset_batch(5), verbose = 0),
               class = "mirrored_value_error")
  wrong <- tensor_slices_dataset(list(d$x[, 1:4], d$y)) |> dataset_batch(10)
  expect_error(fit(m, wrong, verbose = 0), class = "mirrored_shape_error")
  bad_labels <- tensor_slices_dataset(list(d$x, d$y + 5L)) |> dataset_batch(10)
  expect_error(fit(m, bad_labels, verbose = 0), class = "mirrored_value_error")
})
