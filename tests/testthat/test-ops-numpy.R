# Reductions, shape ops, products and index ops: eager on R arrays against
# plain R, and gradients against finite differences.

x3 <- array(c(0.3, -1.2, 2.5, 0.7, -0.4, 1.9, 3.1, -2.2, 0.05, 1.1, -0.8, 0.6), c(2, 3, 2))
m23 <- matrix(c(0.5, -1, 2, 0.25, 3, -1.5), 2)

test_that("reductions match apply() over keras3's 1-based axes, with keepdims", {
  expect_f32(op_sum(x3), sum(x3))
  expect_f32(op_sum(x3, axis = 2), apply(x3, c(1, 3), sum))
  expect_f32(op_sum(x3, axis = c(1, 3)), apply(x3, 2, sum))
  expect_f32(op_mean(x3, axis = -1), apply(x3, c(1, 2), mean))
  expect_f32(op_max(x3, axis = 1), apply(x3, c(2, 3), max))
  expect_f32(op_min(m23, axis = 2), apply(m23, 1, min))
  expect_equal(dim(op_mean(x3, axis = 2, keepdims = TRUE)), c(2L, 1L, 2L))
  expect_f32(as.vector(op_mean(x3, axis = 2, keepdims = TRUE)), as.vector(apply(x3, c(1, 3), mean)))
  v <- function(z) mean((z - mean(z))^2)
  expect_f32(op_var(c(1, 2, 3, 4)), 1.25)
  expect_f32(op_var(x3, axis = 3), apply(x3, c(1, 2), v))
  expect_f32(op_std(m23, axis = 1), sqrt(apply(m23, 2, v)))
  expect_identical(op_sum(c(TRUE, TRUE, FALSE)), 2L)
  expect_error(op_sum(x3, axis = 0), class = "mirrored_value_error", regexp = "1-based")
  expect_error(op_max(x3, initial = 0), class = "mirrored_not_yet_error")
  expect_error(op_mean(x3, axis = 4), class = "mirrored_value_error", regexp = "out of range")
})

test_that("logsumexp and clip match plain R", {
  expect_f32(op_logsumexp(c(1000, 1000)), 1000 + log(2))
  expect_f32(op_logsumexp(m23, axis = 2), apply(m23, 1, function(z) log(sum(exp(z)))))
  expect_f32(op_logsumexp(x3), log(sum(exp(x3))))
  expect_f32(op_clip(x3, -1, 1), pmin(pmax(x3, -1), 1))
})

test_that("shape ops keep the values in row-major order", {
  expect_f32(op_transpose(x3, c(1, 3, 2)), aperm(x3, c(1, 3, 2)))
  expect_f32(op_transpose(m23), t(m23))
  rm <- matrix(1:6, 2, byrow = TRUE)  # row-major 1..6
  expect_equal(op_reshape(rm, c(3, 2)), matrix(1:6, 3, byrow = TRUE) + 0)
  expect_equal(op_reshape(rm, c(-1, 3)), rm + 0)
  expect_equal(dim(op_expand_dims(x3, 1)), c(1L, 2L, 3L, 2L))
  expect_equal(dim(op_expand_dims(x3, -1)), c(2L, 3L, 2L, 1L))
  expect_equal(op_squeeze(array(1:3, c(1, 3))), c(1, 2, 3))
  expect_equal(dim(op_squeeze(array(1:3, c(1, 3, 1)), axis = 1)), c(3L, 1L))
  expect_equal(op_concatenate(list(matrix(1:4, 2), matrix(5:8, 2)), axis = 2), cbind(matrix(1:4, 2), matrix(5:8, 2)))
  expect_equal(op_concatenate(list(matrix(1:4, 2), matrix(5:8, 2))), rbind(matrix(1:4, 2), matrix(5:8, 2)))
  expect_equal(op_stack(list(c(1, 2), c(3, 4))), rbind(c(1, 2), c(3, 4)))
  expect_equal(op_stack(list(c(1, 2), c(3, 4)), axis = 2), cbind(c(1, 2), c(3, 4)))
})

