# Freezing (layer$trainable, freeze_weights()) and the model-structure API.
# Training numbers are checked against Keras 3 (tools/make-keras-fixtures-freeze.py):
# an MLP and a convnet with frozen Dense/Conv2D layers and a frozen
# BatchNormalization, trained 8 Adam steps in Keras from the same weights.

freeze_fixture <- function(name) {
  fx <- test_path("fixtures", "keras")
  f <- function(suffix) file.path(fx, paste0("freeze_", name, suffix))
  x <- as.matrix(utils::read.csv(f("_x.csv"), header = FALSE))
  shape <- scan(f("_xshape.txt"), quiet = TRUE)
  if (length(shape) > 1) x <- array_reshape(x, c(nrow(x), shape))
  y <- unname(as.matrix(utils::read.csv(f("_y.csv"), header = FALSE)))
  list(init = f("_init.keras"), trained = f("_trained.keras"), x = unname(x), y = y)
}

# Frozen layer names in the fixtures, and the learning rates they used.
fixture_frozen <- list(mlp = c("d1", "bn", "d3"), cnn = c("bn1", "c2"))
fixture_lr <- c(mlp = 0.01, cnn = 0.005)

train_fixture <- function(name, strategy = NULL) {
  f <- freeze_fixture(name)
  build <- function() {
    m <- load_model(f$init, compile = FALSE)
    compile(m, optimizer = optimizer_adam(learning_rate = fixture_lr[[name]]), loss = "mse")
    m
  }
  m <- if (is.null(strategy)) build() else with(strategy$scope(), build())
  before <- get_weights(m)
  fit(m, f$x, f$y, epochs = 2, batch_size = 8, shuffle = FALSE, verbose = 0)
  list(model = m, before = before, after = get_weights(m), f = f)
}

test_that("layers keep Keras' trainable flag from the file and in their config", {
  f <- freeze_fixture("mlp")
  m <- load_model(f$init, compile = FALSE)
  flags <- vapply(m$layers, function(l) l$trainable, logical(1))
  names(flags) <- vapply(m$layers, function(l) l$name, "")
  expect_identical(flags[c("d1", "bn", "d2", "d3", "head")],
                   c(d1 = FALSE, bn = FALSE, d2 = TRUE, d3 = FALSE, head = TRUE))
  expect_false(get_layer(m, "d1")$config$trainable)
})

for (name in c("mlp", "cnn")) {
  test_that(paste("a frozen", name, "trains as Keras 3 and its frozen weights do not move"), {
    r <- train_fixture(name)
    want <- get_weights(load_model(r$f$trained, compile = FALSE))
    expect_equal(length(r$after), length(want))
    for (k in seq_along(want)) expect_equal(r$after[[k]], want[[k]], tolerance = 1e-5)
    # Frozen layers (and the frozen BatchNormalization's moving statistics)
    # are bit-identical; every other layer moved.
    for (l in r$model$layers) {
      idx <- layer_weight_index(r$model, layer_object(l))$index
      if (!length(idx)) next
      if (l$name %in% fixture_frozen[[name]]) {
        expect_identical(r$after[idx], r$before[idx], label = l$name)
      } else {
        expect_false(identical(r$after[idx[1]], r$before[idx[1]]), label = l$name)
      }
    }
  })
}

# The MLP: its only BatchNormalization is frozen (inference mode), so the
# batch split changes nothing but the order of float sums. (A training-mode
# BatchNormalization normalizes each replica's rows by their own statistics,
# as Keras' MirroredStrategy does: the convnet's bn2 would differ.)
test_that("1 and 2 replicas give the same weights, frozen ones bit-identical", {
  one <- train_fixture("mlp")
  two <- train_fixture("mlp", mirrored_strategy(devices = c("/cpu:0", "/cpu:1")))
  for (k in seq_along(one$after)) expect_equal(two$after[[k]], one$after[[k]], tolerance = 1e-6)
  for (l in c("d1", "bn", "d3")) {
    idx <- layer_weight_index(two$model, layer_object(get_layer(two$model, l)))$index
    expect_identical(two$after[idx], one$before[idx])
    expect_identical(replica_weights(two$model, 1)[idx], one$before[idx])
  }
})

