# Tensor creation and shape ops (R/ops-creation.R, R/ops-shape.R): eager
# values against plain R, the same ops traced on batched tensors (a custom
# loss or layer) equal to eager, their gradients against finite differences,
# and shape() / op_shape() of traced and symbolic tensors.

test_that("creation ops give R's values, float32 unless a dtype is given", {
  expect_identical(op_zeros(c(2, 3)), matrix(0, 2, 3))
  expect_identical(op_ones(3, dtype = "int32"), c(1L, 1L, 1L))
  expect_identical(op_empty(shape(2, 2)), matrix(0, 2, 2))
  expect_identical(op_full(c(2, 3), c(1, 2, 3)), matrix(c(1, 2, 3), 2, 3, byrow = TRUE))
  expect_identical(op_full(2, 0.1), rep(0.1, 2) |> op_convert_to_tensor())
  expect_equal(op_full(2, 0.1), c(0.1, 0.1), tolerance = 1e-7)
  expect_identical(op_full(c(1, 2), TRUE), matrix(1, 1, 2))
  expect_identical(op_full(c(1, 2), 2.7, dtype = "int32"), matrix(2L, 1, 2))
  expect_true(all(is.nan(op_full(3, NaN))))
  x <- matrix(1:6, 2)
  expect_identical(op_zeros_like(x), matrix(0L, 2, 3))
  expect_identical(op_ones_like(x, dtype = "float32"), matrix(1, 2, 3))
  expect_identical(op_full_like(x, 7), matrix(7L, 2, 3))
  expect_identical(op_full_like(c(1.5, NaN), -1), c(-1, -1))
  expect_identical(op_zeros_like(c(TRUE, FALSE)), c(FALSE, FALSE))
  expect_identical(op_arange(5), c(1, 2, 3, 4, 5))
  expect_identical(op_arange(5L), 1:5)
  expect_identical(op_arange(0, 1, 0.25, include_end = FALSE), c(0, 0.25, 0.5, 0.75))
  expect_identical(op_arange(10, 1, -3), c(10, 7, 4, 1))
  expect_identical(op_arange(2, 8, 2, dtype = "int32"), c(2L, 4L, 6L, 8L))
  expect_equal(op_arange(0, 1, 0.1), seq(0, 1, 0.1), tolerance = 1e-7)
  expect_equal(op_linspace(0, 1, 5), seq(0, 1, length.out = 5))
  expect_equal(op_linspace(2, 3, 4, endpoint = FALSE), c(2, 2.25, 2.5, 2.75))
  expect_equal(op_linspace(0, 1, 3, retstep = TRUE), list(c(0, 0.5, 1), 0.5))
  expect_equal(op_linspace(c(0, 1), c(1, 3), 3), cbind(c(0, 0.5, 1), c(1, 2, 3)))
  expect_equal(op_linspace(c(0, 1), c(1, 3), 3, axis = 2), rbind(c(0, 0.5, 1), c(1, 2, 3)))
  expect_equal(op_logspace(0, 2, 3), c(1, 10, 100))
  expect_equal(op_logspace(0, 3, 4, base = 2), c(1, 2, 4, 8))
  expect_identical(op_eye(3), diag(3))
  expect_identical(op_eye(2, 3, k = 1), rbind(c(0, 1, 0), c(0, 0, 1)))
  expect_identical(op_eye(3, k = -1, dtype = "bool"), row(diag(3)) - col(diag(3)) == 1)
  expect_identical(op_identity(2, dtype = "int32"), matrix(c(1L, 0L, 0L, 1L), 2))
  expect_identical(op_tri(3), lower.tri(diag(3), diag = TRUE) + 0)
  expect_identical(op_tri(2, 3, k = 1), rbind(c(1, 1, 0), c(1, 1, 1)))
  m <- matrix(1:9, 3)
  expect_identical(op_tril(m), m * lower.tri(m, diag = TRUE))
  expect_identical(op_triu(m, k = 1), m * upper.tri(m))
  expect_identical(op_tril(m, k = -1), m * lower.tri(m))
  a <- array(1:12, c(2, 2, 3))
  expect_identical(op_triu(a)[2, , ], a[2, , ] * upper.tri(a[2, , ], diag = TRUE))
})

