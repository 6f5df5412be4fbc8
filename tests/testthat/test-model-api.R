test_that("layer_*() compose with tensors, sequential models or nothing", {
  layer <- layer_dense(units = 4, name = "lonely")
  expect_s3_class(layer, "mirrored_layer")
  expect_equal(layer$name, "lonely")
  inputs <- keras_input(shape = c(2, 3))
  flat <- layer_flatten(inputs)
  expect_equal(dim(flat), c(NA, 6L))
  out <- flat |> layer_dense(units = 5, activation = "gelu") |> layer_activation("tanh") |>
    layer_dropout(rate = 0.5)
  expect_equal(dim(out), c(NA, 5L))
  model <- keras_model(inputs, out)
  expect_s3_class(model, "mirrored_model")
  expect_equal(vapply(model$layers, function(l) l$class_name, ""),
               c("InputLayer", "Flatten", "Dense", "Activation", "Dropout"))
  seq_model <- keras_model_sequential(input_shape = 6)
  res <- layer_dense(seq_model, units = 2)
  expect_identical(res, seq_model)
  expect_length(seq_model$layers, 1)
})

test_that("layers are named in data-flow order, as Keras does", {
  inputs <- keras_input(shape = 3)
  outputs <- inputs |> layer_dense(units = 4) |> layer_dense(units = 2)
  model <- keras_model(inputs, outputs)
  names <- vapply(model$layers, function(l) l$name, "")
  first <- as.integer(sub("^dense_?", "", names[2]) |> (\(s) if (s == "") 0 else s)())
  second <- as.integer(sub("^dense_?", "", names[3]) |> (\(s) if (s == "") 0 else s)())
  expect_equal(second, first + 1)
})

test_that("summary() prints Keras' table with parameter counts", {
  model <- keras_model_sequential(input_shape = 784, name = "mlp") |>
    layer_dense(units = 256, activation = "relu") |>
    layer_dense(units = 256, activation = "relu") |>
    layer_dense(units = 10)
  out <- capture.output(summary(model))
  expect_equal(out[1], "Model: \"mlp\"")
  expect_true(any(grepl("(None, 256)", out, fixed = TRUE)))
  expect_true(any(grepl("200,960", out, fixed = TRUE)))
  expect_true(any(grepl("65,792", out, fixed = TRUE)))
  expect_true(any(grepl("2,570", out, fixed = TRUE)))
  expect_true(any(grepl("Total params: 269,322 (1.03 MB)", out, fixed = TRUE)))
  expect_false(any(grepl("InputLayer", out)))  # Keras' Sequential summary leaves it out
})

test_that("a sequential model without input shape is built from the data", {
  set_random_seed(2)
  model <- keras_model_sequential() |> layer_dense(units = 3, activation = "relu") |> layer_dense(units = 2)
  expect_match(capture.output(print(model))[1], "unbuilt")
  model |> compile(optimizer = "sgd", loss = "mse", metrics = "mae")
  x <- matrix(runif(30), 10)
  h <- fit(model, x, matrix(runif(20), 10), epochs = 2, verbose = 0)
  expect_equal(model$input_shape, 3L)
  expect_named(h$metrics, c("loss", "mae"))  # named after the string, as Keras 3
  # Adding a layer later keeps the trained weights of the existing ones.
  w <- get_weights(model)
  model |> layer_dense(units = 1)
  expect_equal(get_weights(model)[1:4], w)
})

test_that("losses and metrics compute Keras' values in R", {
  y_pred <- rbind(c(2, 1, 0.1), c(0.5, 2.5, 0.3))
  expect_equal(loss_sparse_categorical_crossentropy(c(0, 1), y_pred, from_logits = TRUE),
               mean(c(log(sum(exp(y_pred[1, ]))) - 2, log(sum(exp(y_pred[2, ]))) - 2.5)))
  p <- rbind(c(0.7, 0.2, 0.1), c(0.1, 0.8, 0.1))
  expect_equal(loss_categorical_crossentropy(rbind(c(1, 0, 0), c(0, 1, 0)), p, reduction = "none"),
               -log(c(0.7, 0.8)))
  expect_equal(loss_binary_crossentropy(matrix(c(1, 0)), matrix(c(0.9, 0.2))),
               mean(-c(log(0.9), log(0.8))), tolerance = 1e-6)
  expect_equal(loss_mean_squared_error(matrix(1:4, 2), matrix(c(1, 2, 3, 6), 2), reduction = "none"), c(0, 2))
  expect_equal(metric_sparse_categorical_accuracy(c(0, 2), p), c(1, 0))
  expect_equal(metric_binary_accuracy(matrix(c(1, 0, 1)), matrix(c(0.6, 0.4, 0.2))), c(1, 1, 0))
  expect_equal(metric_mean_absolute_error(matrix(c(1, 2), 1), matrix(c(0, 4), 1)), 1.5)
})

