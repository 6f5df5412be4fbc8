# Layers called inside a custom Layer()'s call() (R/layers-traced-sublayers.R):
# values, gradients and saving against plain R.

two_dense <- function(units = 4, activation = NULL) {
  Layer("TwoDense",
    initialize = function(...) {
      super$initialize(...)
      self$first <- layer_dense(units = units, activation = activation)
      self$second <- layer_dense(units = 1)
    },
    call = function(inputs) self$second(self$first(inputs)))
}

test_that("sub-layers' weights join the custom layer's, in Keras' order, and compute as plain R", {
  layer_two <- two_dense(4, "tanh")
  inputs <- keras_input(shape = 3)
  model <- keras_model(inputs, layer_two(inputs))
  w <- get_weights(model)
  expect_equal(lapply(w, function(a) as.integer(dim(a))), list(c(3L, 4L), 4L, c(4L, 1L), 1L))
  expect_equal(count_params(model), 3 * 4 + 4 + 4 + 1)
  x <- matrix(rnorm(15), 5, 3)
  h <- tanh(x %*% w[[1]] + rep(w[[2]], each = 5))
  expect_equal(predict(model, x, verbose = 0), h %*% w[[3]] + as.numeric(w[[4]]), tolerance = 1e-6)
})

test_that("a sub-layer called twice shares its weights", {
  layer_shared <- Layer("Shared",
    initialize = function(...) {
      super$initialize(...)
      self$proj <- layer_dense(units = 2, use_bias = FALSE)
    },
    call = function(inputs) self$proj(inputs) + self$proj(inputs * 3))
  inputs <- keras_input(shape = 2)
  model <- keras_model(inputs, layer_shared(inputs))
  w <- get_weights(model)
  expect_length(w, 1)
  x <- matrix(c(1, 2, -1, 0.5), 2)
  expect_equal(predict(model, x, verbose = 0), 4 * x %*% w[[1]], tolerance = 1e-6)
})

test_that("one SGD step moves the sub-layers' weights by the hand-computed gradient", {
  layer_two <- two_dense(3)
  inputs <- keras_input(shape = 2)
  model <- keras_model(inputs, layer_two(inputs))
  model |> compile(optimizer = optimizer_sgd(learning_rate = 0.1), loss = "mse")
  w <- get_weights(model)
  x <- matrix(c(0.5, -1, 2, 0.1, 0.3, -0.7, 1.2, 0.4), 4, 2)
  y <- matrix(c(1, -1, 0.5, 2), 4, 1)
  fit(model, x, y, batch_size = 4, epochs = 1, shuffle = FALSE, verbose = 0)
  h <- x %*% w[[1]] + rep(w[[2]], each = 4)
  out <- h %*% w[[3]] + as.numeric(w[[4]])
  dy <- 2 * (out - y) / 4
  dh <- dy %*% t(w[[3]])
  want <- list(w[[1]] - 0.1 * t(x) %*% dh, w[[2]] - 0.1 * colSums(dh),
               w[[3]] - 0.1 * t(h) %*% dy, w[[4]] - 0.1 * sum(dy))
  got <- get_weights(model)
  for (i in seq_along(want)) expect_equal(as.numeric(got[[i]]), as.numeric(want[[i]]), tolerance = 1e-5)
})

test_that("a custom layer calling another custom layer, Activation and Flatten", {
  layer_scale <- Layer("Scale",
    build = function(input_shape) {
      self$s <- self$add_weight(shape = shape(tail(input_shape, 1)), initializer = "ones", name = "s")
    },
    call = function(x) x * self$s)
  layer_outer <- Layer("Outer",
    initialize = function(...) {
      super$initialize(...)
      self$scale <- layer_scale()
      self$act <- layer_activation(activation = "relu")
      self$flat <- layer_flatten()
    },
    call = function(x) self$flat(self$act(self$scale(x))))
  inputs <- keras_input(shape = c(2, 3))
  model <- keras_model(inputs, layer_outer(inputs))
  expect_equal(get_weights(model), list(array(1, 3)), ignore_attr = TRUE)
  set_weights(model, list(c(2, -1, 0.5)))
  x <- array(rnorm(2 * 2 * 3), c(2, 2, 3))
  want <- t(apply(x, 1, function(s) as.vector(t(pmax(sweep(s, 2, c(2, -1, 0.5), "*"), 0)))))
  expect_equal(predict(model, x, verbose = 0), want, tolerance = 1e-6)
})