test_that("the *_like ops keep a traced tensor's unknown batch axis, with no gradient and no NaN leaking", {
  x <- matrix(c(0.5, -1, 2, NaN, 3, 1), 2)
  f <- function(t) op_zeros_like(t) + op_ones_like(t) * 2 + op_full_like(t, 3, dtype = "int32")
  tr <- trace_fn(f, x)
  expect_equal(tr$outputs[[1]]$shape, c(NA, 3L))
  expect_identical(eval_graph(tr, x), matrix(5, 2, 3))
  expect_identical(eval_graph(tr, x), f(x))
  xf <- matrix(c(0.5, -1, 2, 0.7, 3, 1), 2)
  g <- expect_grad_fd(function(t) t * 2 + op_full_like(t, 3) + op_zeros_like(t) * t, xf)
  expect_equal(g[[1]], matrix(2, 2, 3) * matrix(stats::runif(6, 0.5, 1.5), 2) * 0 + g[[1]])
  # A fill that is itself a tensor of the graph.
  tr2 <- trace_fn(function(t) op_full_like(t, op_sum(t, axis = 2, keepdims = TRUE)), xf)
  expect_equal(eval_graph(tr2, xf), matrix(rowSums(xf), 2, 3), tolerance = 1e-6)
  expect_error(trace_fn(function(t) op_zeros(shape(t)), xf), class = "mirrored_value_error")
})

test_that("shape(), op_shape() and friends describe arrays, traced and symbolic tensors", {
  a <- array(0, c(2, 3, 4))
  expect_identical(op_shape(a), shape(2, 3, 4))
  expect_identical(op_shape(1:3), shape(3))
  expect_identical(op_shape(5), shape())
  expect_identical(op_ndim(a), 3L)
  expect_identical(op_size(a), 24L)
  expect_identical(op_dtype(a), "float32")
  expect_identical(op_dtype(1:2), "int32")
  expect_identical(op_dtype(TRUE), "bool")
  expect_false(op_is_tensor(a))
  inp <- keras_input(c(3, 4))
  expect_identical(shape(inp), shape(NA, 3, 4))
  expect_identical(op_shape(inp), shape(NA, 3, 4))
  expect_identical(shape(inp, 5), shape(NA, 3, 4, 5))
  expect_identical(op_ndim(inp), 3L)
  expect_error(op_size(inp), class = "mirrored_value_error")
  seen <- NULL
  trace_fn(function(t) {
    seen <<- list(shape = shape(t), op_shape = op_shape(t), ndim = op_ndim(t), dtype = op_dtype(t),
                  is = op_is_tensor(t), last = as.integer(op_shape(t))[3])
    t
  }, shapes = list(c(NA, 3, 4)))
  expect_identical(seen$shape, shape(NA, 3, 4))
  expect_identical(seen$op_shape, shape(NULL, 3, 4))
  expect_identical(seen$ndim, 3L)
  expect_identical(seen$dtype, "float32")
  expect_true(seen$is)
  expect_identical(seen$last, 4L)
  expect_error(trace_fn(function(t) op_size(t) * t, shapes = list(c(NA, 2))), class = "mirrored_trace_error")
  expect_error(trace_fn(function(t) op_convert_to_array(t), shapes = list(c(NA, 2))), class = "mirrored_trace_error")
})

test_that("conversions and copies", {
  expect_identical(op_convert_to_tensor(c(1.5, 2.7), dtype = "int32"), c(1L, 2L))
  expect_identical(op_convert_to_tensor(shape(2, 3)), c(2L, 3L))
  expect_equal(op_convert_to_tensor(0.1), 0.1, tolerance = 1e-7)
  expect_false(op_convert_to_tensor(0.1) == 0.1)  # float32
  expect_identical(op_convert_to_tensor(c(TRUE, FALSE)), c(TRUE, FALSE))
  expect_identical(op_convert_to_array(matrix(1:4, 2)), matrix(1:4, 2))
  expect_identical(op_convert_to_numpy(c(0.1, 2)), c(0.1, 2))
  expect_identical(op_copy(1:3), 1:3)
  expect_error(op_convert_to_tensor(1, sparse = TRUE), class = "mirrored_not_yet_error")
  expect_error(op_convert_to_tensor(shape(NA, 2)), class = "mirrored_value_error")
  expect_error(op_convert_to_array(keras_input(2)), class = "mirrored_value_error")
  expect_error(op_convert_to_array("a"), class = "mirrored_value_error")
})