test_that("matmul matches %*% with numpy's vector rules", {
  a <- matrix(c(1, 2, 3, 4, 5, 6), 2)
  b <- matrix(c(0.5, -1, 2, 1, 0, 3), 3)
  expect_f32(op_matmul(a, b), a %*% b)
  expect_f32(op_matmul(a, c(1, 0, -1)), as.vector(a %*% c(1, 0, -1)))
  expect_f32(op_matmul(c(1, 2), a), as.vector(c(1, 2) %*% a))
  expect_f32(op_matmul(c(1, 2, 3), c(4, 5, 6)), 32)
  expect_error(op_matmul(a, a), class = "mirrored_shape_error")
})

test_that("argmax and take_along_axis count from 1 unless zero_indexed, as keras3", {
  x <- matrix(c(1, 9, 3, 4, 2, 8), 2)
  expect_identical(op_argmax(x, axis = 2), c(2L, 1L))
  expect_identical(op_argmax(x, axis = 2, zero_indexed = TRUE), c(1L, 0L))
  expect_identical(op_argmax(x), 4L)  # row-major flattening: 1 3 2 | 9 4 8
  expect_identical(op_argmax(c(1, 5, 5, NaN, 2)), 4L)
  expect_identical(op_argmax(c(3, 7, 7)), 2L)
  expect_equal(dim(op_argmax(x, axis = 1, keepdims = TRUE)), c(1L, 3L))
  expect_equal(op_take_along_axis(x, matrix(c(3L, 1L), 2), axis = 2), matrix(c(2, 9), 2))
  expect_equal(op_take_along_axis(x, matrix(c(2L, 0L), 2), axis = 2, zero_indexed = TRUE), matrix(c(2, 9), 2))
  expect_equal(op_take_along_axis(x, matrix(-1L, 2, 1), axis = 2), matrix(c(2, 8), 2))
  expect_equal(op_take_along_axis(c(5, 6, 7), c(3, 1)), c(7, 5))
  expect_error(op_take_along_axis(x, matrix(c(4L, 1L), 2), axis = 2), class = "mirrored_value_error")
})

test_that("reductions', shape ops' and products' gradients match finite differences", {
  a <- matrix(c(0.5, -1, 2, 0.25, 1.5, -0.7), 2)
  for (f in list(function(x) op_sum(x, axis = 2), function(x) op_mean(x, axis = -1, keepdims = TRUE),
                 function(x) op_max(x, axis = 2), function(x) op_min(x, axis = 2),
                 function(x) op_var(x, axis = 2), function(x) op_std(x, axis = 2),
                 function(x) op_logsumexp(x, axis = 2), function(x) op_clip(x, -0.8, 1.2),
                 function(x) op_transpose(op_expand_dims(x, 2), c(1, 3, 2)),
                 function(x) op_squeeze(op_reshape(x, c(NA, 1, 3)), axis = 2),
                 function(x) op_matmul(x, matrix(c(1, 2, -1, 0.5, 0, 3), 3)),
                 function(x) op_concatenate(list(x, op_square(x)), axis = 2),
                 function(x) op_stack(list(x, op_exp(x)), axis = 2),
                 function(x) op_take_along_axis(x, matrix(c(3L, 1L), 1, 2), axis = 2))) {
    expect_grad_fd(f, a)
  }
  b <- array(c(0.3, 1, -0.5, 2, 0.7, -1.1, 0.4, 0.9, -0.2, 1.5, 0.6, -0.3), c(2, 3, 2))
  c2 <- array(c(1, -0.5, 0.2, 0.8, 0.3, -1), c(2, 2, 3))
  expect_grad_fd(op_matmul, b, c2)
})

test_that("op_take takes rows (1-based, or zero_indexed) and flattens x without an axis", {
  m <- matrix(1:6, 3)
  expect_equal(op_take(m, c(3, 1), axis = 1), rbind(c(3, 6), c(1, 4)))
  expect_equal(op_take(m, c(2L, 0L), axis = 1, zero_indexed = TRUE), rbind(c(3, 6), c(1, 4)))
  expect_equal(op_take(m, c(1, 6)), c(1, 6))
  expect_error(op_take(m, 1, axis = 2), class = "mirrored_not_yet_error")
  expect_error(op_take(m, 4, axis = 1), class = "mirrored_error")
})