test_that("a model with sub-layers trains, saves and loads with the same numbers", {
  withr::local_dir(withr::local_tempdir())
  layer_two <- two_dense(4, "relu")
  inputs <- keras_input(shape = 3)
  model <- keras_model(inputs, layer_two(inputs))
  model |> compile(optimizer = "adam", loss = "mse")
  x <- matrix(rnorm(60), 20, 3)
  y <- x %*% c(1, -2, 0.5)
  h <- fit(model, x, y, epochs = 5, verbose = 0)
  expect_lt(h$metrics$loss[5], h$metrics$loss[1])
  save_model(model, "sub.keras")
  back <- load_model("sub.keras", custom_objects = list(TwoDense = layer_two))
  expect_equal(predict(back, x, verbose = 0), predict(model, x, verbose = 0), tolerance = 1e-6)
  # without the class, the saved graph runs as it is
  bare <- load_model("sub.keras")
  expect_equal(predict(bare, x, verbose = 0), predict(model, x, verbose = 0), tolerance = 1e-6)
})

test_that("a frozen sub-layer's weights are not trainable", {
  layer_frozen <- Layer("Frozen",
    initialize = function(...) {
      super$initialize(...)
      self$fixed <- layer_dense(units = 2, trainable = FALSE)
      self$head <- layer_dense(units = 1)
    },
    call = function(x) self$head(self$fixed(x)))
  inputs <- keras_input(shape = 3)
  model <- keras_model(inputs, layer_frozen(inputs))
  out <- capture.output(summary(model))
  expect_true(any(grepl("Trainable params: 3 ", out, fixed = TRUE)))
  expect_true(any(grepl("Non-trainable params: 8 ", out, fixed = TRUE)))
})

# x * w, then Dropout(0.5), passing call()'s training on as Keras code does.
scaled_dropout <- function() {
  Layer("ScaledDropout",
    initialize = function(...) {
      super$initialize(...)
      self$drop <- layer_dropout(rate = 0.5, seed = 3)
    },
    build = function(input_shape) {
      self$w <- self$add_weight(shape = shape(tail(input_shape, 1)), initializer = "ones", name = "w")
    },
    call = function(x, training = NULL) self$drop(x * self$w, training = training))
}

test_that("a Dropout sub-layer drops in training steps only, with the same mask forward and backward", {
  inputs <- keras_input(shape = 4)
  model <- keras_model(inputs, scaled_dropout()(inputs))
  model |> compile(optimizer = optimizer_sgd(learning_rate = 0.1), loss = "mse")
  n <- 100
  x <- matrix(1, n, 4)
  y <- matrix(0, n, 4)
  # inference: the identity (x * w = 1 everywhere, loss 1)
  expect_equal(predict(model, x, verbose = 0), x)
  expect_equal(evaluate(model, x, y, verbose = 0)[["loss"]], 1, tolerance = 1e-6)
  # training: each value 0 or 2, so the loss is 4 x the kept fraction
  loss <- train_on_batch(model, x, y)
  kept <- loss * n  # kept values of 4n: loss = 4 * kept / (4n)
  expect_equal(kept, round(kept), tolerance = 1e-4)
  expect_gt(kept / (4 * n), 0.35)
  expect_lt(kept / (4 * n), 0.65)
  # d loss / d w_j = sum over kept values of 2 * 2 * 2 / (4n): the backward
  # pass used the forward's mask, so the weights moved by 0.1 * 8 * kept / (4n)
  w <- as.numeric(get_weights(model)[[1]])
  expect_equal(sum(1 - w), 0.1 * 8 * kept / (4 * n), tolerance = 1e-5)
  expect_true(all(w < 1))
})