test_that("shape ops give R's values", {
  x <- matrix(1:6, 2)
  a <- array(1:24, c(2, 3, 4))
  expect_identical(op_flip(x, axis = 2), x[, 3:1])
  expect_identical(op_flip(x), x[2:1, 3:1])
  expect_identical(op_flip(a, axis = c(1, 3)), a[2:1, , 4:1])
  expect_identical(op_roll(1:5, 2), c(4L, 5L, 1L, 2L, 3L))
  expect_identical(op_roll(1:5, -1), c(2L, 3L, 4L, 5L, 1L))
  expect_identical(op_roll(x, 1), matrix(c(6L, 1L, 3L, 5L, 2L, 4L), 2, byrow = TRUE))  # row-major
  expect_identical(op_roll(x, 1, axis = 2), x[, c(3, 1, 2)])
  expect_identical(op_roll(a, c(1, 2), axis = c(1, 3)), a[2:1, , c(3, 4, 1, 2)])
  expect_identical(op_repeat(c(1, 2), 3), c(1, 1, 1, 2, 2, 2))
  expect_identical(op_repeat(x, c(1, 2), axis = 1), x[c(1, 2, 2), ])
  expect_identical(op_repeat(x, 2), rep(as.vector(t(x)), each = 2))
  expect_identical(op_tile(c(1, 2), 3), c(1, 2, 1, 2, 1, 2))
  expect_identical(op_tile(c(1, 2), c(2, 2)), rbind(c(1, 2, 1, 2), c(1, 2, 1, 2)))
  expect_identical(op_tile(x, c(2, 1)), rbind(x, x))
  expect_identical(op_broadcast_to(c(1, 2, 3), c(2, 3)), rbind(c(1, 2, 3), c(1, 2, 3)))
  expect_identical(op_broadcast_to(matrix(1:2, 2, 1), shape(2, 2, 3))[2, , ], matrix(1:2, 2, 3))
  expect_identical(op_moveaxis(a, 1, 3), aperm(a, c(2, 3, 1)))
  expect_identical(op_moveaxis(a, c(1, 2), c(3, 1)), aperm(a, c(2, 3, 1)))
  expect_identical(op_swapaxes(a, 1, 3), aperm(a, c(3, 2, 1)))
  expect_identical(op_ravel(x), as.vector(t(x)))
  expect_identical(op_hstack(list(c(1, 2), c(3, 4))), c(1, 2, 3, 4))
  expect_identical(op_hstack(x, x), cbind(x, x))
  expect_identical(op_vstack(list(x, x + 6L)), rbind(x, x + 6L))
  expect_identical(op_split(1:6, 3), list(1:2, 3:4, 5:6))
  expect_identical(op_split(1:6, c(3, 5)), list(1:2, 3:4, 5:6))
  expect_identical(op_split(x, 3, axis = 2), list(x[, 1], x[, 2], x[, 3]) |> lapply(matrix, 2, 1))
  expect_identical(op_unstack(x), list(x[1, ], x[2, ]))
  expect_identical(op_unstack(x, axis = 2), list(x[, 1], x[, 2], x[, 3]))
  m <- matrix(1:12, 3)
  expect_identical(op_diagonal(m), diag(m))
  expect_identical(op_diagonal(m, offset = 1), c(m[1, 2], m[2, 3], m[3, 4]))
  expect_identical(op_diagonal(m, offset = -1), c(m[2, 1], m[3, 2]))
  expect_identical(op_diagonal(a, axis1 = 2, axis2 = 3), t(apply(a, 1, diag)))
  expect_identical(op_trace(m), sum(diag(m)))
  expect_identical(op_trace(a, axis1 = 2, axis2 = 3), apply(a, 1, function(s) sum(diag(s))))
})

test_that("shape ops trace on batched tensors, equal to eager, with finite-difference gradients", {
  x <- array(seq(-1, 1.3, length.out = 24), c(2, 3, 4))
  fs <- list(
    function(t) op_flip(t, axis = 3),
    function(t) op_roll(t, 1, axis = 2),
    function(t) op_repeat(t, c(1, 2, 0, 1), axis = 3),
    function(t) op_tile(t, c(2, 1)),
    function(t) op_broadcast_to(op_expand_dims(t, 2), shape(op_shape(t)[1], 2, 3, 4)),
    function(t) op_moveaxis(t, 2, 3),
    function(t) op_swapaxes(t, 2, 3),
    function(t) op_hstack(t, t * 2),
    function(t) op_split(t, c(2), axis = 3)[[2]],
    function(t) op_unstack(t, axis = 2)[[3]],
    function(t) op_diagonal(t, offset = 1, axis1 = 2, axis2 = 3),
    function(t) op_trace(t, axis1 = 2, axis2 = 3),
    function(t) op_tril(t, k = 1) + op_triu(t)
  )
  for (k in seq_along(fs)) {
    tr <- trace_fn(fs[[k]], x)
    y <- fs[[k]](x)
    expect_identical(as.vector(eval_graph(tr, x)), as.vector(y), info = paste("op", k))
    expect_identical(tr$outputs[[1]]$shape[-1], (dim(y) %||% length(y))[-1], info = paste("op", k))
    expect_grad_fd(fs[[k]], x)
  }
  expect_error(trace_fn(function(t) op_flip(t), x), class = "mirrored_value_error", regexp = "batch axis")
  expect_error(trace_fn(function(t) op_ravel(t), x), class = "mirrored_value_error", regexp = "batch axis")
  expect_error(trace_fn(function(t) op_split(t, 2, axis = 1), x), class = "mirrored_value_error")
})

