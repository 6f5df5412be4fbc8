# Losses, metrics and layers written in R with op_* (issue 15): traced once
# into graphs the core runs on every replica. Each is checked against the
# built-in it re-implements, trained from the same weights on the same
# batches: the relative difference of weights and logged values < 1e-6,
# on 1 and on 2 CPU replicas.

rel_diff <- function(a, b) {
  a <- unlist(a)
  b <- unlist(b)
  max(abs(a - b)) / max(abs(b))
}

two_cpus <- function() suppressMessages(mirrored_strategy(c("/cpu:0", "/cpu:1")))
one_cpu <- function() suppressMessages(mirrored_strategy("/cpu:0"))

# The vignette's MLP on unscaled MNIST digits (0..255), small slice.
digits <- function(n = 256) {
  m <- dataset_mnist_sample()
  list(x = array_reshape(m$train$x[seq_len(n), , ], c(-1, 784)), y = m$train$y[seq_len(n)])
}

train_pair <- function(strategy, build, loss_a, loss_b, metrics_a = NULL, metrics_b = NULL, x, y,
                       epochs = 2, batch_size = 64, sample_weight = NULL) {
  run <- function(loss, metrics) {
    set_random_seed(11)
    with(strategy$scope(), {
      model <- build()
      model |> compile(optimizer = optimizer_adam(learning_rate = 1e-3), loss = loss, metrics = metrics)
    })
    h <- fit(model, x, y, batch_size = batch_size, epochs = epochs, shuffle = FALSE, verbose = 0,
             sample_weight = sample_weight)
    list(model = model, history = h, weights = get_weights(model))
  }
  list(a = run(loss_a, metrics_a), b = run(loss_b, metrics_b))
}

mlp_logits <- function() {
  inputs <- keras_input(shape = 784)
  outputs <- inputs |> layer_dense(units = 32, activation = "relu") |> layer_dense(units = 10)
  keras_model(inputs, outputs)
}

# Dense(relu) written as a Layer() class with op_matmul.
layer_my_dense <- Layer("MyDense",
  initialize = function(units, ...) {
    super$initialize(...)
    self$units <- units
  },
  build = function(input_shape) {
    self$kernel <- self$add_weight(shape = shape(tail(input_shape, 1), self$units), name = "kernel")
    self$bias <- self$add_weight(shape = shape(self$units), initializer = "zeros", name = "bias")
  },
  call = function(inputs) op_relu(op_matmul(inputs, self$kernel) + self$bias),
  get_config = function() c(super$get_config(), list(units = self$units))
)

stable_sparse_ce <- function(y_true, y_pred) {
  idx <- op_expand_dims(op_cast(y_true, "int32"), -1)
  -op_squeeze(op_take_along_axis(op_log_softmax(y_pred), idx, axis = -1, zero_indexed = TRUE), -1)
}