test_that("a Dropout sub-layer's masks do not depend on the number of replicas", {
  run <- function(strategy) {
    build <- function() {
      inputs <- keras_input(shape = 4)
      m <- keras_model(inputs, scaled_dropout()(inputs) |> layer_dense(1, kernel_initializer = "ones"))
      m |> compile(optimizer = optimizer_sgd(learning_rate = 0.05), loss = "mse")
      m
    }
    m <- if (is.null(strategy)) build() else with(strategy$scope(), build())
    x <- matrix(seq(0.1, 4, length.out = 48), 12, 4)
    fit(m, x, rowSums(x), batch_size = 12, epochs = 3, shuffle = FALSE, verbose = 0)
    get_weights(m)
  }
  one <- run(NULL)
  two <- run(mirrored_strategy(devices = c("/cpu:0", "/cpu:1")))
  for (i in seq_along(one)) expect_equal(two[[i]], one[[i]], tolerance = 1e-6)
  # and dropout happened: without it all 4 scale weights would move alike
  expect_gt(diff(range(one[[1]])), 1e-3)
})

test_that("layers not written into a traced call() yet are a not-yet error naming them", {
  layer_norm <- Layer("Norm",
    initialize = function(...) {
      super$initialize(...)
      self$norm <- layer_batch_normalization()
    },
    call = function(x) self$norm(x))
  inputs <- keras_input(shape = 3)
  expect_error(layer_norm(inputs), class = "mirrored_not_yet_error", regexp = "BatchNormalization")
  inner <- keras_model(inputs, layer_dense(inputs, 2))
  layer_model <- Layer("CallsModel",
    initialize = function(...) {
      super$initialize(...)
      self$inner <- inner
    },
    call = function(x) self$inner(x))
  expect_error(layer_model(keras_input(shape = 3)), class = "mirrored_not_yet_error",
               regexp = "cannot be called inside a traced call")
  dense <- layer_dense(units = 1)
  model <- keras_model(inputs, layer_dense(inputs, 1))
  expect_error(model |> compile(optimizer = "sgd",
                                loss = function(y_true, y_pred) op_mean(dense(y_pred) - y_true)),
               class = "mirrored_not_yet_error", regexp = "outside a custom layer")
})

# The subclassing guide's ActivityRegularizationLayer.
layer_activity_regularization_guide <- Layer("ActivityRegularizationLayer",
  initialize = function(rate = 1e-2) {
    self$rate <- rate
    super$initialize()
  },
  call = function(inputs) {
    self$add_loss(self$rate * op_mean(inputs))
    inputs
  })

test_that("self$add_loss() adds its term to the loss and its gradient, as plain R computes them", {
  build <- function() {
    inputs <- keras_input(shape = 3)
    outputs <- inputs |> layer_dense(2, kernel_initializer = "ones") |> layer_activity_regularization_guide(0.5)
    m <- keras_model(inputs, outputs)
    m |> compile(optimizer = optimizer_sgd(learning_rate = 0.1), loss = "mse")
    m
  }
  x <- matrix(c(0.5, -1, 2, 0.1, 0.3, -0.7, 1.2, 0.4, 0.2, 1, -0.3, 0.8, 0.6, -0.2, 1.5), 5, 3)
  y <- matrix(c(1, -1, 0.5, 2, 0, 0.3, 0.1, -0.4, 1, 0.2), 5, 2)
  m <- build()
  w <- get_weights(m)
  h <- x %*% w[[1]] + rep(w[[2]], each = 5)
  want_loss <- mean((h - y)^2) + 0.5 * mean(h)
  expect_equal(evaluate(m, x, y, batch_size = 5, verbose = 0)[["loss"]], want_loss, tolerance = 1e-6)
  # one SGD step on the batch: d/dh of mse + 0.5 mean(h)
  dh <- 2 * (h - y) / length(h) + 0.5 / length(h)
  fit(m, x, y, batch_size = 5, epochs = 1, shuffle = FALSE, verbose = 0)
  got <- get_weights(m)
  expect_equal(got[[1]], w[[1]] - 0.1 * t(x) %*% dh, tolerance = 1e-5, ignore_attr = TRUE)
  expect_equal(as.numeric(got[[2]]), as.numeric(w[[2]] - 0.1 * colSums(dh)), tolerance = 1e-5)
  # 5 rows on 2 replicas (3 + 2): the same step
  two <- with(mirrored_strategy(devices = c("/cpu:0", "/cpu:1"))$scope(), build())
  set_weights(two, w)
  fit(two, x, y, batch_size = 5, epochs = 1, shuffle = FALSE, verbose = 0)
  for (i in 1:2) expect_equal(get_weights(two)[[i]], got[[i]], tolerance = 1e-6)
  # saved and loaded without the class: the term is in the saved graph
  withr::local_dir(withr::local_tempdir())
  save_model(m, "reg.keras")
  back <- load_model("reg.keras")
  expect_equal(evaluate(back, x, y, verbose = 0)[["loss"]], evaluate(m, x, y, verbose = 0)[["loss"]],
               tolerance = 1e-6)
})