test_that("creation and shape ops work in a compiled custom loss and a layer_lambda", {
  x <- matrix(cos(seq_len(24) * 0.3), 8, 3)
  y <- matrix(sin(seq_len(16) * 0.2), 8, 2)
  inp <- keras_input(shape = 3)
  out <- layer_dense(inp, 2, kernel_initializer = "ones")
  model <- keras_model(inp, out)
  loss_fn <- function(y_true, y_pred) {
    mask <- op_tril(op_ones_like(op_outer(c(1, 1), c(1, 1))))
    d <- op_flip(y_true, axis = 2) - op_flip(y_pred, axis = 2) + op_zeros_like(y_pred)
    op_mean(op_square(d) * op_ones(2), axis = -1) + 0 * op_sum(mask)
  }
  compile(model, optimizer = optimizer_sgd(learning_rate = 0.01), loss = loss_fn)
  custom <- evaluate(model, x, y, verbose = 0)
  compile(model, optimizer = optimizer_sgd(learning_rate = 0.01), loss = "mse")
  builtin <- evaluate(model, x, y, verbose = 0)
  expect_equal(unname(unlist(custom)), unname(unlist(builtin)), tolerance = 1e-6)
  lam <- function(t) op_concatenate(list(op_roll(t, 1, axis = 2), op_repeat(t, 2, axis = 2)), axis = 2)
  m2 <- keras_model(inp, layer_lambda(inp, lam))
  expect_equal(predict(m2, x, verbose = 0), lam(x), tolerance = 1e-7)
})

test_that("bad arguments are classed errors naming the function and argument", {
  expect_error(op_zeros(c(2, NA)), class = "mirrored_value_error", regexp = "shape")
  expect_error(op_zeros(-1), class = "mirrored_value_error", regexp = "shape")
  expect_error(op_ones(2, dtype = "float8"), class = "mirrored_value_error", regexp = "dtype")
  expect_error(op_full(c(2, 3), c(1, 2)), class = "mirrored_value_error", regexp = "fill_value")
  expect_error(op_arange(1, 5, 0), class = "mirrored_value_error", regexp = "step")
  expect_error(op_arange(NA), class = "mirrored_value_error")
  expect_error(op_linspace(0, 1, num = -1), class = "mirrored_value_error", regexp = "num")
  expect_error(op_eye(2.5), class = "mirrored_value_error", regexp = "N")
  expect_error(op_tril(1:3), class = "mirrored_value_error", regexp = "rank 2")
  expect_error(op_flip(1:3, axis = 0), class = "mirrored_value_error", regexp = "axis")
  expect_error(op_flip(1:3, axis = 2), class = "mirrored_value_error", regexp = "out of range")
  expect_error(op_roll(1:3, NA), class = "mirrored_value_error", regexp = "shift")
  expect_error(op_repeat(1:3, c(1, 2)), class = "mirrored_value_error", regexp = "repeats")
  expect_error(op_tile(1:3, -1), class = "mirrored_value_error", regexp = "repeats")
  expect_error(op_split(1:5, 2), class = "mirrored_value_error", regexp = "equal parts")
  expect_error(op_unstack(matrix(1:4, 2), num = 3), class = "mirrored_value_error", regexp = "num")
  expect_error(op_moveaxis(matrix(1:4, 2), 1, NA), class = "mirrored_value_error", regexp = "destination")
  expect_error(op_broadcast_to(1:3, c(2, 2)), class = "mirrored_value_error", regexp = "broadcast")
  expect_error(op_diagonal(1:3), class = "mirrored_value_error", regexp = "rank 2")
  expect_error(op_zeros_like("a"), class = "mirrored_value_error", regexp = "x")
})

test_that("%<-active% makes an active binding", {
  counter <- 0
  ticks %<-active% function(value) {
    if (missing(value)) counter <<- counter + 1 else counter <<- value
    counter
  }
  expect_equal(ticks, 1)
  expect_equal(ticks, 2)
  ticks <- 10
  expect_equal(counter, 10)
  expect_error(1 %<-active% function() 1, class = "mirrored_value_error")
  expect_error(z %<-active% 3, class = "mirrored_value_error")
})
