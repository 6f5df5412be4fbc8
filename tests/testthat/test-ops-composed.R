# Element-wise ops composed from the core's ops (R/ops-activations.R) and
# the reductions, normalizations and products of R/ops-composed.R: values and
# gradients against Keras 3 on TensorFlow (fixtures/ops/elementwise.csv,
# tools/make-keras-fixtures-ops.py), against plain R, and traced against eager.

elementwise_fixture <- function() {
  read.csv(test_path("fixtures", "ops", "elementwise.csv"), stringsAsFactors = FALSE)
}

# The op of a fixture row's name, as a function of x.
fixture_op <- function(name) {
  switch(name,
         elu_a = function(x) op_elu(x, alpha = 0.7),
         celu_a = function(x) op_celu(x, alpha = 2),
         threshold = function(x) op_threshold(x, 0.5, -2),
         logaddexp = function(x) op_logaddexp(x, 0.5 * x + 1),
         heaviside = function(x) op_heaviside(x, 0.5),
         get(paste0("op_", name)))
}

# Value and derivative of `f` at the points `x` through a traced graph (a
# batched column, each row one point).
traced_value_grad <- function(f, x) {
  xm <- matrix(x, ncol = 1)
  tr <- trace_fn(f, xm)
  y <- eval_graph(tr, xm)
  g <- mirrored:::cpp_traced_vjp(tr$json, list(xm), list(), list(matrix(1, length(x), 1)))$inputs[[1]]
  list(y = as.vector(y), dy = as.vector(g))
}

test_that("composed element-wise ops give Keras 3's (TensorFlow's) values and gradients", {
  fx <- elementwise_fixture()
  for (name in unique(fx$op)) {
    rows <- fx[fx$op == name, ]
    f <- fixture_op(name)
    eager <- f(rows$x)
    expect_equal(eager, rows$y, tolerance = 2e-6, info = name)
    tr <- traced_value_grad(f, rows$x)
    expect_equal(tr$y, eager, tolerance = 1e-7, info = paste(name, "traced = eager"))
    # Where TensorFlow's kernel has its own gradient formula (softplus:
    # sigmoid(x); selu: y + scale * alpha, which cancels in float32 far
    # below 0) the composed one agrees within float32 rounding.
    err <- abs(tr$dy - rows$dy)
    expect_true(all(err <= 2e-6 * abs(rows$dy) + 1e-7),
                info = paste(name, "gradient: max error", format(max(err)), "at x =", rows$x[which.max(err)]))
  }
})

test_that("element-wise ops keep NaN and handle infinities like TensorFlow", {
  expect_true(is.nan(op_softplus(NaN)))
  expect_equal(op_softplus(c(-Inf, Inf)), c(0, Inf))
  expect_equal(op_elu(c(-Inf, Inf)), c(-1, Inf))
  expect_equal(op_expm1(c(-Inf, Inf, 1e-10)), c(-1, Inf, 1e-10), tolerance = 1e-7)
  expect_equal(op_log_sigmoid(-Inf), -Inf)
  expect_equal(op_logaddexp(c(1000, -Inf), c(1000, 1)), c(1000 + log(2), 1), tolerance = 1e-7)
  expect_true(is.nan(op_logaddexp(NaN, 1)))
  expect_identical(op_isnan(c(1, NaN, Inf, -Inf)), c(FALSE, TRUE, FALSE, FALSE))
  expect_identical(op_isinf(c(1, NaN, Inf, -Inf)), c(FALSE, FALSE, TRUE, TRUE))
  expect_identical(op_isfinite(c(1, NaN, Inf, -Inf)), c(TRUE, FALSE, FALSE, FALSE))
  expect_identical(op_isnan(1:3), c(FALSE, FALSE, FALSE))
  fmax <- (2 - 2^-23) * 2^127
  expect_equal(op_nan_to_num(c(NaN, Inf, -Inf, 1.5)), c(0, fmax, -fmax, 1.5))
  expect_equal(op_nan_to_num(c(NaN, Inf, -Inf), nan = 1, posinf = 2, neginf = -2), c(1, 2, -2))
  expect_identical(op_nan_to_num(1:3), 1:3)
  expect_equal(op_divide_no_nan(c(1, 2, 0), c(0, 4, 0)), c(0, 0.5, 0))
  g <- traced_value_grad(function(x) op_divide_no_nan(1, x), c(0, 2))
  expect_equal(g$dy, c(0, -0.25))
  expect_equal(op_relu6(c(-1, 3, 6, 9)), c(0, 3, 6, 6))
  expect_equal(op_hard_swish(c(-4, 0, 1)), op_hard_silu(c(-4, 0, 1)))
  expect_equal(op_glu(matrix(c(1, 2, 0, 1), 1)), matrix(c(1, 2) * plogis(c(0, 1)), 1), tolerance = 1e-6)
  expect_equal(op_glu(matrix(1:4, 2), axis = 1), matrix(c(1, 3) * plogis(c(2, 4)), 1), tolerance = 1e-6)
})