test_that("the C++ loss matches the R loss for every loss and output activation", {
  set_random_seed(9)
  x <- matrix(rnorm(60), 20)
  for (case in list(
    list(loss = loss_sparse_categorical_crossentropy(from_logits = TRUE), act = "linear", y = rep(0:3, 5)),
    list(loss = loss_sparse_categorical_crossentropy(), act = "softmax", y = rep(0:3, 5)),
    list(loss = loss_categorical_crossentropy(), act = "softmax", y = diag(4)[rep(1:4, 5), ]),
    list(loss = loss_categorical_crossentropy(from_logits = TRUE), act = "linear", y = diag(4)[rep(1:4, 5), ]),
    list(loss = loss_binary_crossentropy(), act = "sigmoid", y = matrix(rbinom(80, 1, 0.5), 20)),
    list(loss = loss_binary_crossentropy(from_logits = TRUE), act = "linear", y = matrix(rbinom(80, 1, 0.5), 20)),
    list(loss = loss_mean_squared_error(), act = "tanh", y = matrix(runif(80), 20)))) {
    model <- keras_model_sequential(input_shape = 3) |> layer_dense(units = 4, activation = case$act)
    model |> compile(optimizer = "sgd", loss = case$loss)
    p <- predict(model, x, verbose = 0)
    r <- mean(mirrored:::loss_per_sample(case$loss, case$y, p))
    expect_equal(evaluate(model, x, case$y, verbose = 0)$loss, r, tolerance = 1e-5, info = case$loss$name)
  }
})

test_that("callbacks see 1-based epochs and batches, and early stopping stops fit()", {
  set_random_seed(4)
  x <- matrix(runif(200), 100)
  y <- as.integer(x[, 1] > 0.5)
  model <- keras_model_sequential(input_shape = 2) |> layer_dense(units = 2)
  model |> compile(optimizer = optimizer_sgd(0), loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
  seen <- list(epochs = integer(), batches = integer())
  cb <- callback_lambda(
    on_epoch_end = function(epoch, logs) seen$epochs <<- c(seen$epochs, epoch),
    on_train_batch_end = function(batch, logs) seen$batches <<- c(seen$batches, batch))
  stop <- callback_early_stopping(monitor = "loss", patience = 1)
  h <- fit(model, x, y, batch_size = 25, epochs = 10, callbacks = list(cb, stop), verbose = 0)
  # Learning rate 0: the loss never improves, so training stops after epoch 2.
  expect_equal(seen$epochs, 1:2)
  expect_equal(seen$batches, rep(1:4, 2))
  expect_length(h$metrics$loss, 2)
})

test_that("reduce_lr_on_plateau changes the core's learning rate", {
  set_random_seed(8)
  x <- matrix(runif(40), 20)
  y <- matrix(runif(20))
  model <- keras_model_sequential(input_shape = 2) |> layer_dense(units = 1)
  model |> compile(optimizer = optimizer_sgd(0.1), loss = "mse")
  # min_delta = 10: the loss never "improves", so after epoch 2 the rate drops to 0.
  cb <- callback_reduce_lr_on_plateau(monitor = "loss", patience = 1, factor = 0, min_delta = 10)
  w3 <- NULL
  grab <- callback_lambda(on_epoch_begin = function(epoch, logs) if (epoch == 3) w3 <<- get_weights(model))
  h <- fit(model, x, y, epochs = 3, callbacks = list(cb, grab), verbose = 0)
  expect_equal(model$optimizer$learning_rate, 0)
  # Keras logs the rate in use during the epoch, then reduces it.
  expect_equal(h$metrics$learning_rate, c(0.1, 0.1, 0), tolerance = 1e-7)
  expect_equal(get_weights(model), w3)  # the rate of 0 reached the C++ optimizer
  model$optimizer$learning_rate <- 0.5
  fit(model, x, y, epochs = 1, verbose = 0)
  expect_false(isTRUE(all.equal(get_weights(model), w3)))
})

test_that("verbose = 2 prints Keras' epoch lines", {
  x <- matrix(runif(40), 20)
  model <- keras_model_sequential(input_shape = 2) |> layer_dense(units = 1)
  model |> compile(optimizer = "sgd", loss = "mse", metrics = "mae")
  out <- capture.output(fit(model, x, matrix(runif(20)), epochs = 2, batch_size = 8,
                            validation_data = list(x, matrix(runif(20))), verbose = 2))
  expect_equal(out[1], "Epoch 1/2")
  expect_match(out[2], "^3/3 - \\d+s - \\d+(us|ms|s)/step - loss: [0-9.e+-]+ - mae: [0-9.e+-]+ - val_loss: [0-9.e+-]+ - val_mae: [0-9.e+-]+$")
  expect_equal(out[3], "Epoch 2/2")
  ev <- capture.output(res <- evaluate(model, x, matrix(runif(20)), verbose = 2))
  expect_match(ev, "^1/1 - \\d+s - \\d+(us|ms|s)/step - loss: ")
})

test_that("array_reshape() is row-major like NumPy", {
  x <- array(1:24, c(2, 3, 4))
  r <- array_reshape(x, c(2, 12))
  expect_equal(r[1, ], as.vector(t(x[1, , ])))
  expect_equal(array_reshape(x, c(-1, 12)), r)
  expect_equal(array_reshape(r, c(2, 3, 4)), x)
  expect_equal(as.vector(array_reshape(x, c(24), order = "F")), as.vector(x))
  expect_type(array_reshape(x, c(4, 6)), "integer")
  expect_error(array_reshape(x, c(5, -1)), class = "mirrored_value_error")
})
