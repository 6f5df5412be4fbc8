# Layers and models as objects (R/layer-eager.R): layer$build(),
# get_weights(layer) / set_weights(layer), eager layer(array) and
# model(array), layers and models piped onto a sequential model, and the
# fine-tuning idiom model(x, training = FALSE).

dense_ref <- function(x, w) sweep(x %*% w[[1]], 2, w[[2]], "+")

config_text <- function(path) {
  d <- tempfile()
  utils::unzip(path, "config.json", exdir = d)
  paste(readLines(file.path(d, "config.json"), warn = FALSE), collapse = "\n")
}

test_that("layer$build() makes the weights, and a model built later starts from them", {
  l <- layer_dense(units = 3)
  expect_false(l$built)
  l$build(shape(NULL, 4))
  expect_true(l$built)
  w <- get_weights(l)
  expect_equal(dim(w[[1]]), c(4L, 3L))
  expect_length(w[[2]], 3)
  set_weights(l, list(matrix(1:12 / 10, 4), c(1, 2, 3)))
  expect_equal(as.numeric(get_weights(l)[[2]]), c(1, 2, 3))
  input <- keras_input(4)
  model <- keras_model(input, l(input))
  expect_equal(get_weights(model), get_weights(l))
  l$build(c(NA, 4))  # built already for these shapes: nothing changes
  expect_equal(as.numeric(get_weights(l)[[2]]), c(1, 2, 3))
  expect_error(layer_dense(units = 2)$build(c(4)), class = "mirrored_value_error", regexp = "batch axis first")
})

test_that("eager layer(array) and model(array) compute what the weights say, after training too", {
  set.seed(2)
  x <- matrix(runif(12), 3, 4)
  l <- layer_dense(units = 2)
  y <- l(x)
  expect_equal(y, dense_ref(x, get_weights(l)), tolerance = 1e-6)
  input <- keras_input(4)
  model <- keras_model(input, l(input) |> layer_dense(1))
  compile(model, optimizer = optimizer_sgd(0.1), loss = "mse")
  before <- get_weights(l)
  fit(model, x, matrix(1, 3, 1), epochs = 3, verbose = 0)
  after <- get_weights(l)
  expect_false(isTRUE(all.equal(after, before)))
  # the eager call reads the weights the model trained (Keras shares them)
  expect_equal(l(x), dense_ref(x, after), tolerance = 1e-6)
  expect_equal(model(x), predict(model, x, verbose = 0))
  expect_error(l(x, training = TRUE), class = "mirrored_not_yet_error")
  expect_error(l(x, foo = 1), class = "mirrored_value_error", regexp = "foo")
  expect_error(l(x, training = "no"), class = "mirrored_value_error", regexp = "training")
})

test_that("layers and models piped onto a sequential model are added to it", {
  s <- keras_model_sequential(input_shape = 4)
  d <- layer_dense(units = 3)
  s |> d()
  head <- keras_model_sequential(input_shape = 3) |> layer_dense(1)
  s |> head()
  expect_length(s$layers, 2)
  expect_equal(dim(predict(s, matrix(0, 2, 4), verbose = 0)), c(2L, 1L))
})

test_that("model(x, training = FALSE) runs the nested model in inference mode in every step", {
  set.seed(4)
  x <- matrix(rnorm(40), 10)
  y <- matrix(rnorm(10))
  base <- keras_model_sequential(input_shape = 4) |> layer_dense(3) |> layer_batch_normalization() |>
    layer_dropout(0.9)
  input <- keras_input(4)
  tuned <- keras_model(input, base(input, training = FALSE) |> layer_dense(1))
  compile(tuned, optimizer = optimizer_sgd(0.05), loss = "mse")
  bn_before <- get_weights(base)[3:6]
  h <- fit(tuned, x, y, batch_size = 10, epochs = 3, shuffle = FALSE, verbose = 0)
  # BatchNormalization keeps its moving statistics (inference mode), while
  # the dense weights and BN's gamma / beta train
  bn_after <- get_weights(base)[3:6]
  expect_equal(bn_after[3:4], bn_before[3:4])
  expect_false(isTRUE(all.equal(get_weights(base)[[1]], get_weights(base)[[1]] * 0)))
  # Dropout is off: the training loss of each step equals the loss of the
  # weights before it, evaluated in inference mode, and is deterministic
  expect_equal(predict(tuned, x, verbose = 0), predict(tuned, x, verbose = 0))
  w0 <- get_weights(tuned)
  l0 <- evaluate(tuned, x, y, verbose = 0)$loss
  h1 <- fit(tuned, x, y, batch_size = 10, epochs = 1, shuffle = FALSE, verbose = 0)
  expect_equal(h1$metrics$loss, l0, tolerance = 1e-6)
  # saved and loaded with keras3's kwargs, the flag holds
  path <- tempfile(fileext = ".keras")
  save_model(tuned, path)
  expect_match(config_text(path), '"training": ?false')
  back <- load_model(path)
  expect_equal(predict(back, x, verbose = 0), predict(tuned, x, verbose = 0), tolerance = 1e-6)
  expect_error(base(input, training = TRUE), class = "mirrored_not_yet_error")
})
