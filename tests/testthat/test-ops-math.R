# Element-wise op_*: eager on R arrays against plain R (several ranks,
# numpy broadcasting), and every differentiable op's gradient against
# central finite differences through its traced graph.

x3 <- array(c(0.3, -1.2, 2.5, 0.7, -0.4, 1.9, 3.1, -2.2, 0.05, 1.1, -0.8, 0.6), c(2, 3, 2))
m23 <- matrix(c(0.5, -1, 2, 0.25, 3, -1.5), 2)

test_that("unary ops on R arrays match plain R for every rank", {
  pos <- abs(x3) + 0.1
  expect_f32(op_negative(x3), -x3)
  expect_f32(op_abs(x3), abs(x3))
  expect_f32(op_sign(c(-2, 0, 3)), c(-1, 0, 1))
  expect_f32(op_square(m23), m23^2)
  expect_f32(op_sqrt(pos), sqrt(pos))
  expect_f32(op_exp(x3), exp(x3))
  expect_f32(op_log(pos), log(pos))
  expect_f32(op_log1p(c(1e-9, 0.5, 3)), log1p(c(1e-9, 0.5, 3)))
  expect_f32(op_tanh(x3), tanh(x3))
  expect_f32(op_square(2), 4)
  expect_equal(dim(op_exp(x3)), c(2L, 3L, 2L))
  expect_identical(op_square(3:1), c(9L, 4L, 1L))
})

test_that("binary ops broadcast like numpy (row-major shapes) and match plain R", {
  v3 <- c(10, 20, 30)
  expect_f32(op_add(m23, v3), sweep(m23, 2, v3, "+"))
  expect_f32(op_subtract(m23, matrix(c(1, 2), 2, 1)), m23 - c(1, 2))
  expect_f32(op_multiply(x3, 2), x3 * 2)
  expect_f32(op_divide(1, c(2, 4)), c(0.5, 0.25))
  expect_f32(op_power(abs(m23), 2.5), abs(m23)^2.5)
  expect_f32(op_maximum(x3, 0), pmax(x3, 0))
  expect_f32(op_minimum(m23, v3 / 10), sweep(m23, 2, v3 / 10, pmin))
  expect_equal(dim(op_add(x3, c(1, 2))), c(2L, 3L, 2L))
  expect_f32(op_add(x3, c(1, 2)), sweep(x3, 3, c(1, 2), "+"))
  expect_f32(op_add(matrix(1:3, 3, 1), matrix(1:2, 1, 2)), outer(1:3, 1:2, "+"))
  expect_error(op_add(m23, c(1, 2)), class = "mirrored_shape_error")
  expect_error(op_add(m23, "a"), class = "mirrored_value_error", regexp = "x2")
  expect_error(op_add(c(1L, NA), 1), class = "mirrored_value_error", regexp = "x1")
  expect_true(is.nan(op_add(c(1, NaN), 1)[2]))
})

test_that("comparisons return logical arrays", {
  expect_identical(op_greater(c(1, 5, 3), 2), c(FALSE, TRUE, TRUE))
  expect_identical(op_greater_equal(c(1, 2, 3), 2), c(FALSE, TRUE, TRUE))
  expect_identical(op_less(c(1, 2, 3), 2), c(TRUE, FALSE, FALSE))
  expect_identical(op_less_equal(c(1, 2, 3), 2), c(TRUE, TRUE, FALSE))
  expect_identical(op_equal(matrix(1:4, 2), 2), matrix(1:4, 2) == 2)
  expect_identical(op_not_equal(m23, 2), m23 != 2)
})

test_that("unary ops' gradients match finite differences", {
  pos <- matrix(c(0.4, 1.3, 2.2, 0.9), 2)
  for (f in list(op_negative, op_square, op_exp, op_tanh, op_abs)) expect_grad_fd(f, m23)
  for (f in list(op_sqrt, op_log, op_log1p)) expect_grad_fd(f, pos)
  expect_grad_fd(function(x) op_sign(x) * x, m23)
})

test_that("binary ops' gradients match finite differences, broadcast operands summed", {
  a <- matrix(c(0.5, -1, 2, 0.25, 1.5, -0.7), 2)
  b <- matrix(c(1.1, 0.3, -0.6, 2, 0.9, 1.4), 2)
  for (f in list(op_add, op_subtract, op_multiply, op_divide, op_maximum, op_minimum)) expect_grad_fd(f, a, b)
  expect_grad_fd(op_power, abs(a) + 0.5, b)
  # A per-sample row (1, 3) broadcast against every row.
  expect_grad_fd(function(x, y) x * op_sum(y, axis = 1, keepdims = TRUE), a, b)
})
