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
