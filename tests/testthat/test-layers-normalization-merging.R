# layer_batch_normalization() and layer_add() through the R API: the core's
# registry answers shapes, weights and configs; Keras' own files load;
# synchronized batch normalization over replicas.

bn_add_model <- function(synchronized = FALSE) {
  inp <- keras_input(shape = 4)
  h <- inp |> layer_dense(6) |> layer_batch_normalization(momentum = 0.8, synchronized = synchronized) |>
    layer_activation("relu")
  skip <- inp |> layer_dense(6, use_bias = FALSE)
  keras_model(inp, layer_add(list(h, skip)) |> layer_dense(3))
}

bn_data <- function() {
  set.seed(5)
  x <- matrix(rnorm(23 * 4), 23)
  list(x = x, y = as.integer(x[, 1] > 0) + as.integer(x[, 2] > 0.5))
}

test_that("the registry gives shapes, weights in Keras order and summary counts", {
  set_random_seed(1)
  m <- bn_add_model()
  expect_equal(vapply(m$layers, function(l) l$class_name, ""),
               c("InputLayer", "Dense", "BatchNormalization", "Activation", "Dense", "Add", "Dense"))
  w <- get_weights(m)
  # dense (kernel, bias), batch_normalization (gamma, beta, moving_mean, moving_variance), ...
  expect_equal(lengths(w), c(24, 6, 6, 6, 6, 6, 24, 18, 3))
  expect_equal(as.vector(w[[3]]), rep(1, 6))
  expect_equal(as.vector(w[[6]]), rep(1, 6))
  out <- capture.output(summary(m))
  expect_true(any(grepl("Trainable params: 87 ", out, fixed = TRUE)))
  expect_true(any(grepl("Non-trainable params: 12 ", out, fixed = TRUE)))
  cfg <- m$layers[[3]]$config
  expect_identical(cfg$momentum, 0.8)
  expect_identical(cfg$synchronized, FALSE)
  expect_identical(cfg$axis, -1L)
})

test_that("bad arguments are classed errors naming the argument", {
  x <- keras_input(shape = 4)
  expect_error(layer_batch_normalization(x, momentum = 2), class = "mirrored_value_error", regexp = "momentum")
  expect_error(layer_batch_normalization(x, epsilon = 0), class = "mirrored_value_error", regexp = "epsilon")
  expect_error(layer_batch_normalization(x, beta_regularizer = "l5"), class = "mirrored_value_error",
               regexp = "beta_regularizer")
  expect_error(layer_batch_normalization(x, renorm = TRUE), class = "mirrored_value_error", regexp = "renorm")
  expect_error(layer_batch_normalization(keras_input(shape = c(3, 4)), axis = 1L), class = "mirrored_shape_error",
               regexp = "last axis")
  expect_error(layer_add(list(x, keras_input(shape = 3))), class = "mirrored_shape_error", regexp = "one shape")
  expect_error(layer_add(list(x)), class = "mirrored_value_error", regexp = "at least 2")
  expect_error(layer_add(list(x, 1)), class = "mirrored_value_error", regexp = "symbolic tensor")
  expect_s3_class(layer_add(), "mirrored_layer")
  expect_equal(dim(layer_add(x, x |> layer_dense(4))), c(NA, 4L))
})

test_that("a BatchNormalization model trained by Keras loads and predicts the same", {
  fx <- test_path("fixtures", "keras")
  m <- load_model(file.path(fx, "functional_bn.keras"))
  x <- as.matrix(utils::read.csv(file.path(fx, "functional_bn_x.csv"), header = FALSE))
  want <- as.matrix(utils::read.csv(file.path(fx, "functional_bn_y.csv"), header = FALSE))
  expect_equal(unname(predict(m, x, verbose = 0)), unname(want), tolerance = 1e-5)
  # Keras trained it: its moving statistics moved away from their initial values.
  w <- get_weights(m)
  expect_false(isTRUE(all.equal(as.vector(w[[5]]), rep(0, 6))))
  # Saved again by mirrored, it loads with the same weights, config and predictions.
  path <- tempfile(fileext = ".keras")
  save_model(m, path)
  m2 <- load_model(path)
  expect_identical(get_weights(m2), w)
  expect_identical(get_config(m2), get_config(m))
  expect_equal(predict(m2, x, verbose = 0), predict(m, x, verbose = 0))
})

test_that("training updates the moving statistics and a reload continues exactly", {
  d <- bn_data()
  set_random_seed(2)
  a <- bn_add_model()
  compile(a, optimizer = optimizer_adam(0.01), loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
  fit(a, d$x, d$y, batch_size = 8, epochs = 2, verbose = 0)
  w <- get_weights(a)
  expect_false(isTRUE(all.equal(as.vector(w[[5]]), rep(0, 6))))
  path <- tempfile(fileext = ".keras")
  save_model(a, path)
  b <- load_model(path)
  expect_identical(get_weights(b), w)
  set_random_seed(3)
  fit(a, d$x, d$y, batch_size = 8, epochs = 1, verbose = 0, shuffle = FALSE)
  fit(b, d$x, d$y, batch_size = 8, epochs = 1, verbose = 0, shuffle = FALSE)
  expect_identical(get_weights(b), get_weights(a))
})

train_on <- function(devices, synchronized) {
  d <- bn_data()
  strategy <- suppressMessages(mirrored_strategy(devices))
  set_random_seed(4)
  with(strategy$scope(), {
    model <- bn_add_model(synchronized)
    compile(model, optimizer = optimizer_sgd(0.05), loss = loss_sparse_categorical_crossentropy(from_logits = TRUE))
  })
  fit(model, d$x, d$y, batch_size = 10, epochs = 3, verbose = 0, shuffle = FALSE)
  model
}

rel_diff <- function(w, ref) {
  sqrt(sum(unlist(Map(function(a, b) sum((a - b)^2), w, ref))) / sum(unlist(lapply(ref, function(a) sum(a^2)))))
}

test_that("synchronized batch normalization gives the same weights on 1, 2 and 4 replicas", {
  one <- get_weights(train_on("/cpu:0", TRUE))
  for (n in c(2, 4)) {  # batches of 10, 10, 3: with 4 replicas the last leaves one empty
    m <- train_on(paste0("/cpu:", seq_len(n) - 1), TRUE)
    w <- get_weights(m)
    expect_lt(rel_diff(w, one), 1e-5)
    for (k in seq_len(n - 1)) expect_identical(mirrored:::replica_weights(m, k), w)
  }
})

test_that("per-replica batch normalization keeps replicas identical and differs from one device", {
  one <- get_weights(train_on("/cpu:0", FALSE))
  m <- train_on(c("/cpu:0", "/cpu:1"), FALSE)
  w <- get_weights(m)
  expect_identical(mirrored:::replica_weights(m, 1), w)
  # Each replica normalizes its own slice: not the single-device numbers.
  expect_gt(rel_diff(w, one), 1e-4)
})