test_that("composed ops trace in a custom layer and a custom loss, equal to eager", {
  x <- matrix(c(-2, -0.4, 0, 0.3, 1.5, 7), 2)
  layer_act <- function(t) op_softplus(t) + op_elu(t) * op_hard_sigmoid(t) - op_log_sigmoid(t) + op_selu(t)
  inp <- keras_input(shape = 3)
  model <- keras_model(inp, layer_lambda(inp, layer_act))
  expect_equal(predict(model, x, verbose = 0), layer_act(x), tolerance = 1e-6)
  expect_grad_fd(function(t) op_softplus(t) + op_celu(t) + op_squareplus(t) + op_logaddexp(t, 0.5) + op_expm1(t) +
                   op_rsqrt(op_abs(t) + 1) + op_log2(op_abs(t) + 1), x + 0.05)
  expect_grad_fd(function(t) op_rms_normalization(t, axis = -1) + op_normalize(t) + op_normalize(t, order = 1), x + 0.05)
})

test_that("logical ops and boolean reductions match R", {
  a <- c(TRUE, FALSE, TRUE, FALSE)
  b <- c(TRUE, TRUE, FALSE, FALSE)
  expect_identical(op_logical_and(a, b), a & b)
  expect_identical(op_logical_or(a, b), a | b)
  expect_identical(op_logical_xor(a, b), xor(a, b))
  expect_identical(op_logical_not(c(0, 2, -1)), c(TRUE, FALSE, FALSE))
  m <- matrix(c(1, 1, 0, 1, 0, 0), 2)
  expect_identical(op_all(m), FALSE)
  expect_identical(op_any(m), TRUE)
  expect_identical(op_all(m, axis = 1), apply(m != 0, 2, all))
  expect_identical(op_any(m, axis = 2, keepdims = TRUE), matrix(apply(m != 0, 1, any), 2, 1))
  expect_identical(op_count_nonzero(m), 3L)
  expect_identical(op_count_nonzero(m, axis = 2), as.integer(rowSums(m != 0)))
  tr <- trace_fn(function(x) op_count_nonzero(x, axis = 2), m)
  expect_equal(as.vector(eval_graph(tr, m)), rowSums(m != 0))
})