test_that("trainable takes effect at the next compile(), as in Keras", {
  set_random_seed(1)
  x <- matrix(rnorm(40), 10)
  y <- matrix(rnorm(20), 10)
  model <- keras_model_sequential(input_shape = 4) |>
    layer_dense(units = 3, name = "a") |>
    layer_dense(units = 2, name = "b")
  compile(model, optimizer = optimizer_sgd(learning_rate = 0.1), loss = "mse")
  a <- get_layer(model, "a")
  a$trainable <- FALSE
  w0 <- a$get_weights()
  fit(model, x, y, epochs = 1, batch_size = 5, verbose = 0)
  expect_false(identical(a$get_weights(), w0))  # compiled while trainable
  compile(model, optimizer = optimizer_sgd(learning_rate = 0.1), loss = "mse")
  w1 <- a$get_weights()
  b1 <- get_layer(model, "b")$get_weights()
  fit(model, x, y, epochs = 1, batch_size = 5, verbose = 0)
  expect_identical(a$get_weights(), w1)
  expect_false(identical(get_layer(model, "b")$get_weights(), b1))
})

test_that("frozen weights take SGD's exact step on the others (hand-computed)", {
  model <- keras_model_sequential(input_shape = 2) |>
    layer_dense(units = 1, use_bias = FALSE, name = "a", trainable = FALSE) |>
    layer_dense(units = 1, use_bias = FALSE, name = "b")
  set_weights(model, list(matrix(c(1, 2), 2), matrix(3, 1)))
  compile(model, optimizer = optimizer_sgd(learning_rate = 0.5), loss = "mse")
  x <- matrix(c(1, 1), 1)
  fit(model, x, matrix(0, 1), epochs = 1, batch_size = 1, verbose = 0)
  # pred = 3 * (1 + 2) = 9; dL/db = 2 * 9 * 3 = 54; b = 3 - 0.5 * 54.
  expect_equal(get_weights(model), list(matrix(c(1, 2), 2), matrix(3 - 27, 1)))
})

test_that("freeze_weights() and unfreeze_weights() follow keras3's from/to/which", {
  model <- keras_model_sequential(input_shape = 4) |>
    layer_dense(units = 3, name = "l1") |>
    layer_dense(units = 3, name = "l2") |>
    layer_dense(units = 3, name = "l3") |>
    layer_dense(units = 2, name = "l4")
  flags <- function() vapply(model$layers, function(l) l$trainable, logical(1))
  freeze_weights(model)
  expect_identical(flags(), rep(FALSE, 4))
  expect_false(model$trainable)
  unfreeze_weights(model)
  expect_identical(flags(), rep(TRUE, 4))
  freeze_weights(model, from = "l2", to = 3)
  expect_identical(flags(), c(TRUE, FALSE, FALSE, TRUE))
  expect_true(model$trainable)
  freeze_weights(model, to = "l2")
  expect_identical(flags(), c(FALSE, FALSE, TRUE, TRUE))
  freeze_weights(model, from = -1)
  expect_identical(flags(), c(TRUE, TRUE, TRUE, FALSE))
  unfreeze_weights(model, from = 2, to = 2)
  expect_identical(flags(), c(FALSE, TRUE, FALSE, FALSE))
  freeze_weights(model, which = c("l1", "l4"))
  expect_identical(flags(), c(FALSE, TRUE, TRUE, FALSE))
  freeze_weights(model, which = ~ .x$name == "l3")
  expect_identical(flags(), c(TRUE, TRUE, FALSE, TRUE))
  unfreeze_weights(model, which = c(TRUE, FALSE, FALSE, FALSE))
  expect_identical(flags(), c(TRUE, FALSE, FALSE, FALSE))
  freeze_weights(model, which = get_layer(model, "l2"))
  expect_identical(flags(), c(TRUE, FALSE, TRUE, TRUE))
  expect_error(freeze_weights(model, from = "nope"), class = "mirrored_value_error")
  expect_error(freeze_weights(model, from = 9), class = "mirrored_value_error")
  expect_error(freeze_weights(model, which = 1, from = 1), class = "mirrored_value_error")
  expect_error(freeze_weights(model, which = c(TRUE, FALSE)), class = "mirrored_value_error")
  expect_error(freeze_weights(42), class = "mirrored_value_error")
  l1 <- get_layer(model, "l1")
  expect_error(l1$trainable <- NA, class = "mirrored_value_error")
  expect_error(layer_dense(units = 2, trainable = "no"), class = "mirrored_value_error")
})

