test_that("the vignette's MLP reaches 0.95 test accuracy on real MNIST in 8 epochs", {
  d <- mnist_scaled()
  set_random_seed(3)
  model <- mlp()
  model |> compile(optimizer = optimizer_adam(), metrics = list(metric_sparse_categorical_accuracy()),
                   loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
  history <- model |> fit(d$x_train, d$y_train, batch_size = 64, epochs = 8, verbose = 0)
  expect_s3_class(history, "keras_training_history")
  expect_equal(history$params$epochs, 8)
  expect_equal(history$params$steps, 157)
  expect_length(history$metrics$loss, 8)
  expect_lt(history$metrics$loss[8], history$metrics$loss[1])
  result <- model |> evaluate(d$x_test, d$y_test, batch_size = 64, verbose = 0)
  expect_named(result, c("loss", "sparse_categorical_accuracy"))
  expect_gte(result$sparse_categorical_accuracy, 0.95)
  # evaluate()'s accuracy is the share of argmax(predict()) equal to the label.
  p <- predict(model, d$x_test, batch_size = 256, verbose = 0)
  expect_equal(dim(p), c(10000L, 10L))
  expect_equal(mean(max.col(p, ties.method = "first") - 1 == d$y_test),
               result$sparse_categorical_accuracy, tolerance = 1e-12)
})

test_that("predict() equals a plain-R forward pass from get_weights()", {
  d <- mnist_scaled()
  set_random_seed(3)
  inputs <- keras_input(shape = 784)
  outputs <- inputs |> layer_dense(units = 64, activation = "tanh") |>
    layer_dense(units = 32, activation = "relu") |> layer_dense(units = 10, activation = "softmax")
  model <- keras_model(inputs, outputs)
  x <- d$x_test[1:300, ]
  w <- get_weights(model)
  expect_equal(lapply(w, dim), list(c(784L, 64L), 64L, c(64L, 32L), 32L, c(32L, 10L), 10L))
  ref <- r_forward(w, x, c("tanh", "relu", "softmax"))
  expect_equal(predict(model, x, verbose = 0), ref, tolerance = 1e-5)
  # set_weights() round-trips and changes predictions accordingly.
  w[[6]][] <- c(5, rep(0, 9))
  set_weights(model, w)
  expect_equal(get_weights(model)[[6]], w[[6]], tolerance = 0)
  expect_equal(predict(model, x, verbose = 0), r_forward(w, x, c("tanh", "relu", "softmax")),
               tolerance = 1e-5)
})

test_that("one training step equals a plain-R step with Keras' Adam", {
  d <- mnist_scaled()
  set_random_seed(7)
  model <- mlp(units = 32)
  opt <- optimizer_adam(learning_rate = 0.01)
  model |> compile(optimizer = opt, loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
  w0 <- get_weights(model)
  x <- d$x_train[1:50, ]
  y <- d$y_train[1:50]
  model |> fit(x, y, batch_size = 50, epochs = 1, shuffle = FALSE, verbose = 0)
  expect_equal(model$optimizer$iterations, 1)
  # Reference: forward, softmax cross-entropy gradient / batch size, backward.
  h_pre <- sweep(x %*% w0[[1]], 2, w0[[2]], "+")
  h <- pmax(h_pre, 0)
  z <- sweep(h %*% w0[[3]], 2, w0[[4]], "+")
  p <- exp(z - apply(z, 1, max))
  p <- p / rowSums(p)
  onehot <- outer(y, 0:9, "==") * 1
  dz <- (p - onehot) / nrow(x)
  dh <- (dz %*% t(w0[[3]])) * (h_pre > 0)
  grads <- list(t(x) %*% dh, colSums(dh), t(h) %*% dz, colSums(dz))
  lr <- 0.01; b1 <- 0.9; b2 <- 0.999; eps <- 1e-7
  alpha <- lr * sqrt(1 - b2) / (1 - b1)
  expected <- Map(function(w, g) {
    m <- (1 - b1) * g
    v <- (1 - b2) * g^2
    w - alpha * m / (sqrt(v) + eps)
  }, w0, grads)
  got <- get_weights(model)
  for (k in seq_along(got)) expect_equal(as.vector(got[[k]]), as.vector(expected[[k]]), tolerance = 1e-5)
  # The reported loss is the mean cross-entropy before the update.
  ce <- mean(-log(p[cbind(seq_along(y), y + 1)]))
  expect_equal(model$history$metrics$loss, ce, tolerance = 1e-5)
})

test_that("SGD with momentum and RMSprop take Keras' steps", {
  x <- matrix(c(1, 2, -1, 0.5), nrow = 2)
  y <- matrix(c(0.5, -1), nrow = 2)
  for (case in list(
    list(opt = optimizer_sgd(learning_rate = 0.1, momentum = 0.9, nesterov = TRUE),
         step = function(w, g) { m <- -0.1 * g; w + 0.9 * m - 0.1 * g }),
    list(opt = optimizer_rmsprop(learning_rate = 0.01),
         step = function(w, g) w - 0.01 * g / sqrt(0.1 * g^2 + 1e-7)),
    list(opt = optimizer_adam_w(learning_rate = 0.01, weight_decay = 0.1),
         step = function(w, g) {
           w <- w - w * 0.1 * 0.01
           w - 0.01 * sqrt(1 - 0.999) / (1 - 0.9) * (0.1 * g) / (sqrt(0.001 * g^2) + 1e-7)
         }))) {
    model <- keras_model_sequential(input_shape = 2) |>
      layer_dense(units = 1, kernel_initializer = initializer_random_normal(stddev = 1, seed = 1),
                  bias_initializer = "ones")
    model |> compile(optimizer = case$opt, loss = "mean_squared_error")
    w0 <- get_weights(model)
    model |> fit(x, y, batch_size = 2, epochs = 1, shuffle = FALSE, verbose = 0)
    pred <- x %*% w0[[1]] + as.vector(w0[[2]])
    dpred <- 2 * (pred - y) / 2
    g <- list(t(x) %*% dpred, sum(dpred))
    expected <- Map(case$step, w0, g)
    got <- get_weights(model)
    expect_equal(as.vector(got[[1]]), as.vector(expected[[1]]), tolerance = 1e-5)
    expect_equal(as.vector(got[[2]]), as.vector(expected[[2]]), tolerance = 1e-5)
  }
})

test_that("validation_split holds out the last samples and logs val_ metrics", {
  d <- mnist_scaled()
  set_random_seed(11)
  model <- mlp(units = 16)
  model |> compile(optimizer = "adam", loss = "sparse_categorical_crossentropy", metrics = "accuracy")
  h <- model |> fit(d$x_train[1:1000, ], d$y_train[1:1000], epochs = 2, validation_split = 0.25,
                    verbose = 0)
  expect_named(h$metrics, c("loss", "accuracy", "val_loss", "val_accuracy"))
  expect_equal(h$params$steps, ceiling(750 / 32))
  val <- model |> evaluate(d$x_train[751:1000, ], d$y_train[751:1000], verbose = 0)
  expect_equal(h$metrics$val_loss[2], val$loss, tolerance = 1e-6)
  expect_equal(h$metrics$val_accuracy[2], val$accuracy, tolerance = 1e-12)
})

test_that("training is reproducible under set_random_seed()", {
  d <- mnist_scaled()
  run <- function() {
    set_random_seed(5)
    inputs <- keras_input(shape = 784)
    outputs <- inputs |> layer_dense(units = 16, activation = "relu") |> layer_dropout(0.3) |>
      layer_dense(units = 10)
    model <- keras_model(inputs, outputs)
    model |> compile(optimizer = "adam", loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
    model |> fit(d$x_train[1:500, ], d$y_train[1:500], epochs = 2, verbose = 0)
    get_weights(model)
  }
  expect_identical(run(), run())
})

test_that("R's thread keeps gradual underflow: the core computes with flush-to-zero elsewhere", {
  tiny <- .Machine$double.xmin
  expect_gt(tiny / 4, 0)
  model <- keras_model_sequential(input_shape = 3) |> layer_dense(units = 2)
  model |> compile(optimizer = "adam", loss = "mse")
  fit(model, matrix(runif(30), 10), matrix(runif(20), 10), epochs = 1, verbose = 0)
  predict(model, matrix(runif(30), 10), verbose = 0)
  # With FTZ/DAZ left on for this thread, subnormal results would read as 0.
  expect_gt(tiny / 4, 0)
  expect_equal(tiny / 4 * 4, tiny)
})
