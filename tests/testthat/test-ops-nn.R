# Activations, softmax, one-hot, casts and the cross-entropies: eager on R
# arrays against plain R, and gradients against finite differences.

m23 <- matrix(c(0.5, -1, 2, 0.25, 3, -1.5), 2)
softmax_rows <- function(z) t(apply(z, 1, function(r) exp(r - max(r)) / sum(exp(r - max(r)))))

test_that("activations match their formulas", {
  expect_f32(op_relu(m23), pmax(m23, 0))
  expect_f32(op_sigmoid(m23), 1 / (1 + exp(-m23)))
  expect_f32(op_silu(m23), m23 / (1 + exp(-m23)))
  expect_f32(op_gelu(m23, approximate = FALSE), m23 * pnorm(m23))
  expect_f32(op_gelu(m23), 0.5 * m23 * (1 + tanh(sqrt(2 / pi) * (m23 + 0.044715 * m23^3))))
})

test_that("softmax and log_softmax work along keras3's axes", {
  expect_f32(op_softmax(m23), softmax_rows(m23))
  expect_f32(op_log_softmax(m23), log(softmax_rows(m23)))
  expect_f32(op_softmax(m23, axis = 1), t(softmax_rows(t(m23))))
  expect_f32(op_softmax(c(1, 2, 3)), exp(1:3) / sum(exp(1:3)))
})

test_that("one_hot counts classes from 1 unless zero_indexed, as keras3", {
  expect_equal(op_one_hot(c(1, 3, 2), 3), diag(3)[c(1, 3, 2), ])
  expect_equal(op_one_hot(c(0L, 2L), 3, zero_indexed = TRUE), diag(3)[c(1, 3), ])
  expect_equal(op_one_hot(c(1, 4), 3), rbind(c(1, 0, 0), c(0, 0, 0)))
  expect_equal(op_one_hot(c(2, 1), 3, axis = 1), t(diag(3)[c(2, 1), ]))
  expect_equal(op_one_hot(factor(c("a", "c", "b"))), diag(3)[c(1, 3, 2), ])
  expect_identical(op_one_hot(c(1, 2), 2, dtype = "int32"), matrix(c(1L, 0L, 0L, 1L), 2))
  expect_error(op_one_hot(c(1, 2), 2, sparse = TRUE), class = "mirrored_not_yet_error")
})

test_that("cast truncates, saturates and rounds as TensorFlow", {
  expect_identical(op_cast(c(-1.7, 0.2, 2.9), "int32"), c(-1L, 0L, 2L))
  expect_identical(op_cast(c(300, -5), "uint8"), c(255L, 0L))
  expect_identical(op_cast(c(0, 0.5, -2), "bool"), c(FALSE, TRUE, TRUE))
  expect_equal(op_cast(1 + 2^-10, "bfloat16"), 1)
  expect_equal(op_cast(1 + 2^-10, "float16"), 1 + 2^-10)
  expect_error(op_cast(1, "complex64"), class = "mirrored_value_error", regexp = "dtype")
})

test_that("where, stop_gradient and the logical helpers", {
  expect_equal(op_where(c(TRUE, FALSE, TRUE), c(1, 2, 3), 0), c(1, 0, 3))
  expect_equal(op_where(m23 > 0, m23, -m23), abs(m23))
  expect_equal(op_stop_gradient(m23), m23)
  expect_error(op_where(c(TRUE, FALSE)), class = "mirrored_not_yet_error")
})

test_that("the cross-entropies match Keras' formulas", {
  logits <- matrix(c(2, 0, 1, 1, 0, 3), 2)
  lsm <- log(softmax_rows(logits))
  expect_f32(op_sparse_categorical_crossentropy(c(0, 2), logits, from_logits = TRUE), -c(lsm[1, 1], lsm[2, 3]))
  p <- softmax_rows(logits)
  expect_f32(op_sparse_categorical_crossentropy(c(0, 2), p), -log(c(p[1, 1], p[2, 3])), tolerance = 1e-5)
  expect_f32(op_sparse_categorical_crossentropy(matrix(c(0, 2), 2), p), -log(c(p[1, 1], p[2, 3])), tolerance = 1e-5)
  expect_error(op_sparse_categorical_crossentropy(c(0, 2), p, axis = 1), class = "mirrored_value_error")
  t <- c(1, 0, 1)
  q <- c(0.9, 0.2, 1)
  qc <- pmin(pmax(q, 1e-7), 1 - 1e-7)
  expect_f32(op_binary_crossentropy(t, q), -(t * log(qc) + (1 - t) * log(1 - qc)), tolerance = 1e-5)
  z <- c(2, -1, 30)
  expect_f32(op_binary_crossentropy(t, z, from_logits = TRUE), pmax(z, 0) - z * t + log1p(exp(-abs(z))))
  expect_error(op_binary_crossentropy(c(1, 0), c(0.5, 0.5, 0.5)), class = "mirrored_value_error")
})