test_that("self$add_loss() under loss scaling (mixed_float16) is a clear error, not an unscaled gradient", {
  config_set_dtype_policy("mixed_float16")
  withr::defer(config_set_dtype_policy("float32"))
  inputs <- keras_input(shape = 3)
  m <- keras_model(inputs, inputs |> layer_dense(2) |> layer_activity_regularization_guide(0.5))
  expect_error(m |> compile(optimizer = "sgd", loss = "mse"), class = "mirrored_value_error",
               regexp = "add_loss")
})

test_that("self$add_loss() of a batched tensor or of an R value is a clear error", {
  layer_batched <- Layer("BatchedLoss",
    call = function(x) {
      self$add_loss(op_square(x))
      x
    })
  expect_error(layer_batched(keras_input(shape = 3)), class = "mirrored_shape_error",
               regexp = "reduce the batch axis")
  layer_const <- Layer("ConstLoss",
    call = function(x) {
      self$add_loss(0.1)
      x
    })
  expect_error(layer_const(keras_input(shape = 3)), class = "mirrored_not_yet_error", regexp = "add_loss")
})

test_that("a LayerNormalization sub-layer normalizes the last axis as Keras does", {
  layer_block <- Layer("NormBlock",
    initialize = function(...) {
      super$initialize(...)
      self$norm <- layer_layer_normalization(epsilon = 1e-3)
      self$rms <- layer_layer_normalization(rms_scaling = TRUE)
    },
    call = function(x) self$rms(self$norm(x) * 2 + 1))
  inputs <- keras_input(shape = c(3, 4))
  model <- keras_model(inputs, layer_block(inputs))
  w <- get_weights(model)
  expect_equal(lengths(w), c(4L, 4L, 4L))  # gamma, beta; then the rms layer's gamma
  set_weights(model, list(c(1, 2, 0.5, -1), c(0, 0.1, 0.2, 0.3), c(2, 1, 1, 0.5)))
  x <- array(rnorm(2 * 3 * 4), c(2, 3, 4))
  ln <- function(v, g, b) (v - mean(v)) / sqrt(mean((v - mean(v))^2) + 1e-3) * g + b
  rmsn <- function(v, g) v / sqrt(mean((v - mean(v))^2) + 1e-3) * g
  want <- x
  for (i in 1:2) for (t in 1:3) {
    h <- ln(x[i, t, ], c(1, 2, 0.5, -1), c(0, 0.1, 0.2, 0.3)) * 2 + 1
    want[i, t, ] <- rmsn(h, c(2, 1, 1, 0.5))
  }
  expect_equal(predict(model, x, verbose = 0), want, tolerance = 1e-5)
  # the same as the built-in layers in a functional model
  ref_in <- keras_input(shape = c(3, 4))
  ref_out <- ref_in |> layer_layer_normalization(epsilon = 1e-3) |> layer_lambda(function(v) v * 2 + 1) |>
    layer_layer_normalization(rms_scaling = TRUE)
  ref <- keras_model(ref_in, ref_out)
  set_weights(ref, get_weights(model))
  expect_equal(predict(ref, x, verbose = 0), predict(model, x, verbose = 0), tolerance = 1e-5)
})