for (replicas in c(1, 2)) {
  test_that(paste0("a custom sparse cross-entropy from logits equals the built-in one (", replicas, " replica(s))"), {
    d <- digits()
    s <- if (replicas == 1) one_cpu() else two_cpus()
    r <- train_pair(s, mlp_logits, loss_sparse_categorical_crossentropy(from_logits = TRUE), stable_sparse_ce,
                    x = d$x, y = d$y)
    expect_lt(rel_diff(r$b$weights, r$a$weights), 1e-6)
    expect_lt(rel_diff(r$b$history$metrics$loss, r$a$history$metrics$loss), 1e-6)
    # The digits are unscaled: the logits are large, and the stable form stays finite.
    expect_true(all(is.finite(r$b$history$metrics$loss)))
  })

  test_that(paste0("a custom MSE loss and metric equal the built-ins (", replicas, " replica(s))"), {
    set.seed(5)
    x <- matrix(rnorm(96 * 5), 96)
    y <- cbind(x[, 1] - 2 * x[, 2], x[, 3] * x[, 4])
    build <- function() {
      inputs <- keras_input(shape = 5)
      keras_model(inputs, inputs |> layer_dense(units = 8, activation = "tanh") |> layer_dense(units = 2))
    }
    mse <- function(y_true, y_pred) op_mean(op_square(y_pred - y_true), axis = -1)
    mae <- custom_metric("mae2", function(y_true, y_pred) op_mean(op_abs(y_true - y_pred), axis = -1))
    s <- if (replicas == 1) one_cpu() else two_cpus()
    w <- runif(96, 0.5, 2)
    r <- train_pair(s, build, "mse", mse, metrics_a = list(metric_mean_absolute_error()), metrics_b = list(mae),
                    x = x, y = y, batch_size = 20, epochs = 3, sample_weight = w)
    expect_lt(rel_diff(r$b$weights, r$a$weights), 1e-6)
    expect_lt(rel_diff(r$b$history$metrics$loss, r$a$history$metrics$loss), 1e-6)
    expect_lt(rel_diff(r$b$history$metrics$mae2, r$a$history$metrics$mean_absolute_error), 1e-6)
    ev_a <- evaluate(r$a$model, x, y, verbose = 0)
    ev_b <- evaluate(r$b$model, x, y, verbose = 0)
    expect_lt(rel_diff(ev_b[["mae2"]], ev_a[["mean_absolute_error"]]), 1e-6)
  })

  test_that(paste0("a Layer() written with op_matmul trains to layer_dense's weights (", replicas, " replica(s))"), {
    d <- digits(192)
    x <- d$x / 255
    make <- function(custom) function() {
      inputs <- keras_input(shape = 784)
      h <- if (custom) layer_my_dense(inputs, units = 16) else layer_dense(inputs, units = 16, activation = "relu")
      keras_model(inputs, h |> layer_dense(units = 10))
    }
    s <- if (replicas == 1) one_cpu() else two_cpus()
    with(s$scope(), {
      a <- make(FALSE)()
      b <- make(TRUE)()
    })
    set_weights(b, get_weights(a))
    for (m in list(a, b)) {
      m |> compile(optimizer = optimizer_adam(learning_rate = 1e-3),
                   loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
      fit(m, x, d$y, batch_size = 48, epochs = 2, shuffle = FALSE, verbose = 0)
    }
    expect_lt(rel_diff(get_weights(b), get_weights(a)), 1e-6)
    expect_equal(b$layers[[2]]$class_name, "MyDense")
    expect_equal(b$layers[[2]]$config$units, 16)
  })
}

test_that("layer_lambda computes its R function", {
  f <- function(t) op_tanh(t * 2 + 1) - op_square(t) / 3
  inputs <- keras_input(shape = 4)
  model <- keras_model(inputs, inputs |> layer_lambda(f))
  set.seed(2)
  x <- matrix(rnorm(40), 10)
  expect_equal(predict(model, x, verbose = 0), tanh(2 * x + 1) - x^2 / 3, tolerance = 1e-6)
  expect_equal(model$layers[[2]]$class_name, "Lambda")
  # Eager on arrays, the same function gives the same values.
  expect_equal(f(x), tanh(2 * x + 1) - x^2 / 3, tolerance = 1e-6)
})

test_that("custom losses and layers refuse what cannot be traced, naming the line", {
  inputs <- keras_input(shape = 3)
  expect_error(inputs |> layer_lambda(function(t) if (t > 0) t else -t), class = "mirrored_trace_error")
  model <- keras_model(inputs, inputs |> layer_dense(units = 2))
  bad_loss <- function(y_true, y_pred) {
    v <- as.numeric(y_pred)
    op_mean(v)
  }
  expect_error(compile(model, optimizer = "sgd", loss = bad_loss), class = "mirrored_trace_error")
  # A per-sample loss must keep the batch axis first or be a scalar.
  odd <- function(y_true, y_pred) op_mean(y_pred - y_true, axis = 1)
  expect_error(compile(model, optimizer = "sgd", loss = odd), "keep the batch axis first", class = "mirrored_shape_error")
  expect_error(compile(model, optimizer = "sgd", loss = function(a) a), "y_true, y_pred", class = "mirrored_value_error")
  expect_error(Layer("X", call = function(x) x, public = list(3)), "must be named")
  expect_error(Layer("X", 3), class = "mirrored_error")
  expect_error(layer_lambda(inputs, 3), "must be a function")
})

test_that("a Loss() class and a loss function give the same as the loss object in R", {
  loss_scaled <- Loss("ScaledMSE",
    initialize = function(scale = 2, ...) {
      super$initialize(...)
      self$scale <- scale
    },
    call = function(y_true, y_pred) self$scale * op_mean(op_square(y_true - y_pred), axis = -1))
  l <- loss_scaled(scale = 3)
  yt <- matrix(c(0, 1, 2, 3), 2)
  yp <- matrix(c(1, 1, 0, 0), 2)
  expect_equal(l(yt, yp), 3 * mean(rowMeans((yt - yp)^2)), tolerance = 1e-6)
  expect_equal(l$name, "scaled_mse")
})

test_that("a model with custom layers saves to .keras and loads with and without custom_objects", {
  inputs <- keras_input(shape = 4)
  outputs <- inputs |> layer_my_dense(units = 3) |> layer_lambda(function(x) x * 2) |> layer_dense(units = 2)
  model <- keras_model(inputs, outputs)
  model |> compile(optimizer = "adam", loss = "mse")
  set.seed(4)
  x <- matrix(rnorm(40), 10)
  y <- matrix(rnorm(20), 10)
  fit(model, x, y, epochs = 1, verbose = 0)
  p <- predict(model, x, verbose = 0)
  path <- tempfile(fileext = ".keras")
  save_model(model, path)
  dir <- tempfile()
  utils::unzip(path, exdir = dir)
  cfg <- jsonlite::fromJSON(file.path(dir, "config.json"), simplifyVector = FALSE)
  entry <- cfg$config$layers[[2]]
  expect_equal(entry$class_name, "MyDense")
  expect_equal(entry$registered_name, "MyDense")
  expect_null(entry$module)
  expect_equal(entry$config$units, 3)
  expect_equal(cfg$config$layers[[3]]$class_name, "Lambda")
  # Without the class, the saved graph runs; with it, the class is re-created.
  plain <- load_model(path)
  expect_equal(predict(plain, x, verbose = 0), p, tolerance = 1e-6)
  again <- load_model(path, custom_objects = list(MyDense = layer_my_dense))
  expect_equal(predict(again, x, verbose = 0), p, tolerance = 1e-6)
  expect_identical(get_weights(again), get_weights(model))
  fit(again, x, y, epochs = 1, verbose = 0)
  fit(model, x, y, epochs = 1, verbose = 0)
  expect_equal(get_weights(again), get_weights(model), tolerance = 1e-6)
})

test_that("subclassed models with a custom train_step are a classed not-supported error", {
  expect_error(new_model_class("MyModel", train_step = function(data) NULL),
               class = "mirrored_not_supported_error")
  expect_error(Model("MyModel", train_step = function(data) NULL), "train_step")
  doubler <- Model("MyModel", call = function(x) x * 2)
  expect_equal(predict(doubler(), matrix(1:4, 2), verbose = 0), matrix(2 * (1:4), 2))
  expect_error(Model("MyModel", initialize = function(...) NULL), class = "mirrored_value_error",
               regexp = "call")
})

test_that("custom losses follow the targets' shape, keep the optimizer's state and take Keras' rank rule", {
  set.seed(8)
  x <- matrix(rnorm(60), 20)
  mse <- function(y_true, y_pred) op_mean(op_square(y_pred - y_true), axis = -1)
  # A vector of targets against a one-unit output is a column (Keras'
  # squeeze_or_expand_to_same_rank): the same as the built-in MSE.
  y <- rnorm(20)
  fit_one <- function(loss) {
    set_random_seed(3)
    inputs <- keras_input(shape = 3)
    model <- keras_model(inputs, inputs |> layer_dense(units = 1))
    model |> compile(optimizer = optimizer_adam(learning_rate = 0.01), loss = loss)
    fit(model, x, y, batch_size = 5, epochs = 2, shuffle = FALSE, verbose = 0)
    model
  }
  a <- fit_one("mse")
  b <- fit_one(mse)
  expect_lt(rel_diff(get_weights(b), get_weights(a)), 1e-6)
  # Targets of another shape trace the loss again and keep the optimizer's state.
  expect_equal(b$optimizer$iterations, 8)
  ev <- evaluate(b, x, matrix(y, ncol = 1), verbose = 0)
  expect_equal(b$optimizer$iterations, 8)
  expect_equal(ev[["loss"]], evaluate(a, x, y, verbose = 0)[["loss"]], tolerance = 1e-6)
  # Validation targets must have the training targets' shape.
  expect_error(fit(b, x, y, validation_data = list(x, cbind(y, y)), epochs = 1, verbose = 0),
               class = "mirrored_shape_error")
  expect_equal(b$optimizer$iterations, 8)
  # keras3 takes constructors uncalled.
  inputs <- keras_input(shape = 3)
  m <- keras_model(inputs, inputs |> layer_dense(units = 1))
  m |> compile(optimizer = "sgd", loss = loss_mean_squared_error, metrics = list(metric_mean_absolute_error))
  expect_equal(m$loss$name, "mean_squared_error")
})

test_that("a custom layer's weights are ordered trainable first, and a failed build() adds none", {
  fails <- TRUE
  layer_odd <- Layer("Odd",
    build = function(input_shape) {
      self$s <- self$add_weight(shape = shape(2), initializer = "ones", trainable = FALSE, name = "s")
      if (fails) stop("not yet")
      self$k <- self$add_weight(shape = shape(tail(input_shape, 1), 2), name = "k")
    },
    call = function(inputs) op_matmul(inputs, self$k) * self$s)
  layer <- layer_odd()
  inputs <- keras_input(shape = 3)
  expect_error(layer(inputs), "not yet")
  fails <- TRUE
  expect_error(layer(inputs), "not yet")
  fails <- FALSE
  model <- keras_model(inputs, layer(inputs))
  w <- get_weights(model)
  expect_length(w, 2)
  expect_equal(dim(w[[1]]), c(3L, 2L))   # k, trainable, first
  expect_equal(as.numeric(w[[2]]), c(1, 1))  # s
  x <- matrix(1:6, 2)
  expect_equal(predict(model, x, verbose = 0), x %*% w[[1]], tolerance = 1e-6)
})

test_that("models compiled with custom losses and metrics save and load with custom_objects", {
  my_mse <- function(y_true, y_pred) op_mean(op_square(y_pred - y_true), axis = -1)
  mae2 <- custom_metric("mae2", function(y_true, y_pred) op_mean(op_abs(y_true - y_pred), axis = -1))
  inputs <- keras_input(shape = 3)
  model <- keras_model(inputs, inputs |> layer_dense(units = 2))
  model |> compile(optimizer = "adam", loss = my_mse, metrics = list(mae2))
  set.seed(1)
  x <- matrix(rnorm(30), 10)
  y <- matrix(rnorm(20), 10)
  fit(model, x, y, epochs = 1, verbose = 0)
  path <- tempfile(fileext = ".keras")
  save_model(model, path)
  dir <- tempfile()
  utils::unzip(path, exdir = dir)
  cc <- jsonlite::fromJSON(file.path(dir, "config.json"), simplifyVector = FALSE)$compile_config
  expect_equal(cc$loss$class_name, "function")
  expect_equal(cc$loss$config, "my_mse")
  expect_equal(cc$metrics[[1]]$config, "mae2")
  expect_error(load_model(path), "custom_objects", class = "mirrored_io_error")
  again <- load_model(path, custom_objects = list(my_mse = my_mse, mae2 = mae2))
  expect_equal(evaluate(again, x, y, verbose = 0), evaluate(model, x, y, verbose = 0), tolerance = 1e-6)
  expect_equal(again$optimizer$iterations, model$optimizer$iterations)
  plain <- load_model(path, compile = FALSE)
  expect_equal(predict(plain, x, verbose = 0), predict(model, x, verbose = 0), tolerance = 1e-6)
})

test_that("custom layers and losses train under a mixed policy (computed in float32)", {
  config_set_dtype_policy("mixed_bfloat16")
  on.exit(config_set_dtype_policy("float32"))
  layer_tanh_proj <- Layer("TanhProj",
    build = function(input_shape) self$k <- self$add_weight(shape = shape(tail(input_shape, 1), 2)),
    call = function(x) op_tanh(op_matmul(x, self$k)))
  inputs <- keras_input(shape = 3)
  model <- keras_model(inputs, inputs |> layer_tanh_proj() |> layer_dense(units = 1))
  model |> compile(optimizer = "adam", loss = function(y_true, y_pred) op_mean(op_square(y_true - y_pred), axis = -1))
  expect_equal(model$layers[[2]]$config$dtype$config$name, "mixed_bfloat16")
  set.seed(6)
  x <- matrix(rnorm(60), 20)
  h <- fit(model, x, rowSums(x), epochs = 5, verbose = 0)
  expect_true(all(is.finite(h$metrics$loss)))
  expect_lt(h$metrics$loss[5], h$metrics$loss[1])
})
