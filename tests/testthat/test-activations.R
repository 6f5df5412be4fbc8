# activation_*() on R arrays against plain-R formulas (the core's CPU op
# computes them, in float32); on symbolic tensors; as values of `activation`;
# the parametrised activation layers' arguments and configs.

test_that("activation_*() on arrays match plain-R formulas and keep dim", {
  x <- array(seq(-7.5, 7.5, length.out = 24), c(2, 3, 4))
  sig <- function(v) 1 / (1 + exp(-v))
  sp <- function(v) pmax(v, 0) + log1p(exp(-abs(v)))
  hs <- function(v) pmin(pmax(v + 3, 0), 6) / 6
  a <- 1.6732632423543772848170429916717
  s <- 1.0507009873554804934193349852946
  cases <- list(
    list(activation_relu(x), pmax(x, 0)),
    list(activation_relu(x, negative_slope = 0.1, max_value = 5, threshold = 1),
         ifelse(x < 1, 0.1 * (x - 1), pmin(x, 5))),
    list(activation_elu(x), ifelse(x > 0, x, expm1(x))),
    list(activation_elu(x, alpha = 0.5), ifelse(x > 0, x, 0.5 * expm1(x))),
    list(activation_selu(x), s * ifelse(x > 0, x, a * expm1(x))),
    list(activation_silu(x), x * sig(x)),
    list(activation_leaky_relu(x), ifelse(x >= 0, x, 0.2 * x)),
    list(activation_leaky_relu(x, negative_slope = 0.01), ifelse(x >= 0, x, 0.01 * x)),
    list(activation_relu6(x), pmin(pmax(x, 0), 6)),
    list(activation_softplus(x), sp(x)),
    list(activation_softsign(x), x / (1 + abs(x))),
    list(activation_hard_sigmoid(x), hs(x)),
    list(activation_hard_silu(x), x * hs(x)),
    list(activation_hard_swish(x), x * hs(x)),
    list(activation_exponential(x), exp(x)),
    list(activation_mish(x), x * tanh(sp(x))),
    list(activation_sigmoid(x), sig(x)),
    list(activation_tanh(x), tanh(x)),
    list(activation_gelu(x), x * pnorm(x)),
    list(activation_linear(x), x))
  for (cs in cases) {
    expect_equal(dim(cs[[1]]), dim(x))
    expect_equal(cs[[1]], cs[[2]], tolerance = 1e-6)
  }
  # Row-wise over the last axis.
  lse <- apply(x, 1:2, function(v) max(v) + log(sum(exp(v - max(v)))))
  ls <- sweep(x, 1:2, lse)
  expect_equal(activation_log_softmax(x), ls, tolerance = 1e-6)
  expect_equal(activation_softmax(x), exp(ls), tolerance = 1e-6)
  expect_equal(activation_softmax(c(1, 2, 3)), exp(1:3) / sum(exp(1:3)), tolerance = 1e-6)
  # Large |x|: finite where the function is.
  big <- c(-100, -50, 50, 100)
  expect_equal(activation_softplus(big), c(0, 0, 50, 100), tolerance = 1e-6)
  expect_equal(activation_mish(big), c(0, 0, 50, 100), tolerance = 1e-6)
  expect_equal(activation_elu(big), c(-1, -1, 50, 100), tolerance = 1e-6)
  expect_true(all(is.finite(activation_log_softmax(matrix(c(1000, 0, -1000, 999), 1)))))
  m <- matrix(1:6, 2, dimnames = list(c("a", "b"), NULL))
  expect_identical(dimnames(activation_relu(m)), dimnames(m))
})

test_that("activation_*() on symbolic tensors add layers, and work as `activation` values", {
  x <- keras_input(shape = 4)
  y <- activation_silu(x)
  expect_identical(y$node$layer$class_name, "Activation")
  expect_identical(y$node$layer$config$activation, "silu")
  expect_identical(activation_relu(x, max_value = 6)$node$layer$class_name, "ReLU")
  expect_identical(activation_leaky_relu(x, negative_slope = 0.1)$node$layer$class_name, "LeakyReLU")
  expect_identical(activation_leaky_relu(x)$node$layer$config$activation, "leaky_relu")
  expect_identical(activation_elu(x, alpha = 2)$node$layer$config$alpha, 2)
  d <- layer_dense(units = 3, activation = activation_hard_swish)
  expect_identical(d$config$activation, "hard_silu")
  expect_identical(layer_dense(units = 3, activation = "swish")$config$activation, "silu")
  expect_identical(layer_activation(activation = activation_mish)$config$activation, "mish")
  expect_error(layer_conv_1d(filters = 3, kernel_size = 2, activation = function(x) x),
               class = "mirrored_not_yet_error", regexp = "R function as the activation of this layer")
  expect_error(layer_dense(units = 3, activation = "swishy"), class = "mirrored_value_error", regexp = "activation")
  expect_error(activation_softmax(matrix(1:4, 2), axis = 1), class = "mirrored_not_yet_error", regexp = "axis")
  expect_error(activation_gelu(1, approximate = TRUE), class = "mirrored_not_yet_error", regexp = "approximate")
  expect_error(activation_relu("a"), class = "mirrored_value_error", regexp = "x")
  expect_error(activation_relu(1, negative_slope = -1), class = "mirrored_value_error", regexp = "negative_slope")
})

test_that("parametrised activation layers check arguments and write Keras configs", {
  x <- keras_input(shape = c(2, 5))
  r <- layer_activation_relu(max_value = 6, negative_slope = 0.1, threshold = 0.5)
  expect_identical(r$config[c("max_value", "negative_slope", "threshold")],
                   list(max_value = 6, negative_slope = 0.1, threshold = 0.5))
  expect_null(layer_activation_relu()$config$max_value)
  expect_identical(layer_activation_leaky_relu()$config$negative_slope, 0.3)
  expect_identical(layer_activation_elu(alpha = 0.7)$config$alpha, 0.7)
  expect_identical(layer_activation_softmax()$config$axis, -1L)
  expect_equal(dim(layer_activation_softmax(x, axis = 3)), c(NA, 2L, 5L))
  expect_error(layer_activation_softmax(x, axis = 2), class = "mirrored_not_yet_error", regexp = "axis")
  expect_error(layer_activation_relu(max_value = -1), class = "mirrored_value_error", regexp = "max_value")
  expect_error(layer_activation_leaky_relu(negative_slope = -0.1), class = "mirrored_value_error",
               regexp = "negative_slope")
  expect_error(layer_activation_elu(alpha = "a"), class = "mirrored_value_error", regexp = "alpha")
  # A model with them predicts what the formulas give.
  inp <- keras_input(shape = 3)
  m <- keras_model(inp, inp |> layer_activation_relu(max_value = 2, negative_slope = 0.5))
  xs <- matrix(c(-2, 1, 3, 0.5, -0.5, 5), 2, byrow = TRUE)
  expect_equal(predict(m, xs, verbose = 0), ifelse(xs < 0, 0.5 * xs, pmin(xs, 2)), tolerance = 1e-6)
})