test_that("op_argmin, op_average and op_moments match R", {
  x <- matrix(c(3, 1, 2, 1, 5, 0), 2)
  expect_identical(op_argmin(c(3, 1, 2, 1)), 2L)
  expect_identical(op_argmin(x, axis = 2), apply(x, 1, which.min))
  expect_identical(op_argmin(x, axis = 1, zero_indexed = TRUE), apply(x, 2, which.min) - 1L)
  expect_identical(op_argmin(x), 6L)  # row-major: 3 2 5 1 1 0
  expect_identical(op_argmin(c(0, -0, 1)), 2L)
  expect_identical(op_argmin(x, axis = 2, keepdims = TRUE), matrix(apply(x, 1, which.min), 2, 1))
  expect_equal(op_average(c(1, 2, 3), weights = c(3, 1, 0)), weighted.mean(c(1, 2, 3), c(3, 1, 0)), tolerance = 1e-6)
  expect_equal(op_average(x), mean(x), tolerance = 1e-6)
  expect_equal(op_average(x, axis = 2, weights = c(1, 2, 3)), as.vector(x %*% c(1, 2, 3) / 6), tolerance = 1e-6)
  expect_equal(op_average(x, axis = 1, weights = x), colSums(x * x) / colSums(x), tolerance = 1e-6)
  expect_error(op_average(x, weights = c(1, 2, 3)), class = "mirrored_value_error")
  m <- op_moments(x, axes = 1)
  expect_equal(m[[1]], colMeans(x), tolerance = 1e-6)
  expect_equal(m[[2]], colMeans(sweep(x, 2, colMeans(x))^2), tolerance = 1e-6)
  mk <- op_moments(x, axes = c(1, 2), keepdims = TRUE)
  expect_equal(dim(mk[[2]]), c(1L, 1L))
  expect_equal(as.vector(mk[[2]]), mean((x - mean(x))^2), tolerance = 1e-6)
  expect_error(op_moments(x, axes = 1, synchronized = TRUE), class = "mirrored_not_yet_error")
  # Traced: a batch-norm-like layer over the batch axis; no gradient through
  # the mean inside the variance (tf.nn.moments).
  f <- function(t) {
    mv <- op_moments(t, axes = 1, keepdims = TRUE)
    (t - mv[[1]]) * op_rsqrt(mv[[2]] + 1e-3)
  }
  tr <- trace_fn(f, x)
  expect_equal(eval_graph(tr, x), sweep(sweep(x, 2, colMeans(x)), 2, sqrt(colMeans(sweep(x, 2, colMeans(x))^2) + 1e-3), "/"),
               tolerance = 1e-6)
})

test_that("normalizations follow Keras 3's formulas", {
  x <- matrix(c(3, 1, 4, -2, 0, 2), 2)
  l2 <- sqrt(rowSums(x^2))
  expect_equal(op_normalize(x), x / l2, tolerance = 1e-6)
  expect_equal(op_normalize(x, axis = 1, order = 1), sweep(x, 2, colSums(abs(x)), "/"), tolerance = 1e-6)
  expect_equal(op_normalize(x, order = 3), x / rowSums(abs(x)^3)^(1 / 3), tolerance = 1e-6)
  expect_equal(op_normalize(c(0, 0)), c(0, 0))
  expect_equal(op_rms_normalization(x), x / sqrt(rowMeans(x^2) + 1e-7), tolerance = 1e-6)
  expect_equal(op_rms_normalization(x, scale = c(1, 2, 3)), sweep(x / sqrt(rowMeans(x^2) + 1e-7), 2, 1:3, "*"),
               tolerance = 1e-6)
  mu <- c(1, 0, 2)
  v <- c(1, 4, 0.5)
  expect_equal(op_batch_normalization(x, mu, v, axis = 2, offset = c(0, 1, 0), scale = c(2, 1, 1)),
               sweep(sweep(sweep(x, 2, mu), 2, sqrt(v + 1e-3), "/"), 2, c(2, 1, 1), "*") + rep(c(0, 1, 0), each = 2),
               tolerance = 1e-6)
  expect_equal(op_batch_normalization(t(x), mu, v, axis = 1), t(sweep(sweep(x, 2, mu), 2, sqrt(v + 1e-3), "/")),
               tolerance = 1e-6)
  expect_grad_fd(function(t) op_batch_normalization(t, mu, v, axis = -1, scale = c(2, 1, 1), offset = 1), x)
  expect_error(op_normalize(x, order = 0), class = "mirrored_value_error", regexp = "order")
})

test_that("op_categorical_crossentropy matches Keras' formulas, from probabilities and logits", {
  tgt <- rbind(c(1, 0, 0), c(0, 0.3, 0.7))
  p <- rbind(c(0.8, 0.15, 0.05), c(0.1, 0.6, 0.6))
  pn <- p / rowSums(p)
  expect_equal(op_categorical_crossentropy(tgt, p), -rowSums(tgt * log(pmin(pmax(pn, 1e-7), 1 - 1e-7))), tolerance = 1e-6)
  z <- rbind(c(2, -1, 0.5), c(0, 3, -2))
  ls <- z - log(rowSums(exp(z)))
  expect_equal(op_categorical_crossentropy(tgt, z, from_logits = TRUE), -rowSums(tgt * ls), tolerance = 1e-6)
  expect_equal(op_categorical_crossentropy(t(tgt), t(z), from_logits = TRUE, axis = 1), -rowSums(tgt * ls), tolerance = 1e-6)
  # Traced: the softmax's logits are used, as Keras does.
  tr <- trace_fn(function(y, x) op_categorical_crossentropy(y, op_softmax(x)), tgt, z)
  expect_equal(as.vector(eval_graph(tr, tgt, z)), -rowSums(tgt * ls), tolerance = 1e-6)
  expect_grad_fd(function(y, x) op_categorical_crossentropy(y, x, from_logits = TRUE), tgt, z, wrt = 2)
  expect_error(op_categorical_crossentropy(tgt, z[, 1:2]), class = "mirrored_value_error")
})

