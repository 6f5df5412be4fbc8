# fit()'s arguments as keras3 takes them: verbose = TRUE/FALSE, shuffle = "batch".

test_that("verbose = TRUE / FALSE are 1 / 0, as in keras3", {
  model <- keras_model_sequential(input_shape = 2) |> layer_dense(1)
  model |> compile(optimizer = "sgd", loss = "mse")
  x <- matrix(runif(8), 4)
  y <- runif(4)
  expect_silent(fit(model, x, y, epochs = 1, verbose = FALSE))
  expect_output(fit(model, x, y, epochs = 1, verbose = TRUE), "loss")
  expect_silent(evaluate(model, x, y, verbose = FALSE))
  expect_error(fit(model, x, y, epochs = 1, verbose = NA), class = "mirrored_value_error")
})

test_that("shuffle = \"batch\" keeps the batches' samples and only their order within", {
  set.seed(4)
  x <- matrix(rnorm(64 * 3), 64)
  y <- x %*% c(1, -2, 0.5) + rnorm(64, sd = 0.1)
  train <- function(shuffle) {
    set.seed(9)
    model <- keras_model_sequential(input_shape = 3) |>
      layer_dense(1, kernel_initializer = initializer_random_normal(seed = 1))
    model |> compile(optimizer = optimizer_sgd(0.05), loss = "mse")
    fit(model, x, y, batch_size = 16, epochs = 3, shuffle = shuffle, verbose = 0)
    unlist(get_weights(model))
  }
  plain <- train(FALSE)
  within <- train("batch")
  across <- train(TRUE)
  # The same samples in every batch: the same gradients up to summation order.
  expect_equal(within, plain, tolerance = 1e-5)
  expect_false(isTRUE(all.equal(across, plain, tolerance = 1e-5)))
  expect_equal(train("Batch"), within)  # any case, as Keras lowers it
  expect_error(train("rows"), class = "mirrored_value_error")
})

test_that("train_on_batch(), test_on_batch(), predict_on_batch() work on one batch as Keras 3", {
  set.seed(2)
  x <- matrix(runif(30), 10)
  y <- runif(10)
  make <- function(metrics = NULL) {
    m <- keras_model_sequential(input_shape = 3) |>
      layer_dense(1, kernel_initializer = initializer_random_normal(seed = 3))
    m |> compile(optimizer = optimizer_sgd(0.1), loss = "mse", metrics = metrics)
    m
  }
  a <- make("mae")
  b <- make("mae")
  # One step on the whole batch: fit() with one batch of all samples.
  logs <- train_on_batch(a, x, y)
  expect_named(logs, c("loss", "mae"))
  p0 <- predict(b, x, verbose = 0)
  expect_equal(logs$loss, mean((p0 - y)^2), tolerance = 1e-6)  # before the step
  fit(b, x, y, batch_size = 10, epochs = 1, shuffle = FALSE, verbose = 0)
  expect_equal(get_weights(a), get_weights(b))
  # Metrics are reset first: the second call reports its own batch only.
  t1 <- test_on_batch(a, x[1:5, ], y[1:5])
  t2 <- test_on_batch(a, x[6:10, ], y[6:10])
  p <- predict_on_batch(a, x)
  expect_equal(t2$loss, mean((p[6:10] - y[6:10])^2), tolerance = 1e-6)
  expect_equal(t1$mae, mean(abs(p[1:5] - y[1:5])), tolerance = 1e-6)
  # The loss alone is a number.
  expect_type(train_on_batch(make(), x, y), "double")
  expect_length(test_on_batch(make(), x, y), 1)
  expect_equal(dim(predict_on_batch(a, x)), c(10L, 1L))
  expect_error(train_on_batch(a, tensor_slices_dataset(x)), class = "mirrored_value_error")
  expect_error(test_on_batch(a, x, y, bogus = 1), class = "mirrored_value_error")
})