test_that("model$trainable and nested models set every layer below", {
  inner <- keras_model_sequential(input_shape = 3, name = "inner") |>
    layer_dense(units = 4, name = "i1") |>
    layer_dense(units = 4, name = "i2")
  x <- keras_input(shape = 3)
  outer <- keras_model(x, layer_dense(inner(x), units = 1, name = "o"))
  inner$trainable <- FALSE
  expect_false(get_layer(inner, "i1")$trainable)
  expect_identical(model_frozen_nodes(outer), c(FALSE, TRUE, TRUE, FALSE))
  outer$trainable <- TRUE
  expect_true(get_layer(inner, "i2")$trainable)
  expect_length(outer$trainable_weights, 6)
  freeze_weights(outer, which = "inner")
  expect_length(outer$trainable_weights, 2)
  expect_length(outer$non_trainable_weights, 4)
  # A model made untrainable: nothing in it trains (Keras' trainable_weights).
  m <- keras_model_sequential(input_shape = 2, trainable = FALSE) |> layer_dense(units = 1)
  expect_false(m$trainable)
  expect_length(m$trainable_weights, 0)
  expect_identical(model_frozen_nodes(m), c(TRUE, TRUE))
})

test_that("summary() splits trainable and non-trainable params as Keras", {
  model <- keras_model_sequential(input_shape = 4) |>
    layer_dense(units = 3, name = "a", trainable = FALSE) |>
    layer_batch_normalization(name = "bn") |>
    layer_dense(units = 2, name = "b")
  out <- capture.output(summary(model))
  # a: 15 frozen; bn: 6 trainable + 6 moving; b: 8 trainable.
  expect_true(any(grepl("Total params: 35 ", out, fixed = TRUE)))
  expect_true(any(grepl("Trainable params: 14 ", out, fixed = TRUE)))
  expect_true(any(grepl("Non-trainable params: 21 ", out, fixed = TRUE)))
  expect_identical(count_params(model), 35)
  expect_identical(count_params(get_layer(model, "bn")), 12)
})

test_that("get_layer(), layer weights and set_weights() read and write the model", {
  model <- keras_model_sequential(input_shape = 3) |>
    layer_dense(units = 2, name = "h") |>
    layer_batch_normalization(name = "bn") |>
    layer_dense(units = 1, name = "out")
  expect_identical(get_layer(model, index = 2)$name, "bn")
  expect_identical(get_layer(model, index = -1)$name, "out")
  expect_error(get_layer(model, "zz"), class = "mirrored_value_error")
  expect_error(get_layer(model, index = 4), class = "mirrored_value_error")
  expect_error(get_layer(model), class = "mirrored_value_error")
  h <- get_layer(model, "h")
  w <- get_weights(model)
  expect_identical(h$get_weights(), w[1:2])
  expect_identical(lapply(h$weights, function(v) v$numpy()), w[1:2])
  expect_equal(vapply(h$weights, function(v) v$path, ""), c("h/kernel", "h/bias"))
  expect_identical(dim(h$get_weights()[[1]]), c(3L, 2L))  # in_dim x units
  bn <- get_layer(model, "bn")
  expect_length(bn$trainable_weights, 2)
  expect_length(bn$non_trainable_weights, 2)
  bn$trainable <- FALSE
  expect_length(bn$trainable_weights, 0)
  expect_length(bn$non_trainable_weights, 4)
  h$set_weights(list(matrix(1:6, 3), c(0.5, -0.5)))
  expect_identical(get_weights(model)[[1]], matrix(as.double(1:6), 3))
  expect_identical(predict(model, matrix(0, 1, 3), verbose = 0),
                   predict(model, matrix(0, 1, 3), verbose = 0))
  expect_error(h$set_weights(list(matrix(1, 2, 2), 1:2)), class = "mirrored_shape_error")
  expect_error(h$set_weights(list(1)), class = "mirrored_value_error")
  # Weights change in training: the layer shows the model's current ones.
  compile(model, optimizer = "sgd", loss = "mse")
  fit(model, matrix(rnorm(12), 4), matrix(rnorm(4), 4), epochs = 1, verbose = 0)
  expect_identical(h$get_weights(), get_weights(model)[1:2])
})