test_that("tensor products match R's", {
  a <- array(seq(-1, 1, length.out = 24), c(2, 3, 4))
  b <- array(seq(0.5, -2, length.out = 60), c(3, 4, 5))
  td <- op_tensordot(a, b)
  expect_equal(dim(td), c(2L, 5L))
  expect_equal(td, matrix(a, 2) %*% matrix(b, 12), tolerance = 1e-6)
  m1 <- matrix(c(1, 2, 3, 4, 5, 6), 2)
  m2 <- matrix(c(1, 0, -1, 2, 1, 0), 3)
  expect_equal(op_tensordot(m1, m2, axes = list(2, 1)), m1 %*% m2, tolerance = 1e-6)
  expect_equal(op_tensordot(m1, m2, axes = 2), m1 %*% m2, tolerance = 1e-6)
  expect_equal(op_tensordot(m1, t(m1), axes = list(1, 2)), t(m1) %*% m1, tolerance = 1e-6)
  expect_equal(op_tensordot(c(1, 2), c(3, 4, 5), axes = 1), outer(c(1, 2), c(3, 4, 5)))
  expect_equal(op_dot(c(1, 2, 3), c(4, 5, 6)), 32)
  expect_equal(op_dot(m1, m2), m1 %*% m2, tolerance = 1e-6)
  expect_equal(op_dot(m1, c(1, 1, 1)), as.vector(m1 %*% c(1, 1, 1)))
  expect_equal(op_dot(2, m1), 2 * m1)
  expect_equal(op_inner(m1, m1), m1 %*% t(m1), tolerance = 1e-6)
  expect_equal(op_vdot(m1, m1), sum(m1 * m1))
  expect_equal(op_outer(c(1, 2), c(1, 10, 100)), outer(c(1, 2), c(1, 10, 100)))
  expect_equal(op_outer(m1, c(1, 2)), outer(as.vector(t(m1)), c(1, 2)))
  # Traced: a batched x1 against a constant.
  x <- array(seq(-1, 1, length.out = 24), c(2, 3, 4))
  w <- array(seq(0.3, -0.4, length.out = 20), c(4, 5))
  tr <- trace_fn(function(t) op_tensordot(t, w, axes = list(3, 1)), x)
  expect_equal(eval_graph(tr, x), op_tensordot(x, w, axes = list(3, 1)), tolerance = 1e-6)
  expect_grad_fd(function(t) op_dot(t, w) + op_expand_dims(op_inner(t, w[, 1]), -1), x)
  expect_error(trace_fn(function(t) op_tensordot(t, t, axes = list(1, 1)), x), class = "mirrored_error")
})

test_that("bad arguments are classed errors naming the argument", {
  expect_error(op_elu(1, alpha = "a"), class = "mirrored_value_error", regexp = "alpha")
  expect_error(op_leaky_relu(1, negative_slope = NA), class = "mirrored_value_error", regexp = "negative_slope")
  expect_error(op_glu(c(1, 2, 3)), class = "mirrored_value_error", regexp = "even")
  expect_error(op_glu(c(1, 2), axis = 0), class = "mirrored_value_error", regexp = "axis")
  expect_error(op_softplus("a"), class = "mirrored_value_error", regexp = "x")
  expect_error(op_tensordot(1:2, 1:2, axes = 0), class = "mirrored_value_error", regexp = "axes")
  expect_error(op_all(1, axis = 1.5), class = "mirrored_value_error", regexp = "axis")
})
