# model$weights / layer$weights as variable objects (R/variables.R).

test_that("variables name, shape and flag the weights, read live values and assign them", {
  inputs <- keras_input(shape = 3)
  outputs <- inputs |> layer_dense(2, name = "d") |> layer_batch_normalization(name = "bn")
  model <- keras_model(inputs, outputs)
  v <- model$weights
  expect_length(v, 6)
  expect_equal(vapply(v, function(x) x$path, ""),
               c("d/kernel", "d/bias", "bn/gamma", "bn/beta", "bn/moving_mean", "bn/moving_variance"))
  expect_equal(v[[1]]$shape, c(3L, 2L))
  expect_equal(dim(v[[1]]), c(3L, 2L))
  expect_equal(vapply(v, function(x) x$trainable, TRUE), c(TRUE, TRUE, TRUE, TRUE, FALSE, FALSE))
  expect_length(model$trainable_weights, 4)
  expect_length(model$non_trainable_weights, 2)
  expect_equal(v[[1]]$numpy(), get_weights(model)[[1]])
  # live: after training the same object reads the new values
  model |> compile(optimizer = "sgd", loss = "mse")
  before <- v[[1]]$numpy()
  fit(model, matrix(rnorm(30), 10), matrix(rnorm(20), 10), epochs = 1, verbose = 0)
  expect_false(isTRUE(all.equal(v[[1]]$numpy(), before)))
  expect_equal(as.array(v[[1]]), get_weights(model)[[1]])
  # assign, arithmetic
  v[[2]]$assign(c(1, 2))
  expect_equal(as.numeric(get_weights(model)[[2]]), c(1, 2))
  expect_equal(as.numeric(v[[2]] * 2), c(2, 4))
  v[[2]]$assign_add(1)
  expect_equal(as.numeric(v[[2]]$value), c(2, 3))
  expect_error(v[[2]]$assign(1:3), class = "mirrored_value_error", regexp = "2 numbers")
  # a layer's variables, and print
  d <- get_layer(model, "d")
  expect_equal(vapply(d$weights, function(x) x$name, ""), c("kernel", "bias"))
  expect_output(print(d$weights[[1]]), "path=d/kernel, shape=shape\\(3, 2\\)")
  freeze_weights(d)
  expect_length(d$trainable_weights, 0)
  expect_length(d$non_trainable_weights, 2)
})