test_that("model$inputs and a layer's $output build a feature extractor", {
  x <- keras_input(shape = 4, name = "x")
  h <- x |> layer_dense(units = 3, activation = "relu", name = "feat")
  model <- keras_model(x, layer_dense(h, units = 2, name = "out"))
  expect_length(model$inputs, 1)
  expect_identical(model$outputs[[1]]$shape, 2L)
  ext <- keras_model(model$inputs, get_layer(model, "feat")$output)
  set_weights(ext, get_weights(model)[1:2])
  xx <- matrix(seq(-1, 1, length.out = 8), 2)
  w <- get_weights(model)
  ref <- pmax(xx %*% w[[1]] + matrix(w[[2]], 2, 3, byrow = TRUE), 0)
  expect_equal(predict(ext, xx, verbose = 0), ref, tolerance = 1e-6)
  seq_model <- keras_model_sequential(input_shape = 4) |>
    layer_dense(units = 3, name = "s1") |>
    layer_dense(units = 1, name = "s2")
  ext2 <- keras_model(seq_model$input, get_layer(seq_model, "s1")$output)
  expect_identical(ext2$output_shape, 3L)
})

test_that("clone_model() copies the structure with fresh weights", {
  set_random_seed(3)
  model <- keras_model_sequential(input_shape = 3) |>
    layer_dense(units = 4, name = "c1", trainable = FALSE) |>
    layer_dense(units = 1, name = "c2")
  twin <- clone_model(model)
  expect_identical(vapply(twin$layers, function(l) l$name, ""), c("c1", "c2"))
  expect_false(twin$layers[[1]]$trainable)
  expect_false(identical(get_weights(twin)[[1]], get_weights(model)[[1]]))
  expect_identical(lapply(get_weights(twin), dim), lapply(get_weights(model), dim))
  expect_false(identical(layer_object(twin$layers[[1]]), layer_object(model$layers[[1]])))
  expect_error(clone_model(model, foo = 1), class = "mirrored_value_error")
})

test_that("a frozen model saves Keras' trainable flags and only trainable optimizer slots", {
  r <- train_fixture("mlp")
  path <- tempfile(fileext = ".keras")
  save_model(r$model, path)
  back <- load_model(path)
  expect_identical(vapply(back$layers, function(l) l$trainable, logical(1)),
                   vapply(r$model$layers, function(l) l$trainable, logical(1)))
  expect_identical(get_weights(back), r$after)
  # Keras' own file for the same model has the same optimizer variables: it
  # loads into ours with the optimizer state (no mismatch warning).
  expect_no_warning(k <- load_model(r$f$trained))
  expect_identical(k$optimizer$iterations, 8)
  # Training on from both continues the same way.
  fit(back, r$f$x, r$f$y, epochs = 1, batch_size = 8, shuffle = FALSE, verbose = 0)
  fit(r$model, r$f$x, r$f$y, epochs = 1, batch_size = 8, shuffle = FALSE, verbose = 0)
  expect_identical(get_weights(back), get_weights(r$model))
})

test_that("a model saved with trainable = FALSE loads with its flag, and which = formula works", {
  model <- keras_model_sequential(input_shape = 3) |>
    layer_dense(2, name = "a") |> layer_dense(1, name = "b")
  model$trainable <- FALSE
  path <- tempfile(fileext = ".keras")
  on.exit(unlink(path))
  save_model(model, path)
  back <- load_model(path)
  expect_false(back$trainable)
  # A one-sided formula sees each layer as .x (and as .).
  unfreeze_weights(model)
  freeze_weights(model, which = ~ .$name == "b")
  expect_identical(vapply(model$layers, function(l) l$trainable, logical(1)), c(TRUE, FALSE))
  expect_error(freeze_weights(model, which = y ~ x), class = "mirrored_value_error")
})

test_that("model$layers[[i]]$trainable <- FALSE works as R users write it", {
  model <- keras_model_sequential(input_shape = 3) |>
    layer_dense(2, name = "a") |> layer_dense(1, name = "b")
  model$layers[[1]]$trainable <- FALSE
  expect_false(get_layer(model, "a")$trainable)
  expect_true(get_layer(model, "b")$trainable)
  f <- keras_model(model$inputs, model$outputs)
  f$layers[[3]]$trainable <- FALSE
  expect_false(get_layer(f, "b")$trainable)
  expect_error(model$layers <- list(), class = "mirrored_value_error")
  expect_error(model$layers <- rev(model$layers), class = "mirrored_value_error")
})