test_that("a cross-entropy of a traced softmax (or sigmoid) uses its logits, as Keras", {
  f <- function(y_true, y_pred) op_sparse_categorical_crossentropy(y_true, op_softmax(y_pred))
  tr <- trace_fn(f, shapes = list(c(NA), c(NA, 3)))
  ops <- vapply(tr$graph$nodes, `[[`, "", "op")
  expect_false("log" %in% ops)
  logits <- matrix(c(40, 0, 1, 1, 0, 3), 2)  # a softmax that underflows in float32
  expect_f32(as.vector(eval_graph(tr, c(1, 0), logits)),
             c(log(sum(exp(logits[1, ] - 40))) + 40 - 1, log(sum(exp(logits[2, ]))) - 0), tolerance = 1e-5)
  g <- function(y_true, y_pred) op_binary_crossentropy(y_true, op_sigmoid(y_pred))
  tg <- trace_fn(g, shapes = list(c(NA, 2), c(NA, 2)))
  z <- matrix(c(50, -3, 1, 2), 2)
  yt <- matrix(c(0, 1, 1, 0), 2)
  expect_f32(eval_graph(tg, yt, z), pmax(z, 0) - z * yt + log1p(exp(-abs(z))), tolerance = 1e-5)
})

test_that("activations', softmax's and cross-entropies' gradients match finite differences", {
  a <- matrix(c(0.5, -1, 2, 0.25, 1.5, -0.7), 2)
  for (f in list(op_relu, op_sigmoid, op_silu, op_gelu, function(x) op_gelu(x, approximate = FALSE),
                 op_softmax, op_log_softmax, function(x) op_softmax(x, axis = 2))) {
    expect_grad_fd(f, a)
  }
  # A cast to a float dtype passes the gradient straight through (its
  # rounding would make finite differences meaningless).
  tc <- trace_fn(function(x) op_cast(x, "float16") * 2, a)
  w <- matrix(c(1, 2, 3, 4, 5, 6), 2)
  expect_equal(mirrored:::cpp_traced_vjp(tc$json, list(a), list(), list(w))$inputs[[1]], 2 * w)
  tz <- trace_fn(function(x) op_cast(x, "int32") * 2, a)
  expect_equal(mirrored:::cpp_traced_vjp(tz$json, list(a), list(), list(w))$inputs[[1]], 0 * w)
  # No gradient through op_stop_gradient(): d/dx sum(w * sg(x) * x) = w * x.
  tr <- trace_fn(function(x) op_stop_gradient(x) * x, a)
  w <- matrix(c(1, 2, 3, 4, 5, 6), 2)
  expect_equal(mirrored:::cpp_traced_vjp(tr$json, list(a), list(), list(w))$inputs[[1]], w * a, tolerance = 1e-6)
  expect_grad_fd(function(t, z) op_sparse_categorical_crossentropy(t, z, from_logits = TRUE),
                 c(2, 0), a, wrt = 2)
  expect_grad_fd(function(t, p) op_sparse_categorical_crossentropy(t, op_softmax(p) * 0.9 + 0.05),
                 c(2, 0), a, wrt = 2)
  yt <- matrix(c(0, 1, 1, 0, 1, 0), 2)
  expect_grad_fd(function(t, z) op_binary_crossentropy(t, z, from_logits = TRUE), yt, a, wrt = 2)
  expect_grad_fd(function(t, z) op_binary_crossentropy(t, op_sigmoid(z) * 0.8 + 0.1), yt, a, wrt = 2)
  expect_grad_fd(function(t, z) op_where(z > 0, z * 2, op_square(z)) + op_one_hot(op_argmax(z, axis = 2), 3), yt, a,
                 wrt = 2)
})