# keras3's text examples' TokenAndPositionEmbedding: two Embeddings, the
# positions from op_arange() (an R array inside the traced call()).
layer_token_and_position <- Layer("TokenAndPositionEmbedding",
  initialize = function(maxlen, vocab_size, embed_dim, ...) {
    super$initialize(...)
    self$maxlen <- maxlen
    self$token_emb <- layer_embedding(input_dim = vocab_size, output_dim = embed_dim)
    self$pos_emb <- layer_embedding(input_dim = maxlen, output_dim = embed_dim)
  },
  call = function(x) {
    positions <- op_arange(0, self$maxlen - 1)  # keras3 1.5: the end is included
    self$token_emb(x) + self$pos_emb(positions)
  })

test_that("Embedding sub-layers look up rows of their tables, also on R arrays, and train them", {
  inputs <- keras_input(shape = 4, dtype = "int32")
  model <- keras_model(inputs, layer_token_and_position(inputs, maxlen = 4, vocab_size = 6, embed_dim = 3))
  w <- get_weights(model)
  expect_equal(lapply(w, dim), list(c(6L, 3L), c(4L, 3L)))
  ids <- matrix(c(0L, 5L, 2L, 2L, 1L, 0L, 3L, 4L), 2, 4, byrow = TRUE)
  want <- array(0, c(2, 4, 3))
  for (b in 1:2) for (t in 1:4) want[b, t, ] <- w[[1]][ids[b, t] + 1, ] + w[[2]][t, ]
  expect_equal(predict(model, ids, verbose = 0), want, tolerance = 1e-6)
  # one SGD step on mean(y): every looked-up row moves by lr * its count / (2 * 4 * 3)
  model |> compile(optimizer = optimizer_sgd(learning_rate = 1), loss = function(y_true, y_pred) op_mean(y_pred))
  fit(model, ids, array(0, c(2, 4, 3)), batch_size = 2, epochs = 1, shuffle = FALSE, verbose = 0)
  got <- get_weights(model)
  counts <- tabulate(as.vector(ids) + 1L, 6)
  expect_equal(got[[1]], w[[1]] - counts / 24, tolerance = 1e-6, ignore_attr = TRUE)
  expect_equal(got[[2]], w[[2]] - 2 / 24, tolerance = 1e-6, ignore_attr = TRUE)
  # an id out of the table is an error, not a read out of bounds
  expect_error(predict(model, matrix(c(0L, 6L, 0L, 0L), 1), verbose = 0), class = "mirrored_error", regexp = "6")
})

test_that("compute_output_shape(): built-in layers answer it, and a class's own must match its call()", {
  d <- layer_dense(units = 3)
  expect_equal(as.integer(d$compute_output_shape(shape(NA, 5))), c(NA, 3L))
  expect_equal(as.integer(layer_flatten()$compute_output_shape(shape(NULL, 2, 4))), c(NA, 8L))
  layer_ok <- Layer("Doubling",
    call = function(x) op_concatenate(list(x, x), axis = -1),
    compute_output_shape = function(input_shape) shape(NA, 2 * tail(as.integer(input_shape), 1)))
  inputs <- keras_input(shape = 3)
  expect_equal(as.integer(shape(layer_ok(inputs))), c(NA, 6L))
  layer_wrong <- Layer("Wrong",
    call = function(x) x,
    compute_output_shape = function(input_shape) shape(NA, 7))
  expect_error(layer_wrong(keras_input(shape = 3)), class = "mirrored_shape_error",
               regexp = "compute_output_shape")
})
